//! Over a store that takes large writes in several batches (SlateDB), an
//! import writes its blocks ahead in bounded batches and then the
//! repository's state in one; it ends with exactly the stored contents of an
//! import in one batch, for a full file and for an incremental one.

use crate::common;

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use bytes::Bytes;
use keycodec::KeyRange;
use repo::{Repos, Write};
use serde_json::json;
use store::{Durability, Error, Kv, MemoryKv, Store, WriteOp};

const DID: &str = "did:web:batches.example";

/// A [`MemoryKv`] that asks for 2 KiB bulk batches and counts the batches
/// it applies.
#[derive(Default, Clone)]
struct SmallBatchKv {
    inner: MemoryKv,
    batches: Arc<AtomicUsize>,
}

impl Kv for SmallBatchKv {
    fn blobs(&self) -> store::Blobs {
        self.inner.blobs()
    }

    async fn get(&self, key: &[u8]) -> Result<Option<Bytes>, Error> {
        self.inner.get(key).await
    }

    async fn apply(&self, ops: Vec<WriteOp>) -> Result<Durability, Error> {
        self.batches.fetch_add(1, Ordering::Relaxed);
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

    fn bulk_batch_bytes(&self) -> Option<usize> {
        Some(2048)
    }
}

async fn everything<K: Kv>(kv: &K) -> Vec<(Bytes, Bytes)> {
    let all = KeyRange {
        start: Vec::new(),
        end: None,
    };
    kv.scan(&all, false, usize::MAX).await.unwrap()
}

async fn write_posts(repos: &Repos<MemoryKv>, from: usize, to: usize) {
    let repo = repos.open(DID).await.unwrap();
    let writes = (from..to)
        .map(|i| Write::Create {
            collection: "app.bsky.feed.post".into(),
            rkey: Some(format!("post-{i:04}")),
            value: json!({ "text": format!("post {i}"), "n": i }),
        })
        .collect();
    repo.apply_writes(writes, None).await.unwrap();
}

#[test]
fn batched_import_stores_what_a_single_batch_does() {
    common::rt().block_on(async {
        let source = common::repos();
        source.create(DID).await.unwrap();
        write_posts(&source, 0, 300).await;
        let repo = source.open(DID).await.unwrap();
        let old_rev = repo.head().await.unwrap().rev;
        let (full, _) = repo.export_car(Vec::new(), None, |_| {}).await.unwrap();
        write_posts(&source, 300, 400).await;
        let (since, _) = repo
            .export_car(Vec::new(), Some(old_rev), |_| {})
            .await
            .unwrap();

        let plain = MemoryKv::new();
        let plain_repos = Repos::new(Arc::new(Store::new(plain.clone())), common::env());
        let batched = SmallBatchKv::default();
        let batched_repos = Repos::new(Arc::new(Store::new(batched.clone())), common::env());

        for (file, records) in [(&full, 300), (&since, 400)] {
            let before = batched.batches.load(Ordering::Relaxed);
            let report = batched_repos
                .import_car(&file[..], Some(DID))
                .await
                .unwrap();
            assert_eq!(report.records, records);
            let used = batched.batches.load(Ordering::Relaxed) - before;
            assert!(used > 3, "{used} batches for {records} records");
            plain_repos.import_car(&file[..], Some(DID)).await.unwrap();
            assert_eq!(everything(&batched).await, everything(&plain).await);
        }
        assert_eq!(
            batched_repos.open(DID).await.unwrap().head().await.unwrap(),
            repo.head().await.unwrap()
        );
    });
}
