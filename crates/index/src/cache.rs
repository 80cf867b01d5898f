//! A bounded in-process cache of decoded bitmap rows and views, and of
//! the records result pages read.
//!
//! Entries belong to one repository head and index epoch: a query that
//! finds the stored head moved (another process wrote, or an import
//! replaced it) or the epoch raised (another process declared, dropped or
//! rebuilt an index) starts from an empty cache. The writer keeps its
//! cache warm instead: each commit's row changes are applied to the cached
//! rows, and the records it changes are dropped, under the lock that keeps
//! queries out while the commit is applied to the store.

use std::{collections::BTreeMap, sync::Arc};

use cid::Cid;
use roaring::RoaringBitmap;

use store::{Block, ReadStamp};

use crate::{
    columns::{Packed, RkeyList},
    decl::Declared,
    rows::{RowDeltas, RowId, SHARD_BITS},
    values::Keyword,
};

/// A cached bitmap: one row, or every row of a view (bit-sliced indexes
/// and `--top` read whole views).
#[derive(Debug, Clone)]
pub enum Cached {
    Row(RoaringBitmap),
    View(BTreeMap<u64, RoaringBitmap>),
    /// Every row of a bit-sliced view for the columns of `containers`
    /// only (`column >> 16`; an aggregate over columns in a few of them),
    /// cached under the whole view's key until the whole view is read.
    /// Rows may hold columns of other containers (a commit's changes are
    /// applied to every row), never all of them: only the columns of
    /// `containers` may be read from it.
    ViewPart {
        rows: BTreeMap<u64, RoaringBitmap>,
        containers: std::ops::RangeInclusive<u64>,
    },
    /// A packed column block's rkeys (blocks are never rewritten).
    Rkeys(RkeyList),
}

impl Cached {
    fn bytes(&self) -> usize {
        match self {
            Self::Row(b) => b.serialized_size(),
            Self::View(rows) | Self::ViewPart { rows, .. } => {
                rows.values().map(RoaringBitmap::serialized_size).sum()
            }
            Self::Rkeys(rkeys) => rkeys.heap_bytes(),
        }
    }
}

/// What a cache entry holds.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum CacheKey {
    /// A row of a field's view, or the whole view (`row: None`).
    Bits {
        scope: u32,
        field: String,
        view: String,
        row: Option<u64>,
    },
    /// Packed column block `block`'s rkeys.
    Rkeys { scope: u32, block: u64 },
}

/// The cache; see the module documentation.
pub struct IndexCache {
    head: Option<Cid>,
    /// `None` until a query has read it (after [`IndexCache::clear`]).
    epoch: Option<u64>,
    /// The store's read stamp taken before `head` and `epoch` were last
    /// read, and when (microseconds), while they are the ones cached.
    checked: Option<(ReadStamp, u64)>,
    map: lru::LruCache<CacheKey, (Arc<Cached>, usize)>,
    bytes: usize,
    limit: usize,
    /// Declarations by collection, as last read.
    declared: std::collections::HashMap<String, Arc<Vec<Declared>>>,
    /// Dictionary rows found (entries are never rewritten, only deleted
    /// with their index, which clears this cache).
    rows: std::collections::HashMap<(u32, String, Keyword), u64>,
    /// Shards in use by scope: at least one past the highest live
    /// column's (commits only raise it; a count higher than needed costs
    /// an empty scan, never a wrong answer).
    shards: std::collections::HashMap<u32, u64>,
    /// Packed column mappings by scope (written by builds only, which
    /// clear this cache).
    packed: std::collections::HashMap<u32, Arc<Packed>>,
    /// How many columns each scope's build packed (the same writes as
    /// `packed`), for readers that need no lookup by rkey.
    packed_columns: std::collections::HashMap<u32, u64>,
    /// Records read for result pages, by path (`collection/rkey`), with
    /// the bytes each is counted as; at most `limit / RECORDS_SHARE` bytes,
    /// so that pages never evict the rows queries need.
    records: lru::LruCache<String, (Block, usize)>,
    record_bytes: usize,
}

/// The records' part of the cache's limit: one eighth.
const RECORDS_SHARE: usize = 8;

