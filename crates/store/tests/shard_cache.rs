//! The store is the persistent Pail fetcher: a shard is read from the KV
//! store and verified once, then served decoded from a cache bounded by its
//! total size; corrupt shard bytes are an error, never a shard.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use bytes::Bytes;
use keycodec::KeyRange;
use pail::{Shard, ShardConfig, ShardFetcher, ShardValue};
use store::{Durability, Error, Kv, MemoryKv, Store, WriteOp};

/// Counts reads that reach the KV store.
#[derive(Default)]
struct CountingKv {
    inner: MemoryKv,
    gets: Arc<AtomicUsize>,
}

impl Kv for CountingKv {
    fn blobs(&self) -> store::Blobs {
        self.inner.blobs()
    }

    async fn get(&self, key: &[u8]) -> Result<Option<Bytes>, Error> {
        self.gets.fetch_add(1, Ordering::Relaxed);
        self.inner.get(key).await
    }
    async fn apply(&self, ops: Vec<WriteOp>) -> Result<Durability, Error> {
        self.inner.apply(ops).await
    }
    async fn scan(
        &self,
        range: &KeyRange,
        reverse: bool,
        limit: usize,
    ) -> Result<Vec<(Bytes, Bytes)>, Error> {
        self.inner.scan(range, reverse, limit).await
    }
}

fn shard(n: u64) -> Arc<Shard> {
    let v = Shard::empty(ShardConfig::default()).cid();
    let key = format!("key{n}");
    Arc::new(
        Shard::from_entries(
            ShardConfig::default(),
            [(key.as_str(), ShardValue::Data(v))],
        )
        .unwrap(),
    )
}

#[tokio::test]
async fn shards_are_read_once_then_cached_within_a_bound() {
    let kv = CountingKv::default();
    let gets = Arc::clone(&kv.gets);
    let one = shard(1).bytes().len();
    // Room for three shards of this size.
    let store = Store::with_cache_bytes(kv, 3 * one);
    let shards: Vec<Arc<Shard>> = (0..5).map(shard).collect();
    let blocks: Vec<_> = shards
        .iter()
        .map(|s| (s.cid(), Bytes::copy_from_slice(s.bytes())))
        .collect();
    store.put_blocks(&blocks).await.unwrap();

    for _ in 0..3 {
        let got = store.get_shard(&shards[0].cid()).await.unwrap();
        assert_eq!(got.cid(), shards[0].cid());
    }
    assert_eq!(
        gets.load(Ordering::Relaxed),
        1,
        "read from the KV store once"
    );

    // Filling the cache past its bound evicts the oldest shard.
    for s in &shards[1..4] {
        store.get_shard(&s.cid()).await.unwrap();
    }
    let before = gets.load(Ordering::Relaxed);
    store.get_shard(&shards[0].cid()).await.unwrap();
    assert_eq!(
        gets.load(Ordering::Relaxed),
        before + 1,
        "evicted, so read again"
    );
    store.get_shard(&shards[3].cid()).await.unwrap();
    assert_eq!(
        gets.load(Ordering::Relaxed),
        before + 1,
        "recent shards stay cached"
    );
}

#[tokio::test]
async fn corrupt_or_missing_shards_are_errors() {
    let store = Store::new(MemoryKv::new());
    let s = shard(9);
    assert!(
        matches!(store.get_shard(&s.cid()).await, Err(pail::Error::MissingBlock(c)) if c == s.cid())
    );
    store
        .kv()
        .write(vec![WriteOp::Put(
            keycodec::records::block_key(&s.cid().to_bytes()),
            Bytes::from_static(b"rot"),
        )])
        .await
        .unwrap();
    let err = store.get_shard(&s.cid()).await.unwrap_err();
    assert!(err.to_string().contains(&s.cid().to_string()), "{err}");
}

#[tokio::test]
async fn shards_a_commit_replaced_leave_the_cache() {
    let kv = CountingKv::default();
    let gets = Arc::clone(&kv.gets);
    let store = Store::new(kv);
    let (old, new) = (shard(1), shard(2));
    let blocks: Vec<_> = [&old, &new]
        .iter()
        .map(|s| (s.cid(), Bytes::copy_from_slice(s.bytes())))
        .collect();
    store.put_blocks(&blocks).await.unwrap();
    store.get_shard(&old.cid()).await.unwrap();
    store.get_shard(&new.cid()).await.unwrap();
    let read = gets.load(Ordering::Relaxed);
    store.forget_shards(&[old.cid()]);
    store.get_shard(&new.cid()).await.unwrap();
    assert_eq!(
        gets.load(Ordering::Relaxed),
        read,
        "the kept shard is cached"
    );
    store.get_shard(&old.cid()).await.unwrap();
    assert!(
        gets.load(Ordering::Relaxed) > read,
        "the replaced one is read again"
    );
}
