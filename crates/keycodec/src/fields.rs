//! Order-preserving fields after the prefix.
//!
//! Encodings, such that comparing encoded keys byte-wise compares the field
//! tuples:
//!
//! | field | encoding |
//! | --- | --- |
//! | `u8`/`u16`/`u32`/`u64` | big-endian, fixed width |
//! | `i64` | big-endian with the sign bit flipped |
//! | byte or UTF-8 string | `00→01 01`, `01→01 02`, `ff→01 03`, other bytes as they are, then a `00` terminator |
//! | tail bytes | raw, to the end of the key (last field only) |
//!
//! The terminator is the smallest byte and never occurs inside an encoded
//! string, so no encoding is a prefix of another and a shorter string sorts
//! before its extensions. Because `ff` is escaped (as OpenData does, so that
//! encoded strings never contain `ff`), byte strings compare in byte order
//! except where one has `ff` and the other a byte in `02..=fe` at the first
//! difference; UTF-8 never contains `ff`, so strings always keep their order.

use std::borrow::Cow;

use crate::{error::Error, prefix::KeyPrefix};

const TERMINATOR: u8 = 0x00;
const ESCAPE: u8 = 0x01;

/// Builds a key: a prefix, then fields in order.
///
/// ```
/// use keycodec::{KeyBuilder, KeyPrefix, KeyReader, RecordTag};
///
/// let prefix = KeyPrefix::new(RecordTag::new(0x3, 0).unwrap());
/// let key = KeyBuilder::new(prefix).str("did:web:example.com").u64(42).finish();
/// let mut r = KeyReader::new(&key).unwrap();
/// assert_eq!(r.prefix(), prefix);
/// assert_eq!(r.str().unwrap(), "did:web:example.com");
/// assert_eq!(r.u64().unwrap(), 42);
/// r.finish().unwrap();
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct KeyBuilder {
    buf: Vec<u8>,
}

impl KeyBuilder {
    /// Starts a key with `prefix`.
    pub fn new(prefix: KeyPrefix) -> Self {
        let mut buf = Vec::with_capacity(64);
        buf.extend_from_slice(&prefix.encode());
        Self { buf }
    }

    /// Appends a `u8`.
    pub fn u8(mut self, v: u8) -> Self {
        self.buf.push(v);
        self
    }

    /// Appends a big-endian `u16`.
    pub fn u16(mut self, v: u16) -> Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }

    /// Appends a big-endian `u32`.
    pub fn u32(mut self, v: u32) -> Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }

    /// Appends a big-endian `u64`.
    pub fn u64(mut self, v: u64) -> Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }

    /// Appends an `i64`, sign bit flipped so negatives sort first.
    pub fn i64(self, v: i64) -> Self {
        self.u64(v.cast_unsigned() ^ (1 << 63))
    }

    /// Appends an escaped, terminated byte string.
    pub fn bytes(mut self, v: &[u8]) -> Self {
        encode_terminated(&mut self.buf, v);
        self
    }

    /// Appends an escaped, terminated UTF-8 string.
    pub fn str(self, v: &str) -> Self {
        self.bytes(v.as_bytes())
    }

    /// Appends raw bytes that run to the end of the key; only for a last
    /// field whose values are self-delimiting (such as CIDs).
    pub fn tail(mut self, v: &[u8]) -> Self {
        self.buf.extend_from_slice(v);
        self
    }

    /// The key bytes so far, e.g. as a scan prefix.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// The finished key.
    #[must_use]
    pub fn finish(self) -> Vec<u8> {
        self.buf
    }
}

/// Appends the escaped, terminated encoding of `v` to `out`.
pub fn encode_terminated(out: &mut Vec<u8>, v: &[u8]) {
    out.reserve(v.len() + 1);
    let mut rest = v;
    while let Some(i) = rest.iter().position(|&b| b <= ESCAPE || b == 0xff) {
        out.extend_from_slice(&rest[..i]);
        out.extend_from_slice(&[
            ESCAPE,
            match rest[i] {
                0x00 => 0x01,
                0x01 => 0x02,
                _ => 0x03,
            },
        ]);
        rest = &rest[i + 1..];
    }
    out.extend_from_slice(rest);
    out.push(TERMINATOR);
}

/// Reads a key: the prefix, then fields in the order they were built.
///
/// Decoding borrows from the key and allocates only to unescape a string
/// that contains escaped bytes.
#[derive(Debug, Clone)]
pub struct KeyReader<'a> {
    key: &'a [u8],
    pos: usize,
    prefix: KeyPrefix,
}

impl<'a> KeyReader<'a> {
    /// Decodes the prefix of `key`.
    ///
    /// # Errors
    ///
    /// As [`KeyPrefix::decode`].
    pub fn new(key: &'a [u8]) -> Result<Self, Error> {
        let (prefix, _) = KeyPrefix::decode(key)?;
        Ok(Self {
            key,
            pos: 2,
            prefix,
        })
    }

