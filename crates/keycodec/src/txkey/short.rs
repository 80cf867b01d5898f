//! The short form: `'~' field ';' view '<' BE64(ckey) '#'`.
//!
//! The index and shard are implied by the database holding the key.

use std::fmt;

use super::{FieldView, be64, check_name, decode_name, expect, expect_start};
use crate::{
    error::{Error, NamePart},
    prefix::KeyRange,
};

/// Shortest short key: `~f;v<` + 8 bytes + `#`.
pub const MIN_KEY_LEN: usize = 14;
/// Shortest short prefix: `~f;v<`.
pub const MIN_PREFIX_LEN: usize = 5;

/// A decoded short key, borrowing its names from the key bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key<'a> {
    /// The field name.
    pub field: &'a str,
    /// The view name.
    pub view: &'a str,
    /// The roaring container key.
    pub ckey: u64,
    /// Whether the key starts with `>` (a FeatureBase symlink key).
    pub is_symlink: bool,
}

/// A decoded short prefix (`~field;view<`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Prefix<'a> {
    /// The field name.
    pub field: &'a str,
    /// The view name.
    pub view: &'a str,
}

impl<'a> Key<'a> {
    /// Parses and checks a whole key.
    ///
    /// # Errors
    ///
    /// [`Error::TooShort`], [`Error::Marker`], [`Error::MissingSeparator`],
    /// or a name error.
    pub fn parse(key: &'a [u8]) -> Result<Self, Error> {
        validate_key(key)?;
        let n = key.len();
        let prefix = Prefix::parse(&key[..n - 9])?;
        Ok(Self {
            field: prefix.field,
            view: prefix.view,
            ckey: be64(key, n - 9),
            is_symlink: key[0] == b'>',
        })
    }

    /// The field and view.
    #[must_use]
    pub fn field_view(&self) -> FieldView {
        FieldView {
            field: self.field.to_owned(),
            view: self.view.to_owned(),
        }
    }
}

impl<'a> Prefix<'a> {
    /// Parses and checks a prefix.
    ///
    /// # Errors
    ///
    /// As [`Key::parse`].
    pub fn parse(prefix: &'a [u8]) -> Result<Self, Error> {
        let n = prefix.len();
        if n < MIN_PREFIX_LEN {
            return Err(Error::TooShort {
                len: n,
                min: MIN_PREFIX_LEN,
                layout: "short txkey prefix",
            });
        }
        expect_start(prefix)?;
        expect(prefix, n - 1, b'<')?;
        let names = &prefix[1..n - 1];
        let semi = names
            .iter()
            .position(|&b| b == b';')
            .ok_or(Error::MissingSeparator { expected: ';' })?;
        Ok(Self {
            field: decode_name(NamePart::Field, &names[..semi])?,
            view: decode_name(NamePart::View, &names[semi + 1..])?,
        })
    }

    /// The field and view.
    #[must_use]
    pub fn field_view(&self) -> FieldView {
        FieldView {
            field: self.field.to_owned(),
            view: self.view.to_owned(),
        }
    }
}

/// FeatureBase's text form: `fld:'f';vw:'v';ckey@00000000000000000042`.
impl fmt::Display for Key<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "fld:'{}';vw:'{}';ckey@{:020}",
            self.field, self.view, self.ckey
        )
    }
}

/// FeatureBase's text form: `fld:'f';vw:'v';`.
impl fmt::Display for Prefix<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "fld:'{}';vw:'{}';", self.field, self.view)
    }
}

/// The key for a container: `~field;view<ckey#`.
///
/// # Errors
///
/// [`Error::EmptyName`] or [`Error::ReservedByte`] for a bad name.
pub fn key(field: &str, view: &str, ckey: u64) -> Result<Vec<u8>, Error> {
    let mut k = prefix(field, view)?;
    k.extend_from_slice(&ckey.to_be_bytes());
    k.push(b'#');
    Ok(k)
}

/// The key and its prefix together.
///
/// # Errors
///
/// As [`key`].
pub fn key_and_prefix(field: &str, view: &str, ckey: u64) -> Result<(Vec<u8>, Vec<u8>), Error> {
    let k = key(field, view, ckey)?;
    let p = k[..k.len() - 9].to_vec();
    Ok((k, p))
}

