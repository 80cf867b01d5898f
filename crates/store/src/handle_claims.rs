//! Handles claimed across the processes of a partitioned store on object
//! storage: one small object per handle, `<root>/handles/<handle>`, naming
//! the DID that took it.
//!
//! Accounts live in the partition of their DID, so two processes making
//! accounts with one handle in two partitions cannot see each other's
//! write in time. The object store decides instead: a claim is created only
//! when absent (`PutMode::Create`) and replaced only on the version last
//! read (`PutMode::Update`), so of several processes exactly one holds a
//! handle. When a claim may be replaced (its account was never made, or no
//! longer has the handle) is the server's policy; this is the object, and
//! its age by the object store's own clock (no process's clock is
//! compared).

use std::{sync::Arc, time::Duration};

use slatedb::object_store::{
    self, ObjectStore, ObjectStoreExt, PutMode, PutPayload, UpdateVersion, path::Path as ObjectPath,
};

use crate::error::Error;
use crate::kv::location::{Location, beside_database, object_store, put_if};

/// The prefix of the handle claims under a partitioned store's root.
pub const HANDLES_PREFIX: &str = "handles";

/// The object rewritten to read the object store's time (`_` is in no
/// handle, so it is no claim's name).
const CLOCK_OBJECT: &str = "_clock";

/// A partitioned store's handle claims.
#[derive(Debug, Clone)]
pub struct HandleClaims {
    store: Arc<dyn ObjectStore>,
    prefix: ObjectPath,
}

/// What claiming a handle found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The handle was free and is now this DID's.
    Made,
    /// Another claim is there (possibly the same DID's).
    Held(HeldClaim),
}

/// A claim that was there: whose, which version, and how long ago it was
/// written by the object store's clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldClaim {
    /// The DID it names.
    pub did: String,
    /// How long ago it was written (zero when the object store's time went
    /// backwards).
    pub age: Duration,
    version: UpdateVersion,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct ClaimObject {
    did: String,
}

impl HandleClaims {
    /// The handle claims of the partitioned store at `root`.
    ///
    /// # Errors
    ///
    /// [`Error::Location`] as for opening the store.
    pub async fn at(root: &Location) -> Result<Self, Error> {
        let (db_path, store) = object_store(root).await?;
        Ok(Self::beside(store, &db_path))
    }

    /// The claims beside the database at `db_path` in `store` (the root's
    /// `db` path, as [`crate::Lease::beside`] takes it).
    #[must_use]
    pub fn beside(store: Arc<dyn ObjectStore>, db_path: &str) -> Self {
        Self {
            store,
            prefix: beside_database(db_path, HANDLES_PREFIX),
        }
    }

    /// Claims `handle` (normalized: lowercase) for `did`, unless a claim is
    /// there already.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when the object store fails;
    /// [`Error::Malformed`] for a claim object that is not one.
    pub async fn claim(&self, handle: &str, did: &str) -> Result<Claim, Error> {
        if self.put(handle, did, PutMode::Create).await? {
            return Ok(Claim::Made);
        }
        match self.read(handle).await? {
            Some(held) => Ok(Claim::Held(held)),
            // Released between the two requests: try once more.
            None if self.put(handle, did, PutMode::Create).await? => Ok(Claim::Made),
            None => Ok(Claim::Held(self.read(handle).await?.ok_or_else(|| {
                Error::Unavailable("a handle claim came and went twice".into())
            })?)),
        }
    }

    /// The claim on `handle`, if any.
    ///
    /// # Errors
    ///
    /// As [`HandleClaims::claim`].
    pub async fn read(&self, handle: &str) -> Result<Option<HeldClaim>, Error> {
        let got = match self.store.get(&self.path(handle)).await {
            Ok(got) => got,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(Error::Unavailable(Box::new(e))),
        };
        let version = UpdateVersion {
            e_tag: got.meta.e_tag.clone(),
            version: got.meta.version.clone(),
        };
        let written = got.meta.last_modified.timestamp_millis();
        let bytes = got
            .bytes()
            .await
            .map_err(|e| Error::Unavailable(Box::new(e)))?;
        let object: ClaimObject = serde_json::from_slice(&bytes).map_err(|e| Error::Malformed {
            what: "handle claim",
            reason: e.to_string(),
        })?;
        let age_ms = u64::try_from(self.now_ms().await? - written).unwrap_or(0);
        let age = Duration::from_millis(age_ms);
        Ok(Some(HeldClaim {
            did: object.did,
            age,
            version,
        }))
    }

    /// Replaces `held` with a claim for `did`: `false` when the claim
    /// changed since it was read (another process took or renewed it).
    ///
    /// # Errors
    ///
    /// As [`HandleClaims::claim`]; [`Error::Unavailable`] also when the
    /// object store cannot write conditionally.
    pub async fn take_over(
        &self,
        handle: &str,
        held: &HeldClaim,
        did: &str,
    ) -> Result<bool, Error> {
        self.put(handle, did, PutMode::Update(held.version.clone()))
            .await
    }

    /// Removes the claim on `handle` if it names `did` (a creation that
    /// failed gives its handle back).
    ///
    /// # Errors
    ///
    /// As [`HandleClaims::claim`].
    pub async fn release(&self, handle: &str, did: &str) -> Result<(), Error> {
        match self.read(handle).await? {
            Some(held) if held.did == did => match self.store.delete(&self.path(handle)).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                Err(e) => Err(Error::Unavailable(Box::new(e))),
            },
            _ => Ok(()),
        }
    }

    fn path(&self, handle: &str) -> ObjectPath {
        self.prefix.clone().join(handle)
    }

    /// Writes `did`'s claim on `handle` in `mode`: `false` when the
    /// condition did not hold.
    async fn put(&self, handle: &str, did: &str, mode: PutMode) -> Result<bool, Error> {
        let body = serde_json::to_vec(&ClaimObject {
            did: did.to_owned(),
        })
        .map_err(|e| Error::Malformed {
            what: "handle claim",
            reason: e.to_string(),
        })?;
        Ok(put_if(self.store.as_ref(), &self.path(handle), body, mode)
            .await?
            .is_some())
    }

    /// The object store's time now (milliseconds since the Unix epoch): the
    /// last-modified time of an object written for the purpose.
    async fn now_ms(&self) -> Result<i64, Error> {
        let clock = self.prefix.clone().join(CLOCK_OBJECT);
        let unavailable = |e: object_store::Error| Error::Unavailable(Box::new(e));
        self.store
            .put(&clock, PutPayload::from_static(b"now"))
            .await
            .map_err(unavailable)?;
        let meta = self.store.head(&clock).await.map_err(unavailable)?;
        Ok(meta.last_modified.timestamp_millis())
    }
}
