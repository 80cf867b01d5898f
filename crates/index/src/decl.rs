//! Index declarations (which paths of which collection are indexed, and
//! their scopes) and the repository's index epoch.

use std::collections::BTreeMap;

use bytes::Bytes;
use keycodec::records;
use serde::{Deserialize, Serialize};
use store::{Kv, WriteOp};

use crate::{
    error::{Error, malformed},
    values::IndexKind,
};

/// A declared field index.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IndexDecl {
    /// The collection.
    pub collection: String,
    /// The path into its records (segments joined by `.`).
    pub path: String,
    /// What it keeps.
    pub kind: IndexKind,
}

/// The stored value of a declaration (record type `0x8`).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct DeclValue {
    kind: String,
    scope: u32,
}

/// A declaration with the collection's scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    /// The declaration.
    pub decl: IndexDecl,
    /// Its collection's scope (the txkey index name).
    pub scope: u32,
}

/// The stored value of a declaration of `kind` in `scope` (record type
/// `0x8`).
pub fn encode_decl(kind: IndexKind, scope: u32) -> Bytes {
    let v = DeclValue {
        kind: kind.name().to_owned(),
        scope,
    };
    Bytes::from(serde_json::to_vec(&v).unwrap_or_default())
}

/// A repository's index epoch ([`records::index_epoch_key`]): a number
/// that every change to the indexes other than a commit raises, and whether
/// the records changed under the indexes (an import) with their rebuild not
/// finished. Stored as the number (`u64`, big-endian), then `01` while a
/// rebuild is pending.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Epoch {
    /// The number, raised by every index change other than a commit.
    pub number: u64,
    /// Whether an import changed the records and the rebuild is not done.
    pub rebuild_pending: bool,
}

impl Epoch {
    fn decode(v: &[u8]) -> Result<Self, Error> {
        let (number, pending) = match v {
            [n @ .., 1] if n.len() == 8 => (n, true),
            n => (n, false),
        };
        let number = <[u8; 8]>::try_from(number)
            .map(u64::from_be_bytes)
            .map_err(|_| malformed("the index epoch is not 8 bytes and a flag"))?;
        Ok(Self {
            number,
            rebuild_pending: pending,
        })
    }

    /// The write that replaces this epoch of `repo` with the next, as
    /// [`raise_epoch`] describes.
    pub fn raised(self, repo: &str, rebuild_pending: Option<bool>) -> WriteOp {
        let next = Self {
            number: self.number.wrapping_add(1),
            rebuild_pending: rebuild_pending.unwrap_or(self.rebuild_pending),
        };
        WriteOp::Put(records::index_epoch_key(repo), next.encode())
    }

    fn encode(self) -> Bytes {
        let mut out = self.number.to_be_bytes().to_vec();
        if self.rebuild_pending {
            out.push(1);
        }
        Bytes::from(out)
    }
}

/// A repository's index epoch (number 0, nothing pending, before the first
/// change).
pub async fn epoch<K: Kv>(kv: &K, repo: &str) -> Result<Epoch, Error> {
    match kv.get(&records::index_epoch_key(repo)).await? {
        None => Ok(Epoch::default()),
        Some(v) => Epoch::decode(&v),
    }
}

/// The write that raises a repository's index epoch, for the batch that
/// changes its indexes; `rebuild_pending` sets or clears the flag (`None`
/// keeps it). The caller holds the repository's write lock, so no other
/// change reads the same epoch.
pub async fn raise_epoch<K: Kv>(
    kv: &K,
    repo: &str,
    rebuild_pending: Option<bool>,
) -> Result<WriteOp, Error> {
    Ok(epoch(kv, repo).await?.raised(repo, rebuild_pending))
}