/// What a cached record is counted as beyond its bytes and path (the
/// entry, its CID and the LRU's links).
const RECORD_OVERHEAD: usize = 96;

impl std::fmt::Debug for IndexCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexCache")
            .field("entries", &self.map.len())
            .field("bytes", &self.bytes)
            .field("limit", &self.limit)
            .finish()
    }
}

impl IndexCache {
    /// A cache of at most `limit` bytes of (serialized) bitmaps.
    pub fn new(limit: usize) -> Self {
        Self {
            head: None,
            epoch: None,
            checked: None,
            map: lru::LruCache::unbounded(),
            bytes: 0,
            limit,
            declared: std::collections::HashMap::new(),
            rows: std::collections::HashMap::new(),
            shards: std::collections::HashMap::new(),
            packed: std::collections::HashMap::new(),
            packed_columns: std::collections::HashMap::new(),
            records: lru::LruCache::unbounded(),
            record_bytes: 0,
        }
    }

    /// Whether the cache holds entries of `head` and of an index epoch read
    /// since it was last emptied.
    pub fn synced_with(&self, head: Option<Cid>) -> bool {
        self.head == head && self.epoch.is_some()
    }

    /// The cached head, when `head` and `epoch` were read under `stamp`
    /// (and, for a stamp trusted only so long, at most that long before
    /// `now_micros`): nothing visible has changed since, so they stand.
    pub fn checked_head(&self, stamp: ReadStamp, now_micros: u64) -> Option<Option<Cid>> {
        let (checked, at) = self.checked?;
        let fresh = stamp
            .trust_micros()
            .is_none_or(|trust| now_micros.saturating_sub(at) <= trust);
        (checked == stamp && fresh && self.epoch.is_some()).then_some(self.head)
    }

    /// Records that the cache's head and epoch were read under `stamp`
    /// (taken before the reads; `None` when the store has none) at
    /// `now_micros`.
    pub fn set_checked(&mut self, stamp: Option<ReadStamp>, now_micros: u64) {
        self.checked = stamp.map(|stamp| (stamp, now_micros));
    }

    /// Empties the cache unless it holds entries of `head` and `epoch`.
    pub fn sync(&mut self, head: Option<Cid>, epoch: u64) {
        if self.head != head || self.epoch != Some(epoch) {
            self.clear();
            self.head = head;
            self.epoch = Some(epoch);
        }
    }

    /// Empties the cache.
    pub fn clear(&mut self) {
        self.map.clear();
        self.bytes = 0;
        self.head = None;
        self.epoch = None;
        self.checked = None;
        self.declared.clear();
        self.rows.clear();
        self.shards.clear();
        self.packed.clear();
        self.packed_columns.clear();
        self.records.clear();
        self.record_bytes = 0;
    }

    /// The record at `path` (`collection/rkey`), if cached, marked as
    /// recently used.
    pub fn record(&mut self, path: &str) -> Option<Block> {
        self.records.get(path).map(|(block, _)| block.clone())
    }

    /// Caches the record at `path` (read at the cache's head), evicting
    /// the least recently used records past the records' share.
    pub fn insert_record(&mut self, path: String, block: Block) {
        let size = block.bytes().len() + path.len() + RECORD_OVERHEAD;
        let limit = self.limit / RECORDS_SHARE;
        if size > limit {
            return;
        }
        if let Some((_, old)) = self.records.put(path, (block, size)) {
            self.record_bytes -= old;
        }
        self.record_bytes += size;
        while self.record_bytes > limit {
            match self.records.pop_lru() {
                Some((_, (_, s))) => self.record_bytes -= s,
                None => break,
            }
        }
    }

    /// Drops the record at `path` (a commit changed or deleted it).
    pub fn forget_record(&mut self, path: &str) {
        if let Some((_, size)) = self.records.pop(path) {
            self.record_bytes -= size;
        }
    }

    /// The packed column blocks of `scope`, if cached.
    pub fn packed(&self, scope: u32) -> Option<Arc<Packed>> {
        self.packed.get(&scope).cloned()
    }

    /// Caches the packed column blocks of `scope`.
    pub fn set_packed(&mut self, scope: u32, packed: Arc<Packed>) {
        self.packed.insert(scope, packed);
    }

