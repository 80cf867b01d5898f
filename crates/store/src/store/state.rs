//! [`Store`] itself, the commits long readers pin, and reads of the
//! underlying key-value store at a chosen view.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use cid::Cid;
use keycodec::KeyRange;

use crate::{error::Error, kv::interface::Kv, shard_cache::ShardCache};

/// Default bound on the decoded-shard cache: 256 MiB of shard bytes (the
/// cached shards, and once each the full blocks their deltas are made from).
pub const DEFAULT_SHARD_CACHE_BYTES: usize = 256 << 20;

/// Which writes a read sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum View {
    /// Every applied write, durable or not: what writers and gc build on
    /// (gc must keep a pending commit's blocks).
    Written,
    /// Only durable writes: what a crash would leave, so what clients see.
    Durable,
}

/// datarepo's storage over a [`Kv`].
///
/// Every block read is checked against its CID (corruption is an error
/// naming the CID, never silently wrong data), and decoded shards are cached.
/// Commits are serialized by a lock around the head compare-and-swap, but
/// wait for durability after releasing it, so commits that arrive together
/// share one durable write. Commits run on a Tokio runtime with timers
/// enabled (the durability wait is bounded).
#[derive(Debug)]
pub struct Store<K> {
    pub(super) kv: K,
    /// Serializes commits; holds the next event sequence number and the
    /// stream's newest time once read from the store.
    pub(super) commit_lock: tokio::sync::Mutex<Sequences>,
    /// Held shared by [`Store::bulk_commit`] and exclusively by
    /// [`Store::gc`]: blocks written ahead of their commit are unreachable
    /// until it lands, and a collection must not see them in between.
    pub(crate) gc_lock: tokio::sync::RwLock<()>,
    /// Commits a long reader holds on to ([`PinWindow::pin`]), with how
    /// many pins each: collections keep them as they keep retained commits.
    pub(super) pins: Arc<Mutex<std::collections::HashMap<Cid, usize>>>,
    /// Held shared by each [`PinWindow`] and exclusively by a collection
    /// while it reads its roots: a commit read and pinned in one window
    /// is pinned before the roots are read, or read after them.
    pub(crate) pin_windows: tokio::sync::RwLock<()>,
    /// The blocks commits wrote while a collection runs (`None` when none
    /// does): its sweep spares them, since a commit may write again a block
    /// the collection found unreachable (the same content, the same CID).
    pub(crate) written_during_gc: Mutex<Option<std::collections::HashSet<Cid>>>,
    /// Held by a commit while it notes and applies its writes, and by a
    /// sweep while it filters and applies a batch of deletions: a block is
    /// then either spared by the sweep or written again after it.
    pub(crate) sweep_order: tokio::sync::Mutex<()>,
    /// See [`Store::lock_index_scopes`].
    pub(super) index_scopes: tokio::sync::Mutex<()>,
    /// Whether commits and account changes write stream events
    /// ([`Store::without_stream_events`]).
    pub(super) keep_stream_events: bool,
    pub(super) cache: Mutex<ShardCache>,
    pub(super) durability_timeout: std::time::Duration,
}

/// Anchors (the full blocks shard deltas are changes to) recently read by
/// [`Store::get_shard_block`], for one reader: at most
/// [`AnchorMemo::CAPACITY`], the oldest forgotten first. Anchors are
/// immutable blocks, so a remembered one is never stale.
#[derive(Debug, Default)]
pub struct AnchorMemo {
    anchors: Mutex<(
        foldhash::HashMap<Cid, Bytes>,
        std::collections::VecDeque<Cid>,
    )>,
}

impl AnchorMemo {
    /// Anchors remembered (each at most a shard's size).
    pub const CAPACITY: usize = 64;

    pub(super) fn get(&self, cid: &Cid) -> Option<Bytes> {
        let guard = self
            .anchors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        guard.0.get(cid).cloned()
    }

    pub(super) fn insert(&self, cid: Cid, bytes: Bytes) {
        let mut guard = self
            .anchors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (map, order) = &mut *guard;
        if map.insert(cid, bytes).is_none() {
            order.push_back(cid);
            if order.len() > Self::CAPACITY
                && let Some(oldest) = order.pop_front()
            {
                map.remove(&oldest);
            }
        }
    }
}

/// See [`Store::pin_window`].
#[derive(Debug)]
pub struct PinWindow<'a> {
    pins: &'a Arc<Mutex<std::collections::HashMap<Cid, usize>>>,
    _roots_wait: tokio::sync::RwLockReadGuard<'a, ()>,
}

impl PinWindow<'_> {
    /// Keeps `commit` (its block, its tree and the tree's records, not
    /// its predecessors) from garbage collection until the pin is
    /// dropped, as if it were a retained commit. Pin only commits read in
    /// this window (see [`Store::pin_window`]).
    pub fn pin(&self, commit: Cid) -> PinnedCommit {
        *self
            .pins
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(commit)
            .or_default() += 1;
        PinnedCommit {
            pins: Arc::clone(self.pins),
            commit,
        }
    }
}

/// A commit kept from garbage collection ([`PinWindow::pin`]) until dropped.
#[derive(Debug)]
#[must_use = "the commit is kept only while the pin lives"]
pub struct PinnedCommit {
    pins: Arc<Mutex<std::collections::HashMap<Cid, usize>>>,
    commit: Cid,
}

impl Drop for PinnedCommit {
    fn drop(&mut self) {
        let mut pins = self
            .pins
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = pins.get_mut(&self.commit) {
            *n -= 1;
            if *n == 0 {
                pins.remove(&self.commit);
            }
        }
    }
}

/// How long a commit waits to be confirmed durable before
/// [`Error::DurabilityTimeout`].
pub const DEFAULT_DURABILITY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