    /// The key's prefix.
    #[must_use]
    pub fn prefix(&self) -> KeyPrefix {
        self.prefix
    }

    /// Byte offset of the next field.
    #[must_use]
    pub fn position(&self) -> usize {
        self.pos
    }

    fn fixed<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], Error> {
        let rest = self.key.get(self.pos..).unwrap_or_default();
        let Some(bytes) = rest.first_chunk::<N>() else {
            return Err(Error::Truncated {
                field,
                position: self.pos,
                needed: N,
                available: rest.len(),
            });
        };
        self.pos += N;
        Ok(*bytes)
    }

    /// Reads a `u8`.
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] at the end of the key.
    pub fn u8(&mut self) -> Result<u8, Error> {
        self.fixed::<1>("u8").map(|[b]| b)
    }

    /// Reads a big-endian `u16`.
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] when fewer than 2 bytes are left.
    pub fn u16(&mut self) -> Result<u16, Error> {
        self.fixed("u16").map(u16::from_be_bytes)
    }

    /// Reads a big-endian `u32`.
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] when fewer than 4 bytes are left.
    pub fn u32(&mut self) -> Result<u32, Error> {
        self.fixed("u32").map(u32::from_be_bytes)
    }

    /// Reads a big-endian `u64`.
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] when fewer than 8 bytes are left.
    pub fn u64(&mut self) -> Result<u64, Error> {
        self.fixed("u64").map(u64::from_be_bytes)
    }

    /// Reads a sign-flipped `i64`.
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] when fewer than 8 bytes are left.
    pub fn i64(&mut self) -> Result<i64, Error> {
        self.fixed("i64")
            .map(|b| (u64::from_be_bytes(b) ^ (1 << 63)).cast_signed())
    }

    /// Reads an escaped, terminated byte string.
    ///
    /// # Errors
    ///
    /// [`Error::Unterminated`] or [`Error::InvalidEscape`].
    pub fn bytes(&mut self) -> Result<Cow<'a, [u8]>, Error> {
        let start = self.pos;
        let rest = self.key.get(start..).unwrap_or_default();
        let end =
            memchr::memchr(TERMINATOR, rest).ok_or(Error::Unterminated { position: start })?;
        let raw = &rest[..end];
        self.pos = start + end + 1;
        // Branch-free, so it vectorizes: does anything need unescaping
        // (0x01), or is invalid unescaped (0xff)?
        let special = raw
            .iter()
            .fold(false, |acc, &b| acc | (b == ESCAPE) | (b == 0xff));
        if !special {
            return Ok(Cow::Borrowed(raw));
        }
        if let Some(i) = raw.iter().position(|&b| b == 0xff) {
            return Err(Error::InvalidEscape {
                position: start + i,
                byte: 0xff,
            });
        }
        let mut out = Vec::with_capacity(raw.len());
        let mut iter = raw.iter().enumerate();
        while let Some((i, &b)) = iter.next() {
            if b != ESCAPE {
                out.push(b);
                continue;
            }
            match iter.next() {
                Some((_, 0x01)) => out.push(0x00),
                Some((_, 0x02)) => out.push(0x01),
                Some((_, 0x03)) => out.push(0xff),
                Some((_, &other)) => {
                    return Err(Error::InvalidEscape {
                        position: start + i,
                        byte: other,
                    });
                }
                // The escape byte was last: its partner would have been
                // the terminator, which is not a valid escape.
                None => {
                    return Err(Error::InvalidEscape {
                        position: start + i,
                        byte: TERMINATOR,
                    });
                }
            }
        }
        Ok(Cow::Owned(out))
    }

    /// Reads an escaped, terminated UTF-8 string.
    ///
    /// # Errors
    ///
    /// As [`KeyReader::bytes`], or [`Error::InvalidUtf8`].
    pub fn str(&mut self) -> Result<Cow<'a, str>, Error> {
        let position = self.pos;
        match self.bytes()? {
            Cow::Borrowed(b) => std::str::from_utf8(b)
                .map(Cow::Borrowed)
                .map_err(|_| Error::InvalidUtf8 { position }),
            Cow::Owned(b) => String::from_utf8(b)
                .map(Cow::Owned)
                .map_err(|_| Error::InvalidUtf8 { position }),
        }
    }

    /// Reads the rest of the key as raw bytes.
    pub fn tail(&mut self) -> &'a [u8] {
        let rest = self.key.get(self.pos..).unwrap_or_default();
        self.pos = self.key.len();
        rest
    }

    /// Checks that every byte was read.
    ///
    /// # Errors
    ///
    /// [`Error::TrailingBytes`] otherwise.
    pub fn finish(self) -> Result<(), Error> {
        match self.key.len().saturating_sub(self.pos) {
            0 => Ok(()),
            count => Err(Error::TrailingBytes {
                count,
                position: self.pos,
            }),
        }
    }
}
