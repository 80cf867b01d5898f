//! The full form: `'~' index '%' field ';' view ':' BE64(shard) '<' BE64(ckey) '#'`.

use std::fmt;

use super::{FieldView, be64, check_name, decode_name, expect, expect_start};
use crate::{
    error::{Error, NamePart},
    prefix::KeyRange,
};

/// Shortest full key: `~i%f;v:` + 8 bytes + `<` + 8 bytes + `#`.
pub const MIN_KEY_LEN: usize = 25;
/// Shortest full prefix: `~i%f;v:` + 8 bytes + `<`.
pub const MIN_PREFIX_LEN: usize = 16;

/// A decoded full key, borrowing its names from the key bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key<'a> {
    /// The index name.
    pub index: &'a str,
    /// The field name.
    pub field: &'a str,
    /// The view name.
    pub view: &'a str,
    /// The shard.
    pub shard: u64,
    /// The roaring container key.
    pub ckey: u64,
    /// Whether the key starts with `>` (a FeatureBase symlink key).
    pub is_symlink: bool,
}

/// A decoded full prefix (`~index%field;view:shard<`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Prefix<'a> {
    /// The index name.
    pub index: &'a str,
    /// The field name.
    pub field: &'a str,
    /// The view name.
    pub view: &'a str,
    /// The shard.
    pub shard: u64,
}

impl<'a> Key<'a> {
    /// Parses and checks a whole key.
    ///
    /// # Errors
    ///
    /// [`Error::TooShort`], [`Error::Marker`], [`Error::MissingSeparator`],
    /// or a name error.
    pub fn parse(key: &'a [u8]) -> Result<Self, Error> {
        let n = key.len();
        if n < MIN_KEY_LEN {
            return Err(Error::TooShort {
                len: n,
                min: MIN_KEY_LEN,
                layout: "full txkey",
            });
        }
        expect(key, n - 1, b'#')?;
        let p = Prefix::parse(&key[..n - 9])?;
        Ok(Self {
            index: p.index,
            field: p.field,
            view: p.view,
            shard: p.shard,
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
                layout: "full txkey prefix",
            });
        }
        expect_start(prefix)?;
        expect(prefix, n - 1, b'<')?;
        expect(prefix, n - 10, b':')?;
        let names = &prefix[1..n - 10];
        let pct = names
            .iter()
            .position(|&b| b == b'%')
            .ok_or(Error::MissingSeparator { expected: '%' })?;
        let index = decode_name(NamePart::Index, &names[..pct])?;
        let rest = &names[pct + 1..];
        let semi = rest
            .iter()
            .position(|&b| b == b';')
            .ok_or(Error::MissingSeparator { expected: ';' })?;
        Ok(Self {
            index,
            field: decode_name(NamePart::Field, &rest[..semi])?,
            view: decode_name(NamePart::View, &rest[semi + 1..])?,
            shard: be64(prefix, n - 9),
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

/// FeatureBase's text form:
/// `idx:'i';fld:'f';vw:'v';shd:'00000000000000000003';ckey@00000000000000000042`.
impl fmt::Display for Key<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "idx:'{}';fld:'{}';vw:'{}';shd:'{:020}';ckey@{:020}",
            self.index, self.field, self.view, self.shard, self.ckey
        )
    }
}

/// FeatureBase's text form: `idx:'i';fld:'f';vw:'v';shd:'00000000000000000003';`.
impl fmt::Display for Prefix<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "idx:'{}';fld:'{}';vw:'{}';shd:'{:020}';",
            self.index, self.field, self.view, self.shard
        )
    }
}

/// The key for a container: `~index%field;view:shard<ckey#`.
///
/// # Errors
///
/// [`Error::EmptyName`] or [`Error::ReservedByte`] for a bad name.
pub fn key(index: &str, field: &str, view: &str, shard: u64, ckey: u64) -> Result<Vec<u8>, Error> {
    let mut k = prefix(index, field, view, shard)?;
    k.extend_from_slice(&ckey.to_be_bytes());
    k.push(b'#');
    Ok(k)
}

/// The key and its prefix together.
///
/// # Errors
///
/// As [`key`].
pub fn key_and_prefix(
    index: &str,
    field: &str,
    view: &str,
    shard: u64,
    ckey: u64,
) -> Result<(Vec<u8>, Vec<u8>), Error> {
    let k = key(index, field, view, shard, ckey)?;
    let p = k[..k.len() - 9].to_vec();
    Ok((k, p))
}

