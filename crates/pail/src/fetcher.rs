//! [`ShardFetcher`]: where shards come from; [`MemoryBlocks`]: an in-memory one.

use std::{
    collections::HashMap,
    future::Future,
    sync::{Arc, RwLock},
};

use cid::Cid;

use crate::{Mutation, error::Error, shard::Shard};

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

/// The shards of one tree, in memory, and no others: each [`apply`] adds a
/// mutation's new shards and frees every shard the new root no longer
/// reaches.
///
/// Shards are reference-counted by the links to them from held shards (and
/// the root), so a shard that two places of the tree share (equal contents
/// have one CID) stays while either reaches it; a mutation's `removals` are
/// not needed, and could not be trusted alone for this.
///
/// [`apply`]: LiveBlocks::apply
#[derive(Debug)]
pub struct LiveBlocks {
    root: Cid,
    /// Every shard reachable from `root`, with the number of links to it
    /// from held shards, plus one for the root.
    shards: HashMap<Cid, (Arc<Shard>, usize)>,
}

impl LiveBlocks {
    /// A tree whose root is `root` (a shard without links, e.g. an empty one).
    #[must_use]
    pub fn new(root: Arc<Shard>) -> Self {
        let cid = root.cid();
        debug_assert!((0..root.len()).all(|i| root.link(i).is_none()));
        Self {
            root: cid,
            shards: HashMap::from([(cid, (root, 1))]),
        }
    }

    /// The current root.
    #[must_use]
    pub fn root(&self) -> Cid {
        self.root
    }

    /// Number of shards held: those reachable from the root.
    #[must_use]
    pub fn len(&self) -> usize {
        self.shards.len()
    }

    /// Always false: the root is held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.shards.is_empty()
    }

    /// Moves the tree to `mutation.root`, a mutation of the tree at
    /// [`root`](Self::root) made with this store as its fetcher.
    pub fn apply(&mut self, mutation: &Mutation) {
        let mut fresh = Vec::new();
        for shard in &mutation.additions {
            if let std::collections::hash_map::Entry::Vacant(e) = self.shards.entry(shard.cid()) {
                e.insert((Arc::clone(shard), 0));
                fresh.push(shard);
            }
        }
        // Links of shards already held are counted already.
        for shard in fresh {
            for link in (0..shard.len()).filter_map(|i| shard.link(i)) {
                self.add_ref(&link);
            }
        }
        let old = std::mem::replace(&mut self.root, mutation.root);
        self.add_ref(&mutation.root);
        self.release(old);
        // A new shard nothing links to (none should be) is not kept.
        for shard in &mutation.additions {
            if self
                .shards
                .get(&shard.cid())
                .is_some_and(|(_, refs)| *refs == 0)
            {
                self.add_ref(&shard.cid());
                self.release(shard.cid());
            }
        }
    }

    fn add_ref(&mut self, cid: &Cid) {
        // A mutation only links to its own additions and to held shards.
        if let Some((_, refs)) = self.shards.get_mut(cid) {
            *refs += 1;
        }
    }

    /// Drops one reference to `cid`; frees it and, in turn, what only it
    /// reached when that was the last.
    fn release(&mut self, cid: Cid) {
        let mut todo = vec![cid];
        while let Some(cid) = todo.pop() {
            let Some((_, refs)) = self.shards.get_mut(&cid) else {
                continue;
            };
            *refs -= 1;
            if *refs == 0
                && let Some((shard, _)) = self.shards.remove(&cid)
            {
                todo.extend((0..shard.len()).filter_map(|i| shard.link(i)));
            }
        }
    }
}

impl ShardFetcher for LiveBlocks {
    fn get_shard(&self, cid: &Cid) -> impl Future<Output = Result<Arc<Shard>, Error>> + Send {
        let found = self
            .shards
            .get(cid)
            .map(|(shard, _)| Arc::clone(shard))
            .ok_or(Error::MissingBlock(*cid));
        std::future::ready(found)
    }
}