    /// How many columns the build of `scope` packed, if cached.
    pub fn packed_columns(&self, scope: u32) -> Option<u64> {
        self.packed_columns.get(&scope).copied()
    }

    /// Caches how many columns the build of `scope` packed.
    pub fn set_packed_columns(&mut self, scope: u32, columns: u64) {
        self.packed_columns.insert(scope, columns);
    }

    /// The declarations of `collection`, if cached.
    pub fn declared(&self, collection: &str) -> Option<Arc<Vec<Declared>>> {
        self.declared.get(collection).cloned()
    }

    /// Caches the declarations of `collection`.
    pub fn set_declared(&mut self, collection: &str, declared: Arc<Vec<Declared>>) {
        self.declared.insert(collection.to_owned(), declared);
    }

    /// The dictionary row of `value` in the keyword index at `path`, if cached.
    pub fn row_of(&self, scope: u32, path: &str, value: &Keyword) -> Option<u64> {
        // A miss allocates a key; dictionaries are small next to the rows.
        self.rows
            .get(&(scope, path.to_owned(), value.clone()))
            .copied()
    }

    /// Caches the dictionary row of `value`.
    pub fn set_row_of(&mut self, scope: u32, path: &str, value: Keyword, row: u64) {
        self.rows.insert((scope, path.to_owned(), value), row);
    }

    /// How many shards `scope` spans, if cached.
    pub fn shards(&self, scope: u32) -> Option<u64> {
        self.shards.get(&scope).copied()
    }

    /// Caches how many shards `scope` spans.
    pub fn set_shards(&mut self, scope: u32, shards: u64) {
        self.shards.insert(scope, shards);
    }

    /// A cached row, marked as recently used.
    pub(crate) fn get(&mut self, key: &CacheKey) -> Option<Arc<Cached>> {
        self.map.get(key).map(|(v, _)| Arc::clone(v))
    }

    /// Caches a row (unless it alone exceeds the limit), evicting the least
    /// recently used; the row either way.
    pub(crate) fn insert(&mut self, key: CacheKey, value: Cached) -> Arc<Cached> {
        let size = value.bytes();
        let value = Arc::new(value);
        if size > self.limit {
            return value;
        }
        if let Some((_, old)) = self.map.put(key, (Arc::clone(&value), size)) {
            self.bytes -= old;
        }
        self.bytes += size;
        while self.bytes > self.limit {
            match self.map.pop_lru() {
                Some((_, (_, s))) => self.bytes -= s,
                None => break,
            }
        }
        value
    }

    /// Applies a commit's row changes in `scope` to the cached rows.
    pub fn apply(&mut self, scope: u32, deltas: &RowDeltas) {
        if let Some(shards) = self.shards.get_mut(&scope) {
            for delta in deltas.0.values() {
                if let Some(max) = delta.set.max() {
                    *shards = (*shards).max((u64::from(max) >> SHARD_BITS) + 1);
                }
            }
        }
        for (row, delta) in &deltas.0 {
            for whole in [false, true] {
                let key = key(scope, row, whole);
                let Some((value, size)) = self.map.peek_mut(&key) else {
                    continue;
                };
                let cached = Arc::make_mut(value);
                let bits = match cached {
                    Cached::Row(b) => b,
                    Cached::View(rows) | Cached::ViewPart { rows, .. } => {
                        rows.entry(row.row).or_default()
                    }
                    Cached::Rkeys(_) => continue,
                };
                *bits -= &delta.clear;
                *bits |= &delta.set;
                let new_size = cached.bytes();
                self.bytes = self.bytes - *size + new_size;
                *size = new_size;
            }
        }
    }

    /// Marks the cache as holding entries of `head` (after a commit whose
    /// changes were applied to it).
    pub fn set_head(&mut self, head: Cid) {
        self.head = Some(head);
    }
}

/// The cache key of packed column block `k`.
pub(crate) fn rkeys_key(scope: u32, block: u64) -> CacheKey {
    CacheKey::Rkeys { scope, block }
}

/// The cache key of a whole view (or a part of it).
pub(crate) fn view_key(scope: u32, field: &str, view: &str) -> CacheKey {
    CacheKey::Bits {
        scope,
        field: field.to_owned(),
        view: view.to_owned(),
        row: None,
    }
}

