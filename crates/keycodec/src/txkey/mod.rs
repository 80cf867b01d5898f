//! FeatureBase's storage keys for roaring-bitmap containers, byte-exact.
//!
//! Two forms, each with the same set of functions:
//!
//! ```text
//! short: '~' field ';' view '<' BE64(ckey) '#'                          (≥ 14 bytes)
//! full:  '~' index '%' field ';' view ':' BE64(shard) '<' BE64(ckey) '#' (≥ 25 bytes)
//! ```
//!
//! A key's prefix is the key minus its last 9 bytes (it ends with `<`).
//! Keys that start with `>` instead of `~` are FeatureBase symlink keys; they
//! decode (see `is_symlink`) but are never built here.
//!
//! Unlike FeatureBase, names are checked: an index, field or view name must
//! be non-empty UTF-8 free of the reserved bytes `~ > ; : < # $ % ^ ( ) * !`,
//! and decoding any byte string returns a value or an [`Error`], never a
//! panic.

pub mod full;
pub mod short;

pub use crate::error::NamePart;
use crate::{error::Error, prefix::KeyRange, prefix::prefix_successor};

/// Bytes that may not appear in a name.
pub const RESERVED: &[u8] = b"~>;:<#$%^()*!";

/// `IS_RESERVED[b]` is true exactly for the bytes of [`RESERVED`].
static IS_RESERVED: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    while i < RESERVED.len() {
        table[RESERVED[i] as usize] = true;
        i += 1;
    }
    table
};

/// FeatureBase's shard width: 2^20 columns per shard.
pub const SHARD_WIDTH_EXP: u32 = 20;

/// A field and view, as FeatureBase's `FieldView`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldView {
    /// The field name.
    pub field: String,
    /// The view name.
    pub view: String,
}

/// Checks a name for building a key.
fn check_name(part: NamePart, name: &str) -> Result<(), Error> {
    check_name_bytes(part, name.as_bytes())
}

fn check_name_bytes(part: NamePart, name: &[u8]) -> Result<(), Error> {
    if name.is_empty() {
        return Err(Error::EmptyName { part });
    }
    match name.iter().position(|&b| IS_RESERVED[usize::from(b)]) {
        Some(position) => Err(Error::ReservedByte {
            part,
            byte: char::from(name[position]),
            position,
        }),
        None => Ok(()),
    }
}

/// Checks and borrows a name while decoding.
fn decode_name(part: NamePart, name: &[u8]) -> Result<&str, Error> {
    check_name_bytes(part, name)?;
    std::str::from_utf8(name).map_err(|_| Error::NameNotUtf8 { part })
}

fn expect(key: &[u8], position: usize, expected: u8) -> Result<(), Error> {
    let found = key.get(position).copied().unwrap_or_default();
    if found == expected {
        Ok(())
    } else {
        Err(Error::Marker {
            expected: char::from(expected),
            position,
            found,
        })
    }
}

fn expect_start(key: &[u8]) -> Result<bool, Error> {
    match key.first() {
        Some(b'~') => Ok(false),
        Some(b'>') => Ok(true),
        other => Err(Error::Marker {
            expected: '~',
            position: 0,
            found: other.copied().unwrap_or_default(),
        }),
    }
}

fn be64(bytes: &[u8], at: usize) -> u64 {
    bytes
        .get(at..at + 8)
        .and_then(|s| s.first_chunk::<8>())
        .map_or(0, |b| u64::from_be_bytes(*b))
}

/// Keys of one prefix whose container keys lie in `lo..=hi`; without
/// wrap-around at `u64::MAX`.
fn container_range(prefix: &[u8], lo: u64, hi: u64) -> KeyRange {
    let key = |ckey: u64| {
        let mut k = prefix.to_vec();
        k.extend_from_slice(&ckey.to_be_bytes());
        k.push(b'#');
        k
    };
    if lo > hi {
        return KeyRange {
            start: key(lo),
            end: Some(key(lo)),
        };
    }
    KeyRange {
        start: key(lo),
        end: match hi.checked_add(1) {
            Some(next) => Some(key(next)),
            None => prefix_successor(prefix),
        },
    }
}

/// Where a bit lives: its shard, its roaring container key, and the bit
/// within that container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BitPosition {
    /// `column >> 20`.
    pub shard: u64,
    /// `(row · 2^20 + column mod 2^20) >> 16`.
    pub ckey: u64,
    /// The low 16 bits of that position.
    pub bit: u16,
}

/// Maps a (row, column) bit to its shard, container key and bit.
///
/// # Errors
///
/// [`Error::PositionRange`] when `row · 2^20` does not fit in 64 bits.
pub fn bit_position(row: u64, column: u64) -> Result<BitPosition, Error> {
    let in_shard = column & ((1 << SHARD_WIDTH_EXP) - 1);
    let position = row
        .checked_mul(1 << SHARD_WIDTH_EXP)
        .ok_or(Error::PositionRange("row · 2^20 overflows 64 bits"))?
        | in_shard;
    Ok(BitPosition {
        shard: column >> SHARD_WIDTH_EXP,
        ckey: position >> 16,
        bit: (position & 0xffff) as u16,
    })
}

/// The inverse of [`bit_position`]: (row, column).
///
/// # Errors
///
/// [`Error::PositionRange`] when `ckey` has more than 48 bits or
/// `shard · 2^20` does not fit in 64 bits.
pub fn row_column(at: BitPosition) -> Result<(u64, u64), Error> {
    if at.ckey >> 48 != 0 {
        return Err(Error::PositionRange("container key has more than 48 bits"));
    }
    let position = (at.ckey << 16) | u64::from(at.bit);
    let column = at
        .shard
        .checked_mul(1 << SHARD_WIDTH_EXP)
        .ok_or(Error::PositionRange("shard · 2^20 overflows 64 bits"))?
        | (position & ((1 << SHARD_WIDTH_EXP) - 1));
    Ok((position >> SHARD_WIDTH_EXP, column))
}