/// The declarations of a repository, or of one of its collections.
pub async fn declarations<K: Kv>(
    kv: &K,
    repo: &str,
    collection: Option<&str>,
) -> Result<Vec<Declared>, Error> {
    let rows = kv
        .scan(
            &records::field_index_range(repo, collection),
            false,
            usize::MAX,
        )
        .await?;
    rows.iter()
        .filter_map(|(k, v)| match records::decode_key(k) {
            Ok(records::DecodedKey::IndexEpoch { .. }) => None,
            Ok(records::DecodedKey::FieldIndex {
                collection, path, ..
            }) => Some(declared(&collection, &path, v)),
            _ => Some(Err(malformed("a field-index key does not decode"))),
        })
        .collect()
}

/// One stored declaration: `collection`'s index on `path`, its value `v`.
pub(crate) fn declared(collection: &str, path: &str, v: &[u8]) -> Result<Declared, Error> {
    let bad = |e: String| malformed(format!("declaration of {collection} {path}: {e}"));
    let value: DeclValue = serde_json::from_slice(v).map_err(|e| bad(e.to_string()))?;
    let kind = value.kind.parse().map_err(|e: String| bad(e))?;
    Ok(Declared {
        decl: IndexDecl {
            collection: collection.to_owned(),
            path: path.to_owned(),
            kind,
        },
        scope: value.scope,
    })
}

/// A repository's declarations grouped by collection (one scope each), in
/// collection order.
pub async fn declarations_by_collection<K: Kv>(
    kv: &K,
    repo: &str,
) -> Result<BTreeMap<String, Vec<Declared>>, Error> {
    let mut by_collection: BTreeMap<String, Vec<Declared>> = BTreeMap::new();
    for d in declarations(kv, repo, None).await? {
        by_collection
            .entry(d.decl.collection.clone())
            .or_default()
            .push(d);
    }
    Ok(by_collection)
}

/// A scope number no declaration and no stored column uses.
pub async fn free_scope<K: Kv>(kv: &K) -> Result<u32, Error> {
    let mut max: Option<u32> = None;
    for (k, v) in kv
        .scan(&records::RecordType::FieldIndex.range(), false, usize::MAX)
        .await?
    {
        if let Ok(records::DecodedKey::FieldIndex { .. }) = records::decode_key(&k)
            && let Ok(d) = serde_json::from_slice::<DeclValue>(&v)
        {
            max = max.max(Some(d.scope));
        }
    }
    for t in [records::RecordType::Column, records::RecordType::ColumnRkey] {
        if let Some((k, _)) = kv.scan(&t.range(), true, 1).await?.into_iter().next()
            && let Ok(
                records::DecodedKey::Column { scope, .. }
                | records::DecodedKey::ColumnRkey { scope, .. },
            ) = records::decode_key(&k)
        {
            max = max.max(Some(scope));
        }
    }
    match max {
        None => Ok(0),
        Some(m) => m
            .checked_add(1)
            .ok_or_else(|| malformed("every index scope number is in use")),
    }
}

#[cfg(test)]
mod tests {
    use super::Epoch;

    /// The value layout `docs/storage-keys.md` gives: the number, then `01`
    /// while a rebuild is pending.
    #[test]
    fn the_epoch_value_is_pinned() {
        let plain = Epoch {
            number: 0x0102,
            rebuild_pending: false,
        };
        let pending = Epoch {
            rebuild_pending: true,
            ..plain
        };
        assert_eq!(&plain.encode()[..], b"\0\0\0\0\0\0\x01\x02");
        assert_eq!(&pending.encode()[..], b"\0\0\0\0\0\0\x01\x02\x01");
        assert_eq!(Epoch::decode(&plain.encode()).unwrap(), plain);
        assert_eq!(Epoch::decode(&pending.encode()).unwrap(), pending);
        for bad in [&b"\0\0\0\0\0\0\x01"[..], b"\0\0\0\0\0\0\x01\x02\x02", b""] {
            assert!(Epoch::decode(bad).is_err(), "{bad:?}");
        }
    }
}
