//! Garbage collection keeps every block a retained commit reaches (commit
//! blocks, Pail shards, records), deletes the rest, and is safe while
//! commits continue.

use crate::common;

use std::{collections::BTreeMap, sync::Arc};

use bytes::Bytes;
use cid::Cid;
use common::block;
use ipld_core::ipld::Ipld;
use multihash_codetable::{Code, MultihashDigest};
use pail::{Shard, ShardConfig};
use store::{Block, Commit, Head, Kv, MemoryKv, Retention, Store};

const REPO: &str = "did:web:gc";

/// A dag-cbor commit block `{data: root, prev: previous | null}`.
fn commit_block(data: Cid, prev: Option<Cid>) -> (Cid, Bytes) {
    let mut map = BTreeMap::new();
    map.insert("data".to_owned(), Ipld::Link(data));
    map.insert("prev".to_owned(), prev.map_or(Ipld::Null, Ipld::Link));
    let bytes = Bytes::from(serde_ipld_dagcbor::to_vec(&Ipld::Map(map)).unwrap());
    (Cid::new_v1(0x71, Code::Sha2_256.digest(&bytes)), bytes)
}

/// Commits `n` rounds of puts (each overwriting earlier keys, so shards are
/// replaced); returns the data roots of every commit, oldest first.
async fn write_commits<K: Kv>(store: &Store<K>, from: u64, n: u64) -> Vec<Cid> {
    let mut head = store.head(REPO).await.unwrap();
    let mut root = match head {
        Some(h) => data_root(store, h.commit).await,
        None => {
            let empty = Arc::new(Shard::empty(ShardConfig {
                max_size: 600,
                max_key_length: 64,
            }));
            store
                .put_blocks(&[(empty.cid(), Bytes::copy_from_slice(empty.bytes()))])
                .await
                .unwrap();
            empty.cid()
        }
    };
    let mut roots = Vec::new();
    for round in from..from + n {
        let mut batch = pail::Batch::new(store, root).await.unwrap();
        let mut blocks = Vec::new();
        for k in 0..12u64 {
            let (rcid, rbytes) = block(round * 1000 + k);
            blocks.push((rcid, rbytes));
            batch
                .put(&format!("app.gc.rec/k{k:02}"), rcid)
                .await
                .unwrap();
        }
        let m = batch.commit();
        blocks.extend(
            m.additions
                .iter()
                .map(|s| (s.cid(), Bytes::copy_from_slice(s.bytes()))),
        );
        let (ccid, cbytes) = commit_block(m.root, head.map(|h| h.commit));
        blocks.push((ccid, cbytes));
        let rev = head.map_or(1, |h| h.rev + 1);
        store
            .commit(Commit {
                repo: REPO.into(),
                expected: head.map(|h| h.commit),
                head: Head { commit: ccid, rev },
                blocks: blocks
                    .into_iter()
                    .map(|(c, b)| Block::verify(c, b).unwrap())
                    .collect(),
                records: vec![],
                collections: Vec::new(),
                index: Vec::new(),
                history: store::LogChange::default(),
                event: None,
                stream: None,
            })
            .await
            .unwrap();
        head = Some(Head { commit: ccid, rev });
        root = m.root;
        roots.push(m.root);
    }
    roots
}

async fn data_root<K: Kv>(store: &Store<K>, commit: Cid) -> Cid {
    let bytes = store.get_block(&commit).await.unwrap().unwrap();
    let Ipld::Map(map) = serde_ipld_dagcbor::from_slice::<Ipld>(bytes.bytes()).unwrap() else {
        panic!()
    };
    let Some(Ipld::Link(root)) = map.get("data") else {
        panic!()
    };
    *root
}

/// Every key of the tree at `root` reads back, through verified blocks.
async fn tree_intact<K: Kv>(store: &Store<K>, root: Cid, round: u64) {
    for k in 0..12u64 {
        let got = pail::get(store, root, &format!("app.gc.rec/k{k:02}"))
            .await
            .unwrap();
        let rec = got.expect("key present");
        assert_eq!(rec, block(round * 1000 + k).0);
        assert!(
            store.get_block(&rec).await.unwrap().is_some(),
            "record block kept"
        );
    }
}

#[tokio::test]
async fn retention_all_keeps_history_and_drops_orphans() {
    let store = Store::with_cache_bytes(MemoryKv::new(), 0);
    let roots = write_commits(&store, 1, 5).await;
    let (orphan, bytes) = block(999_999);
    store.put_blocks(&[(orphan, bytes)]).await.unwrap();
    let report = store.gc(Retention::All, |_| {}).await.unwrap();
    // The orphan, and the empty root shard no commit points to.
    assert_eq!(report.deleted, 2, "{report:?}");
    assert!(store.get_block(&orphan).await.unwrap().is_none());
    for (i, root) in roots.iter().enumerate() {
        tree_intact(&store, *root, i as u64 + 1).await;
    }
}

