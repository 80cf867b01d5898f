//! A store split into partitions: several SlateDB databases under one
//! location, each repository in exactly one of them.
//!
//! A partitioned store's location holds `partitions.json` ([`Partitions`],
//! written once, when the store is created) and one directory (or S3
//! prefix) per partition, `p-0000/ … p-NNNN/`, each laid out exactly as an
//! unpartitioned store (`db/`, `lease`, `blobs/`). A location without
//! `partitions.json` is an unpartitioned store, as every store was before
//! partitions: it opens unchanged.
//!
//! Repository `id` lives in partition `u64::from_be_bytes(sha256(id)[0..8])
//! mod count` ([`Partitions::of`]): fixed for the store's life, since the
//! count is.

use std::sync::Arc;

use sha2::{Digest, Sha256};
use slatedb::object_store::{
    self, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, path::Path as ObjectPath,
};

use crate::error::Error;
use crate::kv::location::{DB_PATH, Location, beside_database, object_store};

/// The object naming a store's partitions, at its location's root.
pub const PARTITIONS_OBJECT: &str = "partitions.json";

/// Most partitions a store may have.
pub const MAX_PARTITIONS: u32 = 1024;

/// How a store is partitioned; `partitions.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Partitions {
    /// The layout's version: 1.
    version: u32,
    /// How many partitions.
    count: u32,
    /// How a repository's partition is chosen: `"sha256-be64-mod"`.
    hash: HashName,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum HashName {
    #[serde(rename = "sha256-be64-mod")]
    Sha256Be64Mod,
}

impl Partitions {
    /// `count` partitions (1 to [`MAX_PARTITIONS`]).
    ///
    /// # Errors
    ///
    /// [`Error::Malformed`] for a count out of range.
    pub fn new(count: u32) -> Result<Self, Error> {
        if count == 0 || count > MAX_PARTITIONS {
            return Err(Error::Malformed {
                what: "partition count",
                reason: format!("{count} is not between 1 and {MAX_PARTITIONS}"),
            });
        }
        Ok(Self {
            version: 1,
            count,
            hash: HashName::Sha256Be64Mod,
        })
    }

    /// How many partitions.
    #[must_use]
    pub fn count(&self) -> u32 {
        self.count
    }

    /// The partition of repository `id`: the first eight bytes of
    /// SHA-256 of its UTF-8 bytes, big-endian, modulo the count.
    #[must_use]
    pub fn of(&self, id: &str) -> u32 {
        let digest = Sha256::digest(id.as_bytes());
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        // The remainder is below `count`, a u32.
        u32::try_from(u64::from_be_bytes(first) % u64::from(self.count)).unwrap_or(0)
    }

    /// Every partition, in order.
    pub fn all(&self) -> impl Iterator<Item = u32> + use<> {
        0..self.count
    }

    /// Partition `p`'s directory (or prefix) name: `p-0007`.
    #[must_use]
    pub fn name(p: u32) -> String {
        format!("p-{p:04}")
    }

    /// Where partition `p` of the store at `root` lives.
    #[must_use]
    pub fn location(root: &Location, p: u32) -> Location {
        match root {
            Location::Local(dir) => Location::Local(dir.join(Self::name(p))),
            Location::S3 { bucket, prefix } => Location::S3 {
                bucket: bucket.clone(),
                prefix: if prefix.is_empty() {
                    Self::name(p)
                } else {
                    format!("{prefix}/{}", Self::name(p))
                },
            },
        }
    }

    /// The partitions of the store at `root`, or `None` for an
    /// unpartitioned store (or none at all yet).
    ///
    /// # Errors
    ///
    /// [`Error::Location`] as for opening the store;
    /// [`Error::Unavailable`] when the object store fails;
    /// [`Error::Malformed`] for a `partitions.json` this version cannot read.
    pub async fn read(root: &Location) -> Result<Option<Self>, Error> {
        if let Location::Local(dir) = root {
            // No object store (and no directory created) for a plain read.
            return match std::fs::read(dir.join(PARTITIONS_OBJECT)) {
                Ok(bytes) => Self::decode(&bytes).map(Some),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(Error::Unavailable(Box::new(e))),
            };
        }
        let (store, path) = Self::object(root).await?;
        match store.get(&path).await {
            Ok(got) => {
                let bytes = got
                    .bytes()
                    .await
                    .map_err(|e| Error::Unavailable(Box::new(e)))?;
                Self::decode(&bytes).map(Some)
            }
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(Error::Unavailable(Box::new(e))),
        }
    }