pub(crate) fn key(scope: u32, row: &RowId, whole_view: bool) -> CacheKey {
    CacheKey::Bits {
        scope,
        field: row.field.clone(),
        view: row.view.clone(),
        row: (!whole_view).then_some(row.row),
    }
}

#[cfg(test)]
mod tests {
    use super::{IndexCache, RECORD_OVERHEAD, RECORDS_SHARE, RowDeltas, RowId};
    use crate::rows::SHARD_BITS;

    #[test]
    fn records_keep_to_their_share_and_the_most_recently_used() {
        let limit = 1 << 16;
        let mut cache = IndexCache::new(limit);
        let block = |i: u32| store::Block::new(0x71, bytes::Bytes::from(vec![i as u8; 500]));
        let per = 500 + "c.x/00000".len() + RECORD_OVERHEAD;
        let room = limit / RECORDS_SHARE / per;
        for i in 0..100u32 {
            cache.insert_record(format!("c.x/{i:05}"), block(i));
            // Reading the first keeps it the most recently used.
            assert!(cache.record("c.x/00000").is_some(), "after {i}");
        }
        let kept: Vec<u32> = (0..100)
            .filter(|i| cache.record(&format!("c.x/{i:05}")).is_some())
            .collect();
        let mut want = vec![0];
        want.extend(100 - (room as u32 - 1)..100);
        assert_eq!(kept, want);
        assert_eq!(cache.record("c.x/00099"), Some(block(99)));
        cache.forget_record("c.x/00099");
        assert_eq!(cache.record("c.x/00099"), None);
        cache.clear();
        assert_eq!(cache.record("c.x/00000"), None);
    }

    #[test]
    fn a_commit_into_a_new_shard_raises_the_cached_shard_count() {
        let mut cache = IndexCache::new(1 << 20);
        let mut deltas = RowDeltas::default();
        deltas.set(RowId::columns(), (1 << SHARD_BITS) + 5);
        // Nothing cached for the scope: nothing to raise.
        cache.apply(3, &deltas);
        assert_eq!(cache.shards(3), None);
        cache.set_shards(3, 1);
        cache.apply(3, &deltas);
        assert_eq!(cache.shards(3), Some(2));
        // Clearing bits (deletes) never lowers it; other scopes keep theirs.
        let mut clears = RowDeltas::default();
        clears.clear(RowId::columns(), (1 << SHARD_BITS) + 5);
        cache.set_shards(4, 1);
        cache.apply(3, &clears);
        assert_eq!((cache.shards(3), cache.shards(4)), (Some(2), Some(1)));
        cache.clear();
        assert_eq!(cache.shards(3), None);
    }

    #[test]
    fn a_checked_head_stands_while_its_stamp_does_and_a_settling_one_for_its_time() {
        let head = Some(cid::Cid::default());
        let exact = store::ReadStamp::exact(1, (5, 0));
        let settling = store::ReadStamp::settling(1, (5, 9), 10);
        let mut cache = IndexCache::new(1 << 20);
        cache.set_checked(Some(exact), 100);
        // No epoch read yet: nothing stands.
        assert_eq!(cache.checked_head(exact, 100), None);
        cache.sync(head, 3);
        cache.set_checked(Some(exact), 100);
        assert_eq!(cache.checked_head(exact, u64::MAX), Some(head));
        assert_eq!(
            cache.checked_head(store::ReadStamp::exact(1, (6, 0)), 100),
            None
        );
        assert_eq!(
            cache.checked_head(store::ReadStamp::exact(2, (5, 0)), 100),
            None
        );
        assert_eq!(cache.checked_head(settling, 100), None);
        cache.set_checked(Some(settling), 100);
        assert_eq!(cache.checked_head(settling, 110), Some(head));
        assert_eq!(cache.checked_head(settling, 111), None);
        // A new head or epoch empties the cache, and its check with it.
        cache.sync(None, 3);
        assert_eq!(cache.checked_head(settling, 100), None);
        cache.set_checked(Some(exact), 100);
        cache.clear();
        assert_eq!(cache.checked_head(exact, 100), None);
    }
}
