//! The 2-byte record key prefix (OpenData RFC 0001) and key ranges.
//!
//! ```text
//! byte 0: version (0x01)   byte 1: record tag = record type << 4 | reserved
//! ```

use crate::error::Error;

/// The key format version this build writes and reads.
pub const CURRENT_VERSION: u8 = 0x01;

/// The second prefix byte: a record type (high nibble, `0x1`–`0xF`) and 4
/// reserved bits (low nibble) whose meaning belongs to the record type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RecordTag(u8);

impl RecordTag {
    /// A tag from a record type (`1..=15`) and reserved bits (`0..=15`).
    ///
    /// # Errors
    ///
    /// [`Error::ReservedRecordType`] for type 0, [`Error::TagFieldRange`]
    /// for values that do not fit in 4 bits.
    pub const fn new(record_type: u8, reserved: u8) -> Result<Self, Error> {
        if record_type > 0xf {
            return Err(Error::TagFieldRange {
                what: "record type",
                value: record_type,
            });
        }
        if reserved > 0xf {
            return Err(Error::TagFieldRange {
                what: "reserved bits",
                value: reserved,
            });
        }
        Self::from_byte((record_type << 4) | reserved)
    }

    /// Interprets a tag byte.
    ///
    /// # Errors
    ///
    /// [`Error::ReservedRecordType`] when the high nibble is 0.
    pub const fn from_byte(tag: u8) -> Result<Self, Error> {
        if tag >> 4 == 0 {
            return Err(Error::ReservedRecordType { tag });
        }
        Ok(Self(tag))
    }

    /// The record type (high nibble).
    #[must_use]
    pub const fn record_type(self) -> u8 {
        self.0 >> 4
    }

    /// The reserved bits (low nibble).
    #[must_use]
    pub const fn reserved(self) -> u8 {
        self.0 & 0xf
    }

    /// The tag byte.
    #[must_use]
    pub const fn byte(self) -> u8 {
        self.0
    }
}

/// The 2-byte prefix of every key: `[version, record_tag]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KeyPrefix {
    /// Always [`CURRENT_VERSION`] for a decoded or constructed prefix.
    version: u8,
    tag: RecordTag,
}

impl KeyPrefix {
    /// The current-version prefix for `tag`.
    #[must_use]
    pub const fn new(tag: RecordTag) -> Self {
        Self {
            version: CURRENT_VERSION,
            tag,
        }
    }

    /// The version byte.
    #[must_use]
    pub const fn version(self) -> u8 {
        self.version
    }

    /// The record tag.
    #[must_use]
    pub const fn tag(self) -> RecordTag {
        self.tag
    }

    /// The two prefix bytes.
    #[must_use]
    pub const fn encode(self) -> [u8; 2] {
        [self.version, self.tag.0]
    }

    /// Decodes the prefix at the start of `key`, returning the rest.
    ///
    /// # Errors
    ///
    /// [`Error::TooShort`], [`Error::ReservedVersion`],
    /// [`Error::UnknownVersion`] or [`Error::ReservedRecordType`].
    pub fn decode(key: &[u8]) -> Result<(Self, &[u8]), Error> {
        let [version, tag, rest @ ..] = key else {
            return Err(Error::TooShort {
                len: key.len(),
                min: 2,
                layout: "record key prefix",
            });
        };
        match *version {
            0 => Err(Error::ReservedVersion),
            CURRENT_VERSION => Ok((Self::new(RecordTag::from_byte(*tag)?), rest)),
            v => Err(Error::UnknownVersion(v)),
        }
    }

    /// All keys of this prefix's record type, whatever their reserved bits.
    #[must_use]
    pub fn record_type_range(self) -> KeyRange {
        let first = self.tag.0 & 0xf0;
        KeyRange::prefix(&[self.version, first]).with_end(
            // The last type (0xF) ends where the next version would begin.
            prefix_successor(&[self.version, first | 0x0f]),
        )
    }

    /// All keys that start with exactly these two bytes.
    #[must_use]
    pub fn range(self) -> KeyRange {
        KeyRange::prefix(&self.encode())
    }
}

/// A half-open range of keys `[start, end)`; `end == None` means unbounded.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KeyRange {
    /// Inclusive lower bound.
    pub start: Vec<u8>,
    /// Exclusive upper bound; `None` when no key bounds the range.
    pub end: Option<Vec<u8>>,
}

impl KeyRange {
    /// Every key that starts with `prefix`: `[prefix, successor(prefix))`.
    #[must_use]
    pub fn prefix(prefix: &[u8]) -> Self {
        Self {
            start: prefix.to_vec(),
            end: prefix_successor(prefix),
        }
    }

    fn with_end(mut self, end: Option<Vec<u8>>) -> Self {
        self.end = end;
        self
    }

    /// Whether `key` lies in the range.
    #[must_use]
    pub fn contains(&self, key: &[u8]) -> bool {
        key >= self.start.as_slice() && self.end.as_deref().is_none_or(|end| key < end)
    }
}

/// The smallest byte string greater than every string that starts with
/// `prefix`: drop trailing `0xff` bytes, then increment the last byte.
/// `None` when `prefix` is empty or all `0xff` (no such string exists).
#[must_use]
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let last = prefix.iter().rposition(|&b| b != 0xff)?;
    let mut out = prefix[..=last].to_vec();
    out[last] += 1;
    Some(out)
}