    /// Makes the store at `root` a store of `self.count()` partitions.
    /// Nothing is written when it already is one of that count.
    ///
    /// # Errors
    ///
    /// [`Error::Location`] when `root` already holds an unpartitioned
    /// store, or a store of another count; otherwise as [`Partitions::read`].
    pub async fn create(&self, root: &Location) -> Result<(), Error> {
        let refuse = |reason: String| Error::Location {
            location: root.to_string(),
            reason,
        };
        let (store, path) = Self::object(root).await?;
        let db = ObjectPath::from(match root {
            Location::Local(_) => DB_PATH.to_owned(),
            Location::S3 { prefix, .. } if prefix.is_empty() => DB_PATH.to_owned(),
            Location::S3 { prefix, .. } => format!("{prefix}/{DB_PATH}"),
        });
        let mut listing = store.list(Some(&db));
        if futures::StreamExt::next(&mut listing).await.is_some() {
            return Err(refuse(
                "an unpartitioned store is already here; its partition count cannot change \
                 (export its repositories and import them into a new store)"
                    .to_owned(),
            ));
        }
        let body = serde_json::to_vec_pretty(self).map_err(|e| Error::Malformed {
            what: "partitions",
            reason: e.to_string(),
        })?;
        let options = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        match store.put_opts(&path, PutPayload::from(body), options).await {
            Ok(_) => Ok(()),
            Err(object_store::Error::AlreadyExists { .. }) => match Self::read(root).await? {
                Some(there) if there == *self => Ok(()),
                Some(there) => Err(refuse(format!(
                    "this store already has {} partitions; the count is fixed when it is created",
                    there.count
                ))),
                None => Err(refuse(
                    "partitions.json vanished while being created".to_owned(),
                )),
            },
            Err(e) => Err(Error::Unavailable(Box::new(e))),
        }
    }

    /// The object store at `root` and the path of `partitions.json` in it.
    async fn object(root: &Location) -> Result<(Arc<dyn ObjectStore>, ObjectPath), Error> {
        let (db_path, store) = object_store(root).await?;
        Ok((store, beside_database(&db_path, PARTITIONS_OBJECT)))
    }

    fn decode(bytes: &[u8]) -> Result<Self, Error> {
        let malformed = |reason: String| Error::Malformed {
            what: "partitions.json",
            reason,
        };
        let read: Self = serde_json::from_slice(bytes).map_err(|e| malformed(e.to_string()))?;
        if read.version != 1 {
            return Err(malformed(format!(
                "layout version {} is newer than this datarepo reads (1)",
                read.version
            )));
        }
        Self::new(read.count).map_err(|e| malformed(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_out_of_range_are_refused() {
        assert!(Partitions::new(0).is_err());
        assert!(Partitions::new(MAX_PARTITIONS + 1).is_err());
        assert!(Partitions::new(MAX_PARTITIONS).is_ok());
    }

    #[test]
    fn every_repository_lands_below_the_count() {
        let p = Partitions::new(7).unwrap();
        for i in 0..1000 {
            assert!(p.of(&format!("did:web:u{i}.example")) < 7);
        }
    }

    #[test]
    fn locations_nest_under_the_root() {
        let s3 = Location::S3 {
            bucket: "b".into(),
            prefix: "x/y".into(),
        };
        assert_eq!(
            Partitions::location(&s3, 3).to_string(),
            "s3://b/x/y/p-0003"
        );
        let bare = Location::S3 {
            bucket: "b".into(),
            prefix: String::new(),
        };
        assert_eq!(Partitions::location(&bare, 12).to_string(), "s3://b/p-0012");
    }
}
