//! [`RecordKey`]: the name of a record within a collection.

use std::{borrow::Borrow, fmt, str::FromStr};

use crate::error::{Error, char_at};

/// Longest record key, in bytes (= characters, since all are ASCII).
pub const MAX_RECORD_KEY_LEN: usize = 512;

/// `ALLOWED[b]` is true exactly for the bytes of `A-Za-z0-9._:~-`.
static ALLOWED: [bool; 256] = crate::ascii_alphanumeric_and(b".-_:~");

/// Checks that `s` is a valid record key, without allocating.
///
/// Valid exactly when `s` matches `^[A-Za-z0-9._:~-]{1,512}$` and is neither
/// `.` nor `..`. Nothing is trimmed: a trailing newline makes a key invalid.
///
/// # Errors
///
/// The first rule `s` breaks: empty, too long, a disallowed character (with
/// its position), or `.`/`..`.
///
/// # Examples
///
/// ```
/// assert!(rkey::validate_record_key("3jui7kd54zh2y").is_ok());
/// assert!(rkey::validate_record_key("any space").is_err());
/// ```
#[inline]
pub fn validate_record_key(s: &str) -> Result<(), Error> {
    let bytes = s.as_bytes();
    if bytes.is_empty() {
        return Err(Error::EmptyRecordKey);
    }
    if bytes.len() > MAX_RECORD_KEY_LEN {
        return Err(Error::RecordKeyTooLong { len: bytes.len() });
    }
    // Branch-free scan of the whole key; the slow path finds the culprit.
    let all_allowed = bytes
        .iter()
        .fold(true, |ok, &b| ok & ALLOWED[usize::from(b)]);
    if !all_allowed {
        return Err(disallowed_char(s));
    }
    if bytes.len() <= 2 && bytes.iter().all(|&b| b == b'.') {
        return Err(Error::RecordKeyDots(if bytes.len() == 1 {
            "."
        } else {
            ".."
        }));
    }
    Ok(())
}

#[cold]
fn disallowed_char(s: &str) -> Error {
    let position = s
        .bytes()
        .position(|b| !ALLOWED[usize::from(b)])
        .unwrap_or_default();
    Error::RecordKeyChar {
        ch: char_at(s, position),
        position,
    }
}

/// A valid record key (rkey): the name of a record within its collection.
///
/// The invariant (checked by every constructor, including deserialization)
/// is that of [`validate_record_key`]. Ordering is byte order, which for
/// these ASCII strings is also character order.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RecordKey(String);

impl RecordKey {
    /// Validates `s` and wraps it.
    ///
    /// # Errors
    ///
    /// As [`validate_record_key`].
    pub fn new(s: impl Into<String>) -> Result<Self, Error> {
        let s = s.into();
        validate_record_key(&s)?;
        Ok(Self(s))
    }

    /// The key as a string slice.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Unwraps the key into its string.
    #[must_use]
    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for RecordKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for RecordKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RecordKey({:?})", self.0)
    }
}

impl FromStr for RecordKey {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        Self::new(s)
    }
}

impl TryFrom<&str> for RecordKey {
    type Error = Error;
    fn try_from(s: &str) -> Result<Self, Error> {
        Self::new(s)
    }
}

impl TryFrom<String> for RecordKey {
    type Error = Error;
    fn try_from(s: String) -> Result<Self, Error> {
        Self::new(s)
    }
}

impl AsRef<str> for RecordKey {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for RecordKey {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<RecordKey> for String {
    fn from(key: RecordKey) -> Self {
        key.0
    }
}

impl serde::Serialize for RecordKey {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for RecordKey {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        Self::new(s).map_err(serde::de::Error::custom)
    }
}