#[tokio::test]
async fn retention_last_keeps_the_head_tree_only() {
    let store = Store::with_cache_bytes(MemoryKv::new(), 0);
    let roots = write_commits(&store, 1, 5).await;
    let report = store.gc(Retention::Last(1), |_| {}).await.unwrap();
    assert!(report.deleted > 12, "old records and shards go: {report:?}");
    tree_intact(&store, *roots.last().unwrap(), 5).await;
    // An old record only the first commit reached is gone.
    assert!(store.get_block(&block(1000).0).await.unwrap().is_none());
    // A second pass finds nothing more.
    assert_eq!(
        store.gc(Retention::Last(1), |_| {}).await.unwrap().deleted,
        0
    );
}

#[tokio::test]
async fn the_commit_log_keeps_only_the_retained_commits() {
    let store = Store::with_cache_bytes(MemoryKv::new(), 0);
    let roots = write_commits(&store, 1, 5).await;
    let before = store.commit_log(REPO, true, usize::MAX).await.unwrap();
    assert_eq!(before.len(), 5);

    let report = store.gc(Retention::Last(2), |_| {}).await.unwrap();
    assert_eq!(report.commits_dropped, 3, "{report:?}");
    // The log holds the two newest commits, whose blocks are all there; the
    // older ones' commit blocks are gone with their entries.
    let after = store.commit_log(REPO, true, usize::MAX).await.unwrap();
    assert_eq!(after, before[..2]);
    for (_, commit) in &after {
        assert!(store.get_block(commit).await.unwrap().is_some());
    }
    for (_, commit) in &before[2..] {
        assert!(store.get_block(commit).await.unwrap().is_none());
    }
    tree_intact(&store, roots[3], 4).await;
    tree_intact(&store, roots[4], 5).await;

    // Keeping everything forgets nothing.
    let report = store.gc(Retention::All, |_| {}).await.unwrap();
    assert_eq!(report.commits_dropped, 0, "{report:?}");
    assert_eq!(
        store.commit_log(REPO, true, usize::MAX).await.unwrap(),
        after
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn collecting_while_committing_loses_nothing_reachable() {
    let store = Arc::new(Store::with_cache_bytes(MemoryKv::new(), 0));
    write_commits(&store, 1, 2).await;
    let writer = {
        let store = Arc::clone(&store);
        tokio::spawn(async move { write_commits(&store, 3, 30).await })
    };
    for _ in 0..20 {
        store.gc(Retention::Last(1), |_| {}).await.unwrap();
        tokio::task::yield_now().await;
    }
    let roots = writer.await.unwrap();
    store.gc(Retention::Last(1), |_| {}).await.unwrap();
    tree_intact(&store, *roots.last().unwrap(), 32).await;
}

#[tokio::test]
async fn a_first_commit_naming_an_unknown_predecessor_is_not_missing_anything() {
    // As after an import: the repository's first stored commit has a
    // `prev` that was never in this store.
    let store = Store::with_cache_bytes(MemoryKv::new(), 0);
    let shard = Shard::empty(ShardConfig::default());
    let never_stored = Cid::new_v1(0x71, Code::Sha2_256.digest(b"an older commit"));
    let (commit, bytes) = commit_block(shard.cid(), Some(never_stored));
    store
        .commit(Commit {
            repo: REPO.into(),
            expected: None,
            head: Head { commit, rev: 9 },
            blocks: vec![
                Block::verify(commit, bytes).unwrap(),
                Block::verify(shard.cid(), Bytes::copy_from_slice(shard.bytes())).unwrap(),
            ],
            records: vec![],
            collections: Vec::new(),
            index: Vec::new(),
            history: store::LogChange::default(),
            event: None,
            stream: None,
        })
        .await
        .unwrap();
    let report = store.gc(Retention::All, |_| {}).await.unwrap();
    assert_eq!(report.missing, 0, "{report:?}");
    assert_eq!((report.reachable, report.deleted), (2, 0), "{report:?}");
}

/// Commits one more key (with its record) on the current head; the new
/// tree shares every shard off the key's path with the previous one.
async fn put_one<K: Kv>(store: &Store<K>, key: &str, record: (Cid, Bytes)) -> Cid {
    let head = store.head(REPO).await.unwrap().unwrap();
    let mut batch = pail::Batch::new(store, data_root(store, head.commit).await)
        .await
        .unwrap();
    batch.put(key, record.0).await.unwrap();
    let m = batch.commit();
    let (commit, bytes) = commit_block(m.root, Some(head.commit));
    let mut blocks = vec![
        Block::verify(commit, bytes).unwrap(),
        Block::verify(record.0, record.1).unwrap(),
    ];
    blocks.extend(m.additions.iter().map(Block::from_shard));
    store
        .commit(Commit {
            repo: REPO.into(),
            expected: Some(head.commit),
            head: Head {
                commit,
                rev: head.rev + 1,
            },
            blocks,
            records: vec![],
            collections: Vec::new(),
            index: Vec::new(),
            history: store::LogChange::default(),
            event: None,
            stream: None,
        })
        .await
        .unwrap();
    m.root
}

/// A [`MemoryKv`] that counts point reads and can hold the first scan of
/// repository heads (a collection's step after listing blocks) until
/// released.
#[derive(Clone, Default)]
struct WatchedKv {
    inner: MemoryKv,
    gets: Arc<std::sync::atomic::AtomicUsize>,
    hold: Option<(Arc<tokio::sync::Notify>, Arc<tokio::sync::Notify>)>,
    held: Arc<std::sync::atomic::AtomicBool>,
}

impl Kv for WatchedKv {
    fn blobs(&self) -> store::Blobs {
        self.inner.blobs()
    }

    async fn get(&self, key: &[u8]) -> Result<Option<Bytes>, store::Error> {
        self.gets.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.get(key).await
    }

    async fn apply(&self, ops: Vec<store::WriteOp>) -> Result<store::Durability, store::Error> {
        self.inner.apply(ops).await
    }

    async fn scan(
        &self,
        range: &keycodec::KeyRange,
        reverse: bool,
        limit: usize,
    ) -> Result<Vec<(Bytes, Bytes)>, store::Error> {
        if let Some((arrived, release)) = &self.hold
            && range.start == keycodec::RecordType::Head.range().start
            && !self.held.swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            arrived.notify_one();
            release.notified().await;
        }
        self.inner.scan(range, reverse, limit).await
    }
}

#[tokio::test]
async fn marking_reads_only_the_roots_again() {
    let kv = WatchedKv::default();
    let store = Store::with_cache_bytes(kv.clone(), 0);
    write_commits(&store, 1, 5).await;
    let before = kv.gets.load(std::sync::atomic::Ordering::Relaxed);
    let report = store.gc(Retention::All, |_| {}).await.unwrap();
    let gets = kv.gets.load(std::sync::atomic::Ordering::Relaxed) - before;
    // The listing read every block; marking fetched only the five commits
    // (to drop their `prev`) and the head.
    assert!(report.listed > 60, "{report:?}");
    assert_eq!(gets, 6, "{report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocks_reached_through_a_commit_made_after_the_listing_stay() {
    let (arrived, release) = (
        Arc::new(tokio::sync::Notify::new()),
        Arc::new(tokio::sync::Notify::new()),
    );
    let kv = WatchedKv {
        hold: Some((Arc::clone(&arrived), Arc::clone(&release))),
        ..WatchedKv::default()
    };
    let store = Arc::new(Store::with_cache_bytes(kv, 0));
    write_commits(&store, 1, 3).await;
    let gc = tokio::spawn({
        let store = Arc::clone(&store);
        async move { store.gc(Retention::Last(1), |_| {}).await }
    });
    // Blocks are listed; a commit lands before the roots are read. Only it
    // is retained, and it reaches most of its tree through listed shards.
    arrived.notified().await;
    let root = put_one(&store, "app.gc.rec/zz", block(777_777)).await;
    release.notify_one();
    let report = gc.await.unwrap().unwrap();
    assert!(report.deleted > 0, "{report:?}");
    tree_intact(&store, root, 3).await;
    let zz = pail::get(&*store, root, "app.gc.rec/zz").await.unwrap();
    assert_eq!(zz, Some(block(777_777).0));
}

#[tokio::test]
async fn corrupt_blocks_are_deleted_when_unreachable_and_stop_it_when_reachable() {
    let store = Store::with_cache_bytes(MemoryKv::new(), 0);
    let roots = write_commits(&store, 1, 2).await;
    let corrupt = |cid: Cid| {
        store::WriteOp::Put(
            keycodec::records::block_key(&cid.to_bytes()),
            Bytes::from_static(b"not these bytes"),
        )
    };
    // The first commit's root shard is unreachable under Last(1).
    store.kv().write(vec![corrupt(roots[0])]).await.unwrap();
    store.gc(Retention::Last(1), |_| {}).await.unwrap();
    assert!(store.get_block(&roots[0]).await.unwrap().is_none());

    // The head's root shard is reachable: the collection stops, deleting nothing.
    let (orphan, bytes) = block(999_999);
    store.put_blocks(&[(orphan, bytes)]).await.unwrap();
    store.kv().write(vec![corrupt(roots[1])]).await.unwrap();
    let err = store.gc(Retention::Last(1), |_| {}).await.unwrap_err();
    assert!(
        matches!(err, store::Error::Corrupt { cid } if cid == roots[1]),
        "{err}"
    );
    assert!(store.get_block(&orphan).await.unwrap().is_some());
}
