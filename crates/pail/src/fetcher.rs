//! [`ShardFetcher`]: where shards come from; [`MemoryBlocks`]: an in-memory one.

use std::{
    collections::HashMap,
    future::Future,
    sync::{Arc, RwLock},
};

use cid::Cid;

use crate::{Error, Mutation, Shard};

/// A source of decoded shards by CID.
///
/// Implementations verify what they return (the `store` crate checks each
/// block's hash and decodes it with [`Shard::decode`]) and may cache
/// decoded shards; [`MemoryBlocks`] holds them decoded already.
pub trait ShardFetcher: Send + Sync {
    /// The shard with this CID.
    ///
    /// # Errors
    ///
    /// [`Error::MissingBlock`] when absent; [`Error::InvalidShard`] or
    /// [`Error::Store`] when it cannot be read.
    fn get_shard(&self, cid: &Cid) -> impl Future<Output = Result<Arc<Shard>, Error>> + Send;
}

impl<F: ShardFetcher> ShardFetcher for &F {
    fn get_shard(&self, cid: &Cid) -> impl Future<Output = Result<Arc<Shard>, Error>> + Send {
        (**self).get_shard(cid)
    }
}

impl<F: ShardFetcher> ShardFetcher for Arc<F> {
    fn get_shard(&self, cid: &Cid) -> impl Future<Output = Result<Arc<Shard>, Error>> + Send {
        (**self).get_shard(cid)
    }
}

/// Shards in memory, keyed by CID.
#[derive(Debug, Default)]
pub struct MemoryBlocks {
    shards: RwLock<HashMap<Cid, Arc<Shard>>>,
}

impl MemoryBlocks {
    /// An empty store.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<Cid, Arc<Shard>>> {
        self.shards
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<Cid, Arc<Shard>>> {
        self.shards
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Adds a shard.
    pub fn insert(&self, shard: Arc<Shard>) {
        self.write().insert(shard.cid(), shard);
    }

    /// Removes a shard.
    pub fn remove(&self, cid: &Cid) {
        self.write().remove(cid);
    }

    /// Adds a mutation's new shards and, when `drop_removals`, forgets the
    /// ones it replaced. (Only drop removals when no other root can reach
    /// them: two shards with equal contents share one CID.)
    pub fn apply(&self, mutation: &Mutation, drop_removals: bool) {
        let mut shards = self.write();
        if drop_removals {
            for cid in &mutation.removals {
                shards.remove(cid);
            }
        }
        for shard in &mutation.additions {
            shards.insert(shard.cid(), Arc::clone(shard));
        }
    }

    /// Number of shards held.
    #[must_use]
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether no shard is held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// Every shard held (in no particular order).
    #[must_use]
    pub fn shards(&self) -> Vec<Arc<Shard>> {
        self.read().values().cloned().collect()
    }
}

impl ShardFetcher for MemoryBlocks {
    fn get_shard(&self, cid: &Cid) -> impl Future<Output = Result<Arc<Shard>, Error>> + Send {
        let found = self
            .read()
            .get(cid)
            .cloned()
            .ok_or(Error::MissingBlock(*cid));
        std::future::ready(found)
    }
}