impl<K: Kv> Store<K> {
    /// A store over `kv` with the default shard cache.
    pub fn new(kv: K) -> Self {
        Self::with_cache_bytes(kv, DEFAULT_SHARD_CACHE_BYTES)
    }

    /// A store over `kv` whose shard cache holds at most `limit` bytes.
    pub fn with_cache_bytes(kv: K, limit: usize) -> Self {
        Self {
            kv,
            commit_lock: tokio::sync::Mutex::new(Sequences::default()),
            gc_lock: tokio::sync::RwLock::new(()),
            pins: Arc::default(),
            pin_windows: tokio::sync::RwLock::new(()),
            written_during_gc: Mutex::new(None),
            sweep_order: tokio::sync::Mutex::new(()),
            index_scopes: tokio::sync::Mutex::new(()),
            keep_stream_events: true,
            cache: Mutex::new(ShardCache::new(limit)),
            durability_timeout: DEFAULT_DURABILITY_TIMEOUT,
        }
    }

    /// A store whose writes keep no stream events (`serve --stream off`):
    /// commits and account changes write none, and cost nothing for them.
    #[must_use]
    pub fn without_stream_events(mut self) -> Self {
        self.keep_stream_events = false;
        self
    }

    /// Whether writes keep stream events.
    pub fn keeps_stream_events(&self) -> bool {
        self.keep_stream_events
    }

    /// Forgets the event sequence numbers and times this store's commits
    /// continue from, so that the next commit reads them from the database
    /// again: for a process that stopped writing the database and may write
    /// it again after another process did (a partition moving back).
    pub async fn forget_sequences(&self) {
        *self.commit_lock.lock().await = Sequences::default();
    }

    /// Sets how long a commit waits to be confirmed durable.
    #[must_use]
    pub fn with_durability_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.durability_timeout = timeout;
        self
    }

    /// Held while a field index is added, from choosing its scope (the
    /// number its keys are stored under, unique in the store) until it is
    /// declared, and while indexes are dropped or rebuilt: two index
    /// builds, of any of the store's repositories, never choose the same
    /// scope, and a build that does not hold a repository's write lock is
    /// the only change to that collection's indexes meanwhile.
    pub async fn lock_index_scopes(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.index_scopes.lock().await
    }

    /// Opens a window in which a long reader reads the commits it will
    /// read for a while (the head, the log) and pins them
    /// ([`PinWindow::pin`]). A collection reads its roots only while no
    /// window is open (it waits for open ones, and a window opened
    /// meanwhile waits for it), so a commit that was the head or retained
    /// when read in a window stays readable until its pin is dropped,
    /// however many commits and collections follow. (A commit read in a
    /// window that a running collection had already decided to drop can
    /// still go: one outside `--keep-last` read from the log.)
    ///
    /// Keep a window open only to read and pin: a collection waits for it.
    pub async fn pin_window(&self) -> PinWindow<'_> {
        PinWindow {
            pins: &self.pins,
            _roots_wait: self.pin_windows.read().await,
        }
    }

    /// The pinned commits.
    pub(crate) fn pinned(&self) -> Vec<Cid> {
        self.pins
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .keys()
            .copied()
            .collect()
    }

    /// The underlying KV store.
    pub fn kv(&self) -> &K {
        &self.kv
    }

    pub(super) fn cache(&self) -> std::sync::MutexGuard<'_, ShardCache> {
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Updates the shard cache after a commit: drops the shards it
    /// `replaced` (the tree no longer uses them; a later read of one that
    /// another tree shares fetches it again). The commit's new shards were
    /// cached, with how each is stored, when it was staged.
    pub fn forget_shards(&self, replaced: &[Cid]) {
        let mut cache = self.cache();
        for cid in replaced {
            cache.remove(cid);
        }
    }

    pub(crate) async fn kv_get(&self, key: &[u8], view: View) -> Result<Option<Bytes>, Error> {
        match view {
            View::Written => self.kv.get(key).await,
            View::Durable => self.kv.get_durable(key).await,
        }
    }

    pub(crate) async fn kv_scan(
        &self,
        range: &KeyRange,
        reverse: bool,
        limit: usize,
        view: View,
    ) -> Result<Vec<(Bytes, Bytes)>, Error> {
        match view {
            View::Written => self.kv.scan(range, reverse, limit).await,
            View::Durable => self.kv.scan_durable(range, reverse, limit).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pins of one commit are counted: it stays pinned until the last goes.
    #[tokio::test]
    async fn a_commit_stays_pinned_until_its_last_pin_goes() {
        use multihash_codetable::{Code, MultihashDigest};
        let store = Store::new(crate::kv::memory::MemoryKv::new());
        let (one, two) = (
            Cid::new_v1(0x71, Code::Sha2_256.digest(b"one")),
            Cid::new_v1(0x71, Code::Sha2_256.digest(b"two")),
        );
        let window = store.pin_window().await;
        let (a, b, c) = (window.pin(one), window.pin(one), window.pin(two));
        drop(window);
        let pinned = |store: &Store<crate::kv::memory::MemoryKv>| {
            let mut p = store.pinned();
            p.sort();
            p
        };
        let mut both = vec![one, two];
        both.sort();
        assert_eq!(pinned(&store), both);
        drop(a);
        assert_eq!(pinned(&store), both);
        drop(c);
        assert_eq!(pinned(&store), vec![one]);
        drop(b);
        assert!(pinned(&store).is_empty());
    }
}

/// What the commit lock guards: the next firehose sequence number and the
/// stream's newest event time, each read from the store on first use.
#[derive(Debug, Default)]
pub(super) struct Sequences {
    pub(super) next_seq: Option<u64>,
    pub(super) last_stream_time: Option<u64>,
}
