//! [`MemoryKv`]: an in-memory [`Kv`](super::interface::Kv) for tests.

use std::{
    collections::BTreeMap,
    future::Future,
    ops::Bound,
    sync::{
        Arc, RwLock,
        atomic::{AtomicU64, Ordering},
    },
};

use bytes::Bytes;
use keycodec::KeyRange;

use super::interface::{Durability, Kv, ReadStamp, WriteOp};
use crate::error::Error;

/// A key held inline (no separate allocation, so a search touches only
/// the map's own nodes) up to 40 bytes, in 48 bytes: a block's key (38
/// bytes for a SHA-256 CID) fits. Blocks arrive in random key order, so
/// their inserts are the map's cache misses, and small inline keys keep
/// its nodes small; longer keys (index rows, commit log) live on the heap,
/// but a commit's arrive in order and their searches stay on a warm path.
/// (`apply_writes` of 1,000,000 records is 2–14% faster than with 64
/// inline bytes in an 80-byte key, `docs/benchmarks.md`.)
///
/// Ordered as its bytes are, compared 8 bytes at a time: datarepo's keys
/// share long prefixes (a repository's index keys agree on their first
/// ~30 bytes), so a search spends most of its time comparing them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct InlineKey(smallvec::SmallVec<[u8; 40]>);

const _: () = assert!(std::mem::size_of::<InlineKey>() == 48);

impl InlineKey {
    fn from_slice(key: &[u8]) -> Self {
        Self(smallvec::SmallVec::from_slice(key))
    }
}

impl std::ops::Deref for InlineKey {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl std::borrow::Borrow<[u8]> for InlineKey {
    fn borrow(&self) -> &[u8] {
        &self.0
    }
}

impl Ord for InlineKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        compare_bytes(&self.0, &other.0)
    }
}

impl PartialOrd for InlineKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// `a.cmp(b)` for byte strings, a word at a time.
fn compare_bytes(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let (mut wa, mut wb) = (a.chunks_exact(8), b.chunks_exact(8));
    for (x, y) in wa.by_ref().zip(wb.by_ref()) {
        let x = u64::from_be_bytes(x.try_into().unwrap_or_default());
        let y = u64::from_be_bytes(y.try_into().unwrap_or_default());
        if x != y {
            return x.cmp(&y);
        }
    }
    let equal = a.len().min(b.len()) / 8 * 8;
    a[equal..].cmp(&b[equal..])
}

/// A `BTreeMap` behind a lock: for tests, and as a model.
#[derive(Debug, Default, Clone)]
pub struct MemoryKv {
    map: Arc<RwLock<BTreeMap<InlineKey, Bytes>>>,
    /// Writes begun (counted under the map's write lock, so a read that
    /// sees a count sees every write counted before it).
    writes: Arc<AtomicU64>,
    /// Blob bytes, in memory too (shared by the store's clones).
    blobs: crate::Blobs,
}

impl MemoryKv {
    /// An empty store.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }
}

fn bounds(range: &KeyRange) -> (Bound<InlineKey>, Bound<InlineKey>) {
    (
        Bound::Included(InlineKey::from_slice(&range.start)),
        range.end.as_deref().map_or(Bound::Unbounded, |e| {
            Bound::Excluded(InlineKey::from_slice(e))
        }),
    )
}

impl Kv for MemoryKv {
    fn blobs(&self) -> crate::Blobs {
        self.blobs.clone()
    }

    fn read_stamp(&self) -> Option<ReadStamp> {
        Some(ReadStamp::exact(0, (self.writes.load(Ordering::SeqCst), 0)))
    }

    fn get(&self, key: &[u8]) -> impl Future<Output = Result<Option<Bytes>, Error>> + Send {
        let map = self
            .map
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        std::future::ready(Ok(map.get(key).cloned()))
    }

    fn apply(&self, ops: Vec<WriteOp>) -> impl Future<Output = Result<Durability, Error>> + Send {
        let mut map = self
            .map
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.writes.fetch_add(1, Ordering::SeqCst);
        // A batch of puts as large as the map is merged in one pass (sorted
        // and bulk-built), not inserted key by key.
        let bulk = ops.len() >= 4096
            && ops.len() * 2 >= map.len()
            && ops.iter().all(|op| matches!(op, WriteOp::Put(..)));
        if bulk {
            let mut puts = Vec::with_capacity(ops.len());
            puts.extend(ops.into_iter().filter_map(|op| match op {
                WriteOp::Put(k, v) => Some((InlineKey::from_slice(&k), v)),
                WriteOp::Delete(_) | WriteOp::Merge(..) => None,
            }));
            let mut batch: BTreeMap<InlineKey, Bytes> = puts.into_iter().collect();
            // `append` keeps `batch`'s value for keys in both: later writes win.
            map.append(&mut batch);
        } else {
            for op in ops {
                match op {
                    WriteOp::Put(k, v) => {
                        map.insert(InlineKey::from_slice(&k), v);
                    }
                    WriteOp::Delete(k) => {
                        map.remove(k.as_slice());
                    }
                    WriteOp::Merge(k, operand) => {
                        let key = InlineKey::from_slice(&k);
                        let merged = crate::bitmap::merge_values(
                            map.get(&key).map(AsRef::as_ref),
                            [operand.as_ref()],
                        );
                        match merged {
                            Ok(value) => {
                                map.insert(key, value);
                            }
                            // SlateDB fails the read of a key whose operand does
                            // not merge; here the write fails instead.
                            Err(e) => {
                                return std::future::ready(Err(Error::Malformed {
                                    what: "bitmap container",
                                    reason: e.to_string(),
                                }));
                            }
                        }
                    }
                }
            }
        }
        std::future::ready(Ok(Durability(None)))
    }

    fn scan(
        &self,
        range: &KeyRange,
        reverse: bool,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<(Bytes, Bytes)>, Error>> + Send {
        let map = self
            .map
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let iter = map.range(bounds(range));
        let pick = |(k, v): (&InlineKey, &Bytes)| (Bytes::copy_from_slice(k), v.clone());
        let out: Vec<_> = if reverse {
            iter.rev().take(limit).map(pick).collect()
        } else {
            iter.take(limit).map(pick).collect()
        };
        std::future::ready(Ok(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Word-at-a-time comparison orders keys as their bytes do (the
        /// map's lookups by `&[u8]` rely on it): keys of every length
        /// around word boundaries, mostly sharing a prefix.
        #[test]
        fn inline_keys_order_as_their_bytes(
            prefix in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40),
            a in proptest::collection::vec(0u8..4, 0..20),
            b in proptest::collection::vec(0u8..4, 0..20),
        ) {
            let a = [prefix.as_slice(), &a].concat();
            let b = [prefix.as_slice(), &b].concat();
            let (ka, kb) = (InlineKey::from_slice(&a), InlineKey::from_slice(&b));
            proptest::prop_assert_eq!(ka.cmp(&kb), a.cmp(&b));
            proptest::prop_assert_eq!(ka == kb, a == b);
        }
    }
}
