//! The processes serving a partitioned store on object storage: one small
//! object each under `<root>/members/`, rewritten every lease renewal, so
//! that a process holding no partition yet is seen by the others (the
//! leases show only the processes that hold some).
//!
//! Liveness uses no process's clock: a member is live when its object was
//! last written within a time to live of the newest member object's
//! `last_modified`, both stamped by the object store.

use std::sync::Arc;

use slatedb::object_store::{ObjectStore, ObjectStoreExt, PutPayload, path::Path as ObjectPath};

use crate::error::Error;
use crate::kv::location::{Location, beside_database, object_store};

/// The prefix of the member objects under a partitioned store's root.
pub const MEMBERS_PREFIX: &str = "members";

/// A partitioned store's member objects.
#[derive(Debug, Clone)]
pub struct Members {
    store: Arc<dyn ObjectStore>,
    prefix: ObjectPath,
}

impl Members {
    /// The members of the partitioned store at `root`.
    ///
    /// # Errors
    ///
    /// [`Error::Location`] as for opening the store.
    pub async fn at(root: &Location) -> Result<Self, Error> {
        let (db_path, store) = object_store(root).await?;
        Ok(Self {
            store,
            prefix: beside_database(&db_path, MEMBERS_PREFIX),
        })
    }

    /// Says that member `id` is alive (writes its object).
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when the object store fails.
    pub async fn heartbeat(&self, id: &str) -> Result<(), Error> {
        let path = self.prefix.clone().join(id);
        self.store
            .put(&path, PutPayload::from(id.as_bytes().to_vec()))
            .await
            .map(|_| ())
            .map_err(|e| Error::Unavailable(Box::new(e)))
    }

    /// The members whose object was written within `ttl` of the newest one.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when the object store fails.
    pub async fn live(&self, ttl: std::time::Duration) -> Result<Vec<String>, Error> {
        let listed = self
            .store
            .list_with_delimiter(Some(&self.prefix))
            .await
            .map_err(|e| Error::Unavailable(Box::new(e)))?;
        let written = |o: &slatedb::object_store::ObjectMeta| o.last_modified.timestamp_millis();
        let Some(newest) = listed.objects.iter().map(written).max() else {
            return Ok(Vec::new());
        };
        let ttl = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
        let mut live: Vec<String> = listed
            .objects
            .iter()
            .filter(|o| newest - written(o) <= ttl)
            .filter_map(|o| o.location.filename().map(str::to_owned))
            .collect();
        live.sort();
        Ok(live)
    }
}
