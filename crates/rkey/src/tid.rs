//! [`Tid`]: timestamp identifiers.
//!
//! A TID is a `u64`: the top bit is zero for every TID a generator makes,
//! the next 53 bits are microseconds since the Unix epoch and the low 10
//! bits are a clock id. It is written as 13 characters of base32-sortable
//! (`234567abcdefghijklmnopqrstuvwxyz`), most significant first, so string
//! order equals numeric order. The first character carries only the top 4
//! bits (13 × 5 = 65 > 64), hence its narrower alphabet `234567a-j`.

use std::{fmt, str::FromStr};

use crate::error::{Error, char_at};

/// Length of a TID string.
pub const TID_LEN: usize = 13;
/// Largest timestamp a TID can carry (2^53 − 1 µs, in the year 2255).
pub const MAX_TID_MICROS: u64 = (1 << 53) - 1;
/// Largest clock id (10 bits).
pub const MAX_CLOCK_ID: u16 = 0x3ff;

const ALPHABET: &[u8; 32] = b"234567abcdefghijklmnopqrstuvwxyz";
const FIRST_ALLOWED: &str = "2-7 a-j";
const REST_ALLOWED: &str = "2-7 a-z";
const INVALID: u8 = 0xff;

/// `DIGIT[b]` is the base32-sortable value of byte `b`, or `INVALID`.
static DIGIT: [u8; 256] = {
    let mut table = [INVALID; 256];
    let mut i = 0;
    while i < 32 {
        table[ALPHABET[i] as usize] = i as u8;
        i += 1;
    }
    table
};

/// A timestamp identifier. Ordering is numeric, which equals string order.
///
/// Every `u64` is a TID that parses and prints; a generator never sets the
/// top bit (see [`Tid::top_bit_set`]), but a parser accepts it, as AT
/// Protocol's does, so that such TIDs made elsewhere interoperate.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Tid(u64);

impl Tid {
    /// The smallest TID, `2222222222222`.
    pub const MIN: Self = Self(0);

    /// Wraps a raw value.
    #[must_use]
    pub const fn from_u64(value: u64) -> Self {
        Self(value)
    }

    /// The raw value.
    #[must_use]
    pub const fn as_u64(self) -> u64 {
        self.0
    }

    /// Builds a TID from its timestamp and clock id.
    ///
    /// # Errors
    ///
    /// [`Error::TidTimestampRange`] if `micros` exceeds [`MAX_TID_MICROS`],
    /// [`Error::TidClockIdRange`] if `clock_id` exceeds [`MAX_CLOCK_ID`].
    pub fn from_parts(micros: u64, clock_id: u64) -> Result<Self, Error> {
        if micros > MAX_TID_MICROS {
            return Err(Error::TidTimestampRange { micros });
        }
        if clock_id > u64::from(MAX_CLOCK_ID) {
            return Err(Error::TidClockIdRange { clock_id });
        }
        Ok(Self((micros << 10) | clock_id))
    }

    /// Microseconds since the Unix epoch (bits 62–10; includes the top bit
    /// when it is set, so that it is always `value >> 10`).
    #[must_use]
    pub const fn timestamp_micros(self) -> u64 {
        self.0 >> 10
    }

    /// The clock id (low 10 bits).
    #[must_use]
    pub const fn clock_id(self) -> u16 {
        (self.0 & 0x3ff) as u16
    }

    /// Whether the top bit is set. The TID specification says it is always
    /// zero; such a TID parses (first character `c`–`j`) but is never made
    /// by [`crate::tid_generator::TidGenerator`].
    #[must_use]
    pub const fn top_bit_set(self) -> bool {
        self.0 >> 63 == 1
    }

    /// Parses the 13-character form.
    ///
    /// # Errors
    ///
    /// [`Error::TidLength`] unless the input is 13 bytes,
    /// [`Error::TidChar`] for the first character outside the alphabet
    /// (uppercase and `-` included).
    #[inline]
    pub fn parse(s: &str) -> Result<Self, Error> {
        let bytes = s.as_bytes();
        let Ok(bytes) = <&[u8; TID_LEN]>::try_from(bytes) else {
            return Err(Error::TidLength { len: bytes.len() });
        };
        let digits: [u8; TID_LEN] = std::array::from_fn(|i| DIGIT[usize::from(bytes[i])]);
        // Valid digits are < 32 (< 16 for the first); INVALID has high bits.
        let any_digit = digits.iter().fold(0, |acc, &d| acc | d);
        if (any_digit & 0xe0) | (digits[0] & 0x10) != 0 {
            return Err(Self::char_error(s, bytes));
        }
        // Independent shifts, so the CPU combines them in parallel.
        let value = digits.iter().enumerate().fold(0u64, |acc, (i, &d)| {
            acc | (u64::from(d) << (5 * (TID_LEN - 1 - i)))
        });
        Ok(Self(value))
    }

    #[cold]
    fn char_error(s: &str, bytes: &[u8; TID_LEN]) -> Error {
        let position = bytes
            .iter()
            .enumerate()
            .position(|(i, &b)| {
                let d = DIGIT[usize::from(b)];
                d == INVALID || (i == 0 && d >= 16)
            })
            .unwrap_or(0);
        Error::TidChar {
            ch: char_at(s, position),
            position,
            allowed: if position == 0 {
                FIRST_ALLOWED
            } else {
                REST_ALLOWED
            },
        }
    }

    /// The 13-character form, without allocating.
    #[must_use]
    pub fn encode(self) -> [u8; TID_LEN] {
        let mut out = [0u8; TID_LEN];
        for (i, slot) in out.iter_mut().enumerate() {
            let shift = 5 * (TID_LEN - 1 - i);
            *slot = ALPHABET[((self.0 >> shift) & 0x1f) as usize];
        }
        out
    }
}

impl fmt::Display for Tid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bytes = self.encode();
        // The alphabet is ASCII, so this never fails.
        f.write_str(std::str::from_utf8(&bytes).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for Tid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tid({self})")
    }
}

impl FromStr for Tid {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        Self::parse(s)
    }
}

impl TryFrom<&str> for Tid {
    type Error = Error;
    fn try_from(s: &str) -> Result<Self, Error> {
        Self::parse(s)
    }
}

impl serde::Serialize for Tid {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let bytes = self.encode();
        serializer.serialize_str(std::str::from_utf8(&bytes).map_err(serde::ser::Error::custom)?)
    }
}

impl<'de> serde::Deserialize<'de> for Tid {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Tid;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a 13-character TID string")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Tid, E> {
                Tid::parse(s).map_err(E::custom)
            }
        }
        deserializer.deserialize_str(Visitor)
    }
}
