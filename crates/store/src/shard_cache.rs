//! The decoded-shard cache: shards by CID, with how each is stored, bounded
//! by the bytes it keeps alive.

use std::{collections::VecDeque, sync::Arc};

use bytes::Bytes;
use cid::Cid;
use foldhash::HashMap;
use pail::Shard;

/// The full block a stored delta is a change to.
#[derive(Debug, Clone)]
pub(crate) struct Anchor {
    pub(crate) cid: Cid,
    pub(crate) bytes: Bytes,
}

/// A cached shard and how it is stored.
#[derive(Debug)]
struct Cached {
    shard: Arc<Shard>,
    /// `None`: stored in full.
    anchor: Option<Anchor>,
}

/// An anchor some cached entries hold.
#[derive(Debug)]
struct HeldAnchor {
    len: usize,
    /// How many entries hold it (at least one while it is in the map).
    holders: usize,
}

/// Decoded shards by CID; the oldest entries go first.
///
/// Invariant: `bytes` is the encoded size of every cached shard plus that of
/// every distinct anchor an entry holds (the versions made from one anchor
/// share its bytes, so it is counted once), and stays at most `limit`.
#[derive(Debug, Default)]
pub(crate) struct ShardCache {
    map: HashMap<Cid, Cached>,
    order: VecDeque<Cid>,
    /// The anchors entries hold, each counted in `bytes` once.
    anchors: HashMap<Cid, HeldAnchor>,
    bytes: usize,
    limit: usize,
}

