//! A bulk commit (an import's) writes its blocks ahead in bounded batches,
//! then changes the visible state (head, commit log, record index) in one
//! batch; it ends exactly where a plain commit does, a stale one writes
//! nothing, and garbage collection never deletes blocks written ahead of
//! their head.

use crate::common;

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use cid::Cid;
use ipld_core::ipld::Ipld;
use keycodec::{KeyRange, RecordType};
use store::{
    Block, Commit, Durability, Error, Head, Kv, MemoryKv, RecordChange, Retention, Store, WriteOp,
};
use tokio::sync::Notify;

const REPO: &str = "did:web:bulk";

/// A [`MemoryKv`] that asks for small bulk batches, records the keys of
/// every batch it applies, and can hold one batch until released.
#[derive(Default, Clone)]
struct RecordingKv {
    inner: MemoryKv,
    batch_bytes: Option<usize>,
    batches: Arc<Mutex<Vec<Vec<Vec<u8>>>>>,
    /// (batch number to hold, signalled when it arrives, released by).
    hold: Option<(usize, Arc<Notify>, Arc<Notify>)>,
}

impl Kv for RecordingKv {
    fn blobs(&self) -> store::Blobs {
        self.inner.blobs()
    }

    async fn get(&self, key: &[u8]) -> Result<Option<Bytes>, Error> {
        self.inner.get(key).await
    }

    async fn apply(&self, ops: Vec<WriteOp>) -> Result<Durability, Error> {
        let n = {
            let mut batches = self.batches.lock().unwrap();
            batches.push(
                ops.iter()
                    .map(|op| match op {
                        WriteOp::Put(k, _) | WriteOp::Delete(k) | WriteOp::Merge(k, _) => k.clone(),
                    })
                    .collect(),
            );
            batches.len() - 1
        };
        if let Some((at, arrived, release)) = &self.hold
            && *at == n
        {
            arrived.notify_one();
            release.notified().await;
        }
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
        self.batch_bytes
    }
}

fn is_block_key(key: &[u8]) -> bool {
    let range = RecordType::Block.range();
    key >= range.start.as_slice() && range.end.as_deref().is_none_or(|end| key < end)
}

/// A commit of `n` records (raw blocks of ~20 bytes) whose commit block,
/// a dag-cbor list of links, reaches them all.
fn commit(n: u64, expected: Option<Cid>) -> Commit {
    let records: Vec<RecordChange> = (0..n)
        .map(|i| {
            let (cid, bytes) = common::block(i);
            RecordChange {
                collection: "app.bulk.rec".into(),
                rkey: format!("k{i:04}"),
                record: Some(Block::verify(cid, bytes).unwrap()),
            }
        })
        .collect();
    let links = records
        .iter()
        .filter_map(|r| r.record.as_ref())
        .map(|b| Ipld::Link(b.cid()))
        .collect();
    let commit_block = Block::new(
        0x71,
        Bytes::from(serde_ipld_dagcbor::to_vec(&Ipld::List(links)).unwrap()),
    );
    Commit {
        repo: REPO.into(),
        expected,
        head: Head {
            commit: commit_block.cid(),
            rev: 7,
        },
        blocks: vec![commit_block],
        records,
        collections: vec![("app.bulk.rec".into(), Bytes::from_static(b"{}"))],
        index: Vec::new(),
        history: store::LogChange::default(),
        event: None,
        stream: None,
    }
}

async fn everything<K: Kv>(kv: &K) -> Vec<(Bytes, Bytes)> {
    let all = KeyRange {
        start: Vec::new(),
        end: None,
    };
    kv.scan(&all, false, usize::MAX).await.unwrap()
}

#[tokio::test]
async fn blocks_go_ahead_in_batches_and_the_state_changes_at_once() {
    let kv = RecordingKv {
        batch_bytes: Some(512),
        ..RecordingKv::default()
    };
    let store = Store::new(kv.clone());
    let mut progress = Vec::new();
    store
        .bulk_commit(commit(200, None), |written, total| {
            progress.push((written, total));
        })
        .await
        .unwrap();

    let batches = kv.batches.lock().unwrap().clone();
    let (last, ahead) = batches.split_last().unwrap();
    assert!(ahead.len() > 5, "{} batches ahead", ahead.len());
    assert!(ahead.iter().flatten().all(|k| is_block_key(k)));
    assert_eq!(ahead.iter().map(Vec::len).sum::<usize>(), 201);
    assert!(
        !last.iter().any(|k| is_block_key(k)),
        "no block in the final batch"
    );
    // Progress follows the blocks written ahead, batch by batch.
    assert_eq!(progress.first(), Some(&(0, 201)));
    assert_eq!(progress.last(), Some(&(201, 201)));
    assert!(progress.len() > ahead.len(), "{progress:?}");
    assert!(
        progress.windows(2).all(|w| w[0].0 <= w[1].0),
        "{progress:?}"
    );

    // The oracle: the same commit through `Store::commit` on a plain map.
    let plain = Store::new(MemoryKv::new());
    plain.commit(commit(200, None)).await.unwrap();
    assert_eq!(everything(&kv).await, everything(plain.kv()).await);
}

#[tokio::test]
async fn a_store_that_takes_any_batch_gets_one() {
    let kv = RecordingKv::default();
    let store = Store::new(kv.clone());
    store
        .bulk_commit(commit(200, None), |_, _| {})
        .await
        .unwrap();
    assert_eq!(kv.batches.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_stale_bulk_commit_writes_nothing() {
    let kv = RecordingKv {
        batch_bytes: Some(512),
        ..RecordingKv::default()
    };
    let store = Store::new(kv.clone());
    let first = commit(3, None);
    let head = first.head.commit;
    store.bulk_commit(first, |_, _| {}).await.unwrap();
    let before = everything(&kv).await;

    let err = store
        .bulk_commit(commit(200, None), |_, _| {})
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err}");
    assert_eq!(everything(&kv).await, before);
    assert_eq!(store.head(REPO).await.unwrap().unwrap().commit, head);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn collection_waits_for_blocks_written_ahead() {
    let (arrived, release) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let kv = RecordingKv {
        batch_bytes: Some(512),
        // Hold the third batch: two batches of blocks are stored, no head.
        hold: Some((2, Arc::clone(&arrived), Arc::clone(&release))),
        ..RecordingKv::default()
    };
    let store = Arc::new(Store::new(kv.clone()));
    let bulk = tokio::spawn({
        let store = Arc::clone(&store);
        async move { store.bulk_commit(commit(200, None), |_, _| {}).await }
    });
    arrived.notified().await;
    let gc = tokio::spawn({
        let store = Arc::clone(&store);
        async move { store.gc(Retention::All, |_| {}).await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    assert!(!gc.is_finished(), "collection ran during a bulk commit");
    release.notify_one();
    bulk.await.unwrap().unwrap();
    gc.await.unwrap().unwrap();

    let expected = commit(200, None);
    for block in expected
        .blocks
        .iter()
        .chain(expected.records.iter().filter_map(|r| r.record.as_ref()))
    {
        assert!(
            store.get_block(&block.cid()).await.unwrap().is_some(),
            "{} was collected",
            block.cid()
        );
    }
}