/// Everything up to and including `<`: `~index%field;view:shard<`.
///
/// # Errors
///
/// As [`key`].
pub fn prefix(index: &str, field: &str, view: &str, shard: u64) -> Result<Vec<u8>, Error> {
    let mut p = all_shard_prefix(index, field, view)?;
    p.extend_from_slice(&shard.to_be_bytes());
    p.push(b'<');
    Ok(p)
}

/// The prefix of every shard of a view: `~index%field;view:`.
///
/// # Errors
///
/// As [`key`].
pub fn all_shard_prefix(index: &str, field: &str, view: &str) -> Result<Vec<u8>, Error> {
    let mut p = field_prefix(index, field)?;
    check_name(NamePart::View, view)?;
    p.extend_from_slice(view.as_bytes());
    p.push(b':');
    Ok(p)
}

/// The prefix of every key of a field: `~index%field;`.
///
/// # Errors
///
/// As [`key`].
pub fn field_prefix(index: &str, field: &str) -> Result<Vec<u8>, Error> {
    let mut p = index_only_prefix(index)?;
    check_name(NamePart::Field, field)?;
    p.extend_from_slice(field.as_bytes());
    p.push(b';');
    Ok(p)
}

/// The prefix of every key of an index: `~index%` (so index `i` never
/// matches index `i2`).
///
/// # Errors
///
/// As [`key`].
pub fn index_only_prefix(index: &str) -> Result<Vec<u8>, Error> {
    check_name(NamePart::Index, index)?;
    let mut p = Vec::with_capacity(index.len() + 48);
    p.push(b'~');
    p.extend_from_slice(index.as_bytes());
    p.push(b'%');
    Ok(p)
}

/// Checks a key's structure and names.
///
/// # Errors
///
/// As [`Key::parse`].
pub fn validate_key(key: &[u8]) -> Result<(), Error> {
    Key::parse(key).map(|_| ())
}

/// The container key of a key.
///
/// # Errors
///
/// As [`Key::parse`].
pub fn extract_container_key(key: &[u8]) -> Result<u64, Error> {
    Key::parse(key).map(|k| k.ckey)
}

/// The shard of a key.
///
/// # Errors
///
/// As [`Key::parse`].
pub fn shard_from_key(key: &[u8]) -> Result<u64, Error> {
    Key::parse(key).map(|k| k.shard)
}

/// The shard of a prefix.
///
/// # Errors
///
/// As [`Prefix::parse`].
pub fn shard_from_prefix(prefix: &[u8]) -> Result<u64, Error> {
    Prefix::parse(prefix).map(|p| p.shard)
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

/// (index, field, view, shard, ckey) of a key.
///
/// # Errors
///
/// As [`Key::parse`].
pub fn split(key: &[u8]) -> Result<(&str, &str, &str, u64, u64), Error> {
    Key::parse(key).map(|k| (k.index, k.field, k.view, k.shard, k.ckey))
}

/// (index, field, view, shard) of a prefix.
///
/// # Errors
///
/// As [`Prefix::parse`].
pub fn split_prefix(prefix: &[u8]) -> Result<(&str, &str, &str, u64), Error> {
    Prefix::parse(prefix).map(|p| (p.index, p.field, p.view, p.shard))
}

/// All keys of one fragment (index, field, view, shard).
///
/// # Errors
///
/// As [`key`].
pub fn fragment_range(index: &str, field: &str, view: &str, shard: u64) -> Result<KeyRange, Error> {
    prefix(index, field, view, shard).map(|p| KeyRange::prefix(&p))
}

/// All keys of one field.
///
/// # Errors
///
/// As [`key`].
pub fn field_range(index: &str, field: &str) -> Result<KeyRange, Error> {
    field_prefix(index, field).map(|p| KeyRange::prefix(&p))
}

/// All keys of one index.
///
/// # Errors
///
/// As [`key`].
pub fn index_range(index: &str) -> Result<KeyRange, Error> {
    index_only_prefix(index).map(|p| KeyRange::prefix(&p))
}

/// Keys of one fragment whose container keys lie in `lo..=hi` (empty when
/// `lo > hi`), correct at `u64::MAX`.
///
/// # Errors
///
/// As [`key`].
pub fn container_range(
    index: &str,
    field: &str,
    view: &str,
    shard: u64,
    lo: u64,
    hi: u64,
) -> Result<KeyRange, Error> {
    prefix(index, field, view, shard).map(|p| super::container_range(&p, lo, hi))
}