/// Everything up to and including `<`: `~field;view<`.
///
/// # Errors
///
/// As [`key`].
pub fn prefix(field: &str, view: &str) -> Result<Vec<u8>, Error> {
    check_name(NamePart::Field, field)?;
    check_name(NamePart::View, view)?;
    let mut p = Vec::with_capacity(field.len() + view.len() + 3 + 9);
    p.push(b'~');
    p.extend_from_slice(field.as_bytes());
    p.push(b';');
    p.extend_from_slice(view.as_bytes());
    p.push(b'<');
    Ok(p)
}

/// The prefix of every shard of a view; in the short form (one shard per
/// database) this equals [`prefix`].
///
/// # Errors
///
/// As [`key`].
pub fn all_shard_prefix(field: &str, view: &str) -> Result<Vec<u8>, Error> {
    prefix(field, view)
}

/// The prefix of every key of a field: `~field;`.
///
/// # Errors
///
/// As [`key`].
pub fn field_prefix(field: &str) -> Result<Vec<u8>, Error> {
    check_name(NamePart::Field, field)?;
    let mut p = Vec::with_capacity(field.len() + 2);
    p.push(b'~');
    p.extend_from_slice(field.as_bytes());
    p.push(b';');
    Ok(p)
}

/// The prefix of every key in the database: `~` (one index per database).
#[must_use]
pub fn index_only_prefix() -> &'static [u8] {
    b"~"
}

/// Checks a key's structure and names.
///
/// # Errors
///
/// As [`Key::parse`].
pub fn validate_key(key: &[u8]) -> Result<(), Error> {
    let n = key.len();
    if n < MIN_KEY_LEN {
        return Err(Error::TooShort {
            len: n,
            min: MIN_KEY_LEN,
            layout: "short txkey",
        });
    }
    expect_start(key)?;
    expect(key, n - 10, b'<')?;
    expect(key, n - 1, b'#')?;
    Prefix::parse(&key[..n - 9]).map(|_| ())
}

/// The container key of a key.
///
/// # Errors
///
/// As [`Key::parse`].
pub fn extract_container_key(key: &[u8]) -> Result<u64, Error> {
    Key::parse(key).map(|k| k.ckey)
}

/// A key's prefix: the key minus its last 9 bytes.
///
/// # Errors
///
/// As [`Key::parse`].
pub fn prefix_from_key(key: &[u8]) -> Result<&[u8], Error> {
    validate_key(key)?;
    Ok(&key[..key.len() - 9])
}

/// (field, view, ckey) of a key.
///
/// # Errors
///
/// As [`Key::parse`].
pub fn split(key: &[u8]) -> Result<(&str, &str, u64), Error> {
    Key::parse(key).map(|k| (k.field, k.view, k.ckey))
}

/// (field, view) of a prefix.
///
/// # Errors
///
/// As [`Prefix::parse`].
pub fn split_prefix(prefix: &[u8]) -> Result<(&str, &str), Error> {
    Prefix::parse(prefix).map(|p| (p.field, p.view))
}

/// All keys of one fragment (field and view).
///
/// # Errors
///
/// As [`key`].
pub fn fragment_range(field: &str, view: &str) -> Result<KeyRange, Error> {
    prefix(field, view).map(|p| KeyRange::prefix(&p))
}

/// All keys of one field.
///
/// # Errors
///
/// As [`key`].
pub fn field_range(field: &str) -> Result<KeyRange, Error> {
    field_prefix(field).map(|p| KeyRange::prefix(&p))
}

/// All keys of the database's index.
#[must_use]
pub fn index_range() -> KeyRange {
    KeyRange::prefix(index_only_prefix())
}

/// Keys of one fragment whose container keys lie in `lo..=hi` (empty when
/// `lo > hi`), correct at `u64::MAX`.
///
/// # Errors
///
/// As [`key`].
pub fn container_range(field: &str, view: &str, lo: u64, hi: u64) -> Result<KeyRange, Error> {
    prefix(field, view).map(|p| super::container_range(&p, lo, hi))
}
