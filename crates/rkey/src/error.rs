//! The one error type of this crate.

/// Everything that can be wrong with a record key, key type, NSID or TID.
///
/// Positions are byte offsets into the input, which for any input that got
/// as far as the offending character is also its character index (all
/// valid characters are ASCII).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A DID breaks DID syntax.
    #[error("invalid DID: {reason}")]
    InvalidDid {
        /// The rule broken.
        reason: &'static str,
    },
    /// A handle breaks handle syntax.
    #[error("invalid handle: {reason}")]
    InvalidHandle {
        /// The rule broken.
        reason: &'static str,
    },

    /// A record key was empty.
    #[error("record key is empty (it must be 1 to 512 characters)")]
    EmptyRecordKey,
    /// A record key was longer than 512 bytes.
    #[error("record key is {len} bytes long (at most 512 characters are allowed)")]
    RecordKeyTooLong {
        /// Length of the input in bytes.
        len: usize,
    },
    /// A record key contained a character outside `A-Za-z0-9._:~-`.
    #[error(
        "record key has the disallowed character {ch:?} at position {position} \
         (allowed: A-Z a-z 0-9 . - _ : ~)"
    )]
    RecordKeyChar {
        /// The offending character.
        ch: char,
        /// Its byte offset in the input.
        position: usize,
    },
    /// A record key was `.` or `..`.
    #[error("record key can not be {0:?}")]
    RecordKeyDots(&'static str),

    /// A TID was not exactly 13 bytes long.
    #[error("TID is {len} bytes long (it must be exactly 13 characters)")]
    TidLength {
        /// Length of the input in bytes.
        len: usize,
    },
    /// A TID contained a character outside its alphabet.
    #[error(
        "TID has the disallowed character {ch:?} at position {position} \
         (allowed: {allowed})"
    )]
    TidChar {
        /// The offending character.
        ch: char,
        /// Its byte offset in the input.
        position: usize,
        /// The characters allowed at that position.
        allowed: &'static str,
    },
    /// A TID timestamp does not fit in 53 bits.
    #[error("TID timestamp {micros} µs is out of range (at most 2^53 - 1)")]
    TidTimestampRange {
        /// The timestamp given, in microseconds since the Unix epoch.
        micros: u64,
    },
    /// A TID clock id does not fit in 10 bits.
    #[error("TID clock id {clock_id} is out of range (0 to 1023)")]
    TidClockIdRange {
        /// The clock id given.
        clock_id: u64,
    },
    /// A TID generator cannot go on: its next TID would need a timestamp of
    /// 2^53 µs or more (the clock or a resumed TID is beyond the year 2255).
    #[error("TID generator exhausted: the next timestamp would not fit in 53 bits")]
    TidExhausted,

    /// An NSID was not valid.
    #[error("invalid NSID: {reason}")]
    Nsid {
        /// What rule the input broke.
        reason: NsidRule,
        /// Byte offset of the offending segment or character, when there is one.
        position: Option<usize>,
    },

    /// A key type string was not one of `tid`, `literal:<key>`, `any`, `nsid`.
    #[error("invalid key type {input:?}: {reason}")]
    KeyType {
        /// The string given.
        input: String,
        /// Why it was rejected.
        reason: String,
    },
    /// A record key does not fit a collection's key type.
    #[error("record key {key:?} does not fit key type `{key_type}`: {reason}")]
    KeyTypeMismatch {
        /// The record key.
        key: String,
        /// The key type, as its schema string.
        key_type: String,
        /// Why it does not fit.
        reason: String,
    },
}

/// Which NSID rule an input broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NsidRule {
    /// Longer than 317 characters.
    TooLong,
    /// A character other than ASCII letters, digits, `-` and `.`.
    Char,
    /// Fewer than three dot-separated segments.
    TooFewSegments,
    /// An empty segment.
    EmptySegment,
    /// A segment longer than 63 characters.
    SegmentTooLong,
    /// A segment that starts or ends with `-`.
    Hyphen,
    /// The first segment starts with a digit.
    LeadingDigit,
    /// The last (name) segment has a `-` or starts with a digit.
    Name,
}

impl std::fmt::Display for NsidRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::TooLong => "longer than 317 characters",
            Self::Char => "only ASCII letters, digits, '-' and '.' are allowed",
            Self::TooFewSegments => "it needs at least three dot-separated segments",
            Self::EmptySegment => "segments can not be empty",
            Self::SegmentTooLong => "a segment is longer than 63 characters",
            Self::Hyphen => "segments can not start or end with '-'",
            Self::LeadingDigit => "the first segment can not start with a digit",
            Self::Name => {
                "the name (last segment) must be letters and digits, not starting with a digit"
            }
        })
    }
}

/// First character of `s` at byte offset `pos`, for error messages.
pub(crate) fn char_at(s: &str, pos: usize) -> char {
    s.get(pos..)
        .and_then(|rest| rest.chars().next())
        .unwrap_or(char::REPLACEMENT_CHARACTER)
}
