//! The writer's lease on a store in shared object storage: which process
//! writes it, where that process takes writes, and whether it is alive.
//!
//! One JSON object beside the database (`<prefix>/lease`, [`LeaseHolder`]).
//! It is only ever written conditionally: created when absent
//! (`PutMode::Create`) or replaced on the version last read or written
//! (`PutMode::Update` on its e-tag). So a writer's renewal after another
//! process took the lease fails, and of several processes taking the same
//! version over exactly one succeeds; the object store decides.
//!
//! No clock is compared across machines: a standby judges a lease by how
//! long, on its own monotonic clock, the version it reads has stayed the
//! same, and a writer by how long ago, on its own, it started its last
//! successful renewal (the timing argument is in `docs/server.md`, "High
//! availability"). The policy lives with the server; this is the object.

use std::sync::Arc;

use slatedb::object_store::{
    self, ObjectStore, ObjectStoreExt, PutMode, UpdateVersion, path::Path as ObjectPath,
};

use crate::error::Error;
use crate::kv::location::{Location, beside_database, object_store, put_if};

/// The lease object's name beside the database.
pub const LEASE_OBJECT: &str = "lease";

/// Who holds a store's writer lease; the lease object's JSON.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaseHolder {
    /// The holding process, unique per start.
    pub id: String,
    /// Where it takes writes: its base URL.
    pub address: String,
    /// How often it renews the lease, in milliseconds.
    pub renew_ms: u64,
    /// How long after its last renewal a standby may take it over, in
    /// milliseconds.
    pub ttl_ms: u64,
    /// One more than the previous holder's: counts the holders.
    pub term: u64,
    /// Renewals within the term.
    pub renewal: u64,
}

/// A version of the lease object, as the object store names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseVersion(UpdateVersion);

/// A store's writer lease.
#[derive(Debug, Clone)]
pub struct Lease {
    store: Arc<dyn ObjectStore>,
    path: ObjectPath,
}

impl Lease {
    /// The lease of the store at `location`.
    ///
    /// # Errors
    ///
    /// [`Error::Location`] as for opening the store (S3 settings, a
    /// location that does not answer).
    pub async fn at(location: &Location) -> Result<Self, Error> {
        let (db_path, store) = object_store(location).await?;
        Ok(Self::beside(store, &db_path))
    }

    /// The lease of the database at `db_path` in `store` (for example a
    /// store wrapped to delay or fail requests).
    #[must_use]
    pub fn beside(store: Arc<dyn ObjectStore>, db_path: &str) -> Self {
        Self {
            store,
            path: beside_database(db_path, LEASE_OBJECT),
        }
    }

    /// The holder and version now, or `None` when nobody has held it.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when the object store fails;
    /// [`Error::Malformed`] for an object that is not a lease.
    pub async fn read(&self) -> Result<Option<(LeaseHolder, LeaseVersion)>, Error> {
        let got = match self.store.get(&self.path).await {
            Ok(got) => got,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(Error::Unavailable(Box::new(e))),
        };
        let version = LeaseVersion(UpdateVersion {
            e_tag: got.meta.e_tag.clone(),
            version: got.meta.version.clone(),
        });
        let bytes = got
            .bytes()
            .await
            .map_err(|e| Error::Unavailable(Box::new(e)))?;
        let holder = serde_json::from_slice(&bytes).map_err(|e| Error::Malformed {
            what: "writer lease",
            reason: e.to_string(),
        })?;
        Ok(Some((holder, version)))
    }

    /// Takes the lease nobody has held yet: its version, or `None` when
    /// another process made it first.
    ///
    /// # Errors
    ///
    /// As [`Lease::replace`].
    pub async fn create(&self, holder: &LeaseHolder) -> Result<Option<LeaseVersion>, Error> {
        self.put(holder, PutMode::Create).await
    }

    /// Writes `holder` over the lease if it is still at `version`: the new
    /// version, or `None` when it has changed since (another process
    /// renewed or took it).
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when the object store fails or cannot write
    /// conditionally (a lease needs it).
    pub async fn replace(
        &self,
        version: &LeaseVersion,
        holder: &LeaseHolder,
    ) -> Result<Option<LeaseVersion>, Error> {
        self.put(holder, PutMode::Update(version.0.clone())).await
    }

    async fn put(
        &self,
        holder: &LeaseHolder,
        mode: PutMode,
    ) -> Result<Option<LeaseVersion>, Error> {
        let body = serde_json::to_vec(holder).map_err(|e| Error::Malformed {
            what: "writer lease",
            reason: e.to_string(),
        })?;
        Ok(put_if(self.store.as_ref(), &self.path, body, mode)
            .await?
            .map(LeaseVersion))
    }
}