impl ShardCache {
    /// An empty cache that keeps at most `limit` bytes alive.
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit,
            ..Self::default()
        }
    }

    pub(crate) fn get(&self, cid: &Cid) -> Option<Arc<Shard>> {
        self.map.get(cid).map(|c| Arc::clone(&c.shard))
    }

    /// The full block to store a new version of the shard `cid` as a
    /// change to: the shard itself if it is stored in full, else its anchor.
    pub(crate) fn anchor_for(&self, cid: &Cid) -> Option<Anchor> {
        let cached = self.map.get(cid)?;
        Some(cached.anchor.clone().unwrap_or_else(|| Anchor {
            cid: *cid,
            bytes: cached.shard.encoded(),
        }))
    }

    pub(crate) fn remove(&mut self, cid: &Cid) {
        self.evict(cid);
        // `order` still names removed shards; it is compacted when they
        // outnumber the cached ones, so it stays within twice the map.
        if self.order.len() > 2 * self.map.len() + 64 {
            let map = &self.map;
            self.order.retain(|c| map.contains_key(c));
        }
    }

    /// Caches `shard`, stored in full or as a change to `anchor`. A shard
    /// that would not fit alone is not cached, and leaves the cache if it
    /// was there: an entry must never say how a shard was stored before
    /// (a delta made against a shard believed full would lose its anchor).
    pub(crate) fn insert(&mut self, shard: Arc<Shard>, anchor: Option<Anchor>) {
        let cid = shard.cid();
        if shard.bytes().len() + anchor.as_ref().map_or(0, |a| a.bytes.len()) > self.limit {
            self.evict(&cid);
            return;
        }
        self.hold(anchor.as_ref());
        if let Some(cached) = self.map.get_mut(&cid) {
            // What was just written is how it is stored now.
            let old = std::mem::replace(&mut cached.anchor, anchor);
            self.release(old.as_ref());
        } else {
            self.bytes += shard.bytes().len();
            self.map.insert(cid, Cached { shard, anchor });
            self.order.push_back(cid);
        }
        while self.bytes > self.limit {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            self.evict(&old);
        }
    }

    fn evict(&mut self, cid: &Cid) {
        if let Some(cached) = self.map.remove(cid) {
            self.bytes -= cached.shard.bytes().len();
            self.release(cached.anchor.as_ref());
        }
    }

    /// Counts one more entry holding `anchor`.
    fn hold(&mut self, anchor: Option<&Anchor>) {
        if let Some(anchor) = anchor {
            let held = self.anchors.entry(anchor.cid).or_insert(HeldAnchor {
                len: anchor.bytes.len(),
                holders: 0,
            });
            if held.holders == 0 {
                self.bytes += held.len;
            }
            held.holders += 1;
        }
    }

    /// Counts one entry fewer holding `anchor`.
    fn release(&mut self, anchor: Option<&Anchor>) {
        let Some(anchor) = anchor else { return };
        if let Some(held) = self.anchors.get_mut(&anchor.cid) {
            held.holders -= 1;
            if held.holders == 0 {
                self.bytes -= held.len;
                self.anchors.remove(&anchor.cid);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use pail::{ShardConfig, ShardValue};

    use super::*;

    fn shard(n: u64) -> Arc<Shard> {
        let value = Shard::empty(ShardConfig::default()).cid();
        let key = format!("key{n}");
        Arc::new(
            Shard::from_entries(
                ShardConfig::default(),
                [(key.as_str(), ShardValue::Data(value))],
            )
            .unwrap_or_else(|e| panic!("{e}")),
        )
    }

    fn anchor(n: u64, len: usize) -> Anchor {
        let shard = shard(1_000_000 + n);
        Anchor {
            cid: shard.cid(),
            bytes: Bytes::from(vec![0; len]),
        }
    }

    /// What the cache counts, recomputed from its entries.
    fn counted(cache: &ShardCache) -> usize {
        let shards: usize = cache.map.values().map(|c| c.shard.bytes().len()).sum();
        let anchors: HashMap<Cid, usize> = cache
            .map
            .values()
            .filter_map(|c| c.anchor.as_ref().map(|a| (a.cid, a.bytes.len())))
            .collect();
        shards + anchors.values().sum::<usize>()
    }

    /// A commit replaces the shard it added before: the cache holds one
    /// shard, and its eviction order stays bounded.
    #[test]
    fn replaced_shards_leave_the_cache_and_its_order() {
        let mut cache = ShardCache::new(usize::MAX);
        let mut previous: Option<Arc<Shard>> = None;
        for n in 0..10_000 {
            let next = shard(n);
            if let Some(p) = previous {
                cache.remove(&p.cid());
            }
            cache.insert(Arc::clone(&next), None);
            previous = Some(next);
        }
        assert_eq!(cache.map.len(), 1);
        assert_eq!(cache.bytes, previous.map_or(0, |s| s.bytes().len()));
        assert!(
            cache.order.len() <= 2 * cache.map.len() + 65,
            "{}",
            cache.order.len()
        );
    }

    /// Anchors count toward the bound, each once however many versions
    /// hold it, and leave the count with the last entry holding them.
    #[test]
    fn anchors_are_counted_once_and_within_the_bound() {
        let limit = 20_000;
        let mut cache = ShardCache::new(limit);
        for n in 0..2_000 {
            // Runs of four versions share an anchor, as deltas do.
            let held = (n % 3 != 0).then(|| anchor(n / 4, 1_000 + (n / 4) as usize % 500));
            cache.insert(shard(n), held);
            assert_eq!(cache.bytes, counted(&cache), "after {n}");
            assert!(cache.bytes <= limit, "{} > {limit}", cache.bytes);
            if n % 7 == 0 {
                cache.remove(&shard(n.saturating_sub(2)).cid());
                assert_eq!(cache.bytes, counted(&cache), "after removing {n} - 2");
            }
        }
        // Storing a cached shard differently moves its anchor's count.
        let last = shard(1_999);
        cache.insert(Arc::clone(&last), Some(anchor(9_999, 700)));
        assert_eq!(cache.bytes, counted(&cache));
        cache.insert(Arc::clone(&last), None);
        assert_eq!(cache.bytes, counted(&cache));
        assert!(!cache.anchors.contains_key(&anchor(9_999, 700).cid));
        for cid in cache.map.keys().copied().collect::<Vec<_>>() {
            cache.remove(&cid);
        }
        assert_eq!((cache.bytes, cache.anchors.len()), (0, 0));
    }

    /// A shard whose bytes and anchor together exceed the bound is not
    /// cached (it would evict everything and then itself).
    #[test]
    fn an_entry_larger_than_the_bound_is_not_cached() {
        let one = shard(1);
        let mut cache = ShardCache::new(one.bytes().len() + 10);
        cache.insert(Arc::clone(&one), Some(anchor(1, 11)));
        assert!(cache.get(&one.cid()).is_none());
        assert_eq!(cache.bytes, 0);
        cache.insert(Arc::clone(&one), Some(anchor(1, 10)));
        assert!(cache.get(&one.cid()).is_some());
        assert_eq!(cache.bytes, one.bytes().len() + 10);
        // Written again with an anchor too large to keep: the entry goes,
        // rather than keep saying the shard is a change to the old anchor.
        cache.insert(Arc::clone(&one), Some(anchor(2, 11)));
        assert!(cache.anchor_for(&one.cid()).is_none());
        assert_eq!((cache.bytes, cache.anchors.len()), (0, 0));
    }
}
