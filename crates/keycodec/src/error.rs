//! The one error type of this crate.

use std::fmt;

/// Everything that can be wrong with a key being built or decoded.
///
/// Positions are byte offsets into the key (or, for names, into the name).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The key is shorter than its layout allows.
    #[error("key too short: {len} bytes, the {layout} layout needs at least {min}")]
    TooShort {
        /// The key's length.
        len: usize,
        /// The smallest valid length.
        min: usize,
        /// Which layout was expected.
        layout: &'static str,
    },
    /// Version byte `0x00`, which is reserved and never valid.
    #[error("key version 0x00 is reserved and invalid")]
    ReservedVersion,
    /// A version this build does not know; it is reported, never guessed at.
    #[error("unknown key version 0x{0:02x} (this build reads version 0x01)")]
    UnknownVersion(u8),
    /// Record type `0x0` (the tag's high nibble), which is reserved.
    #[error("record type 0x0 is reserved and invalid (record tag 0x{tag:02x})")]
    ReservedRecordType {
        /// The whole tag byte.
        tag: u8,
    },
    /// A record type or reserved value outside its 4-bit range.
    #[error("record tag field out of range: {what} = {value} (0 to 15 allowed)")]
    TagFieldRange {
        /// `record type` or `reserved bits`.
        what: &'static str,
        /// The value given.
        value: u8,
    },
    /// A record type datarepo does not define.
    #[error("unknown datarepo record type 0x{record_type:x} (record tag 0x{tag:02x})")]
    UnknownRecordType {
        /// The record type nibble.
        record_type: u8,
        /// The whole tag byte.
        tag: u8,
    },
    /// Reserved bits that datarepo's record types never set (they write 0).
    #[error("record tag 0x{tag:02x} has reserved bits 0x{reserved:x} set; datarepo writes 0")]
    ReservedBits {
        /// The whole tag byte.
        tag: u8,
        /// The low nibble.
        reserved: u8,
    },
    /// A fixed-width field runs past the end of the key.
    #[error("truncated {field} field at byte {position}: needs {needed} bytes, {available} left")]
    Truncated {
        /// The field type (`u64`, `bytes`, …).
        field: &'static str,
        /// Where the field starts.
        position: usize,
        /// Bytes the field needs.
        needed: usize,
        /// Bytes left in the key.
        available: usize,
    },
    /// A terminated byte string ends without its `0x00` terminator.
    #[error("unterminated byte string starting at byte {position}")]
    Unterminated {
        /// Where the string starts.
        position: usize,
    },
    /// `0x01` followed by something other than `0x01`, `0x02`, `0x03`, or `0xff` unescaped.
    #[error("invalid escape sequence at byte {position}: 0x01 0x{byte:02x}")]
    InvalidEscape {
        /// Where the escape starts.
        position: usize,
        /// The byte after `0x01` (or `0xff` itself when unescaped).
        byte: u8,
    },
    /// A string field is not UTF-8.
    #[error("string field starting at byte {position} is not valid UTF-8")]
    InvalidUtf8 {
        /// Where the string starts.
        position: usize,
    },
    /// Bytes left over after the last field of a layout.
    #[error("{count} unexpected bytes after the last field, at byte {position}")]
    TrailingBytes {
        /// How many.
        count: usize,
        /// Where they start.
        position: usize,
    },
    /// A txkey name (index, field or view) is empty.
    #[error("txkey {part} name is empty")]
    EmptyName {
        /// Which name.
        part: NamePart,
    },
    /// A txkey name contains one of `~ > ; : < # $ % ^ ( ) * !`.
    #[error("txkey {part} name contains the reserved byte {byte:?} at position {position}")]
    ReservedByte {
        /// Which name.
        part: NamePart,
        /// The reserved byte, as a character.
        byte: char,
        /// Its offset within the name.
        position: usize,
    },
    /// A txkey name is not UTF-8.
    #[error("txkey {part} name is not valid UTF-8")]
    NameNotUtf8 {
        /// Which name.
        part: NamePart,
    },
    /// A txkey lacks a structural byte where its layout puts one.
    #[error("txkey malformed: expected {expected:?} at byte {position}, found 0x{found:02x}")]
    Marker {
        /// The structural byte expected.
        expected: char,
        /// Where.
        position: usize,
        /// What was there.
        found: u8,
    },
    /// A txkey lacks a separator between names.
    #[error("txkey malformed: no {expected:?} separator in the names")]
    MissingSeparator {
        /// The separator.
        expected: char,
    },
    /// A bit position does not fit in 64 bits.
    #[error("bit position out of range: {0}")]
    PositionRange(&'static str),
}

/// Which name of a txkey.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamePart {
    /// The index name (full form only).
    Index,
    /// The field name.
    Field,
    /// The view name.
    View,
}

impl fmt::Display for NamePart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Index => "index",
            Self::Field => "field",
            Self::View => "view",
        })
    }
}
