//! The same behaviour on both KV stores (in memory and SlateDB on a local
//! directory): verified blocks, atomic commits with a head compare-and-swap,
//! the record index as a range scan, and the commit log.

use crate::common;

use bytes::Bytes;
use common::block;
use store::{Block, Commit, Error, Head, Kv, MemoryKv, RecordChange, SlateKv, Store, WriteOp};

async fn blocks_are_verified<K: Kv>(store: &Store<K>) {
    let (cid, bytes) = block(1);
    store.put_blocks(&[(cid, bytes.clone())]).await.unwrap();
    assert_eq!(
        store
            .get_block(&cid)
            .await
            .unwrap()
            .map(|b| b.bytes().clone()),
        Some(bytes)
    );
    let (other, _) = block(2);
    assert_eq!(store.get_block(&other).await.unwrap(), None);
    // Offering wrong bytes for a CID writes nothing.
    let err = store
        .put_blocks(&[(other, Bytes::from_static(b"not it"))])
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::HashMismatch { cid } if cid == other),
        "{err}"
    );
    assert_eq!(store.get_block(&other).await.unwrap(), None);
    // Corrupt stored bytes are an error naming the CID, never data.
    store
        .kv()
        .write(vec![WriteOp::Put(
            keycodec::records::block_key(&cid.to_bytes()),
            Bytes::from_static(b"rot"),
        )])
        .await
        .unwrap();
    let err = store.get_block(&cid).await.unwrap_err();
    assert!(matches!(err, Error::Corrupt { cid: c } if c == cid));
    assert!(err.to_string().contains(&cid.to_string()));
}

fn commit(repo: &str, expected: Option<cid::Cid>, n: u64, records: Vec<RecordChange>) -> Commit {
    let (c, bytes) = block(1000 + n);
    Commit {
        repo: repo.into(),
        expected,
        head: Head { commit: c, rev: n },
        blocks: vec![Block::verify(c, bytes).unwrap()],
        records,
        collections: Vec::new(),
        index: Vec::new(),
        history: store::LogChange::default(),
        event: None,
        stream: None,
    }
}

fn rec(collection: &str, rkey: &str, n: Option<u64>) -> RecordChange {
    RecordChange {
        collection: collection.into(),
        rkey: rkey.into(),
        record: n.map(|n| {
            let (cid, bytes) = block(n);
            Block::verify(cid, bytes).unwrap()
        }),
    }
}

async fn commits_are_atomic_and_compare_and_swap<K: Kv>(store: &Store<K>) {
    let repo = "did:web:example.com";
    assert_eq!(store.head(repo).await.unwrap(), None);
    let c1 = commit(
        repo,
        None,
        1,
        vec![rec("a.b.c", "x", Some(1)), rec("a.b.c", "y", Some(2))],
    );
    store.commit(c1.clone()).await.unwrap();
    assert_eq!(store.head(repo).await.unwrap(), Some(c1.head));
    assert!(store.get_block(&c1.head.commit).await.unwrap().is_some());
    assert_eq!(
        store.record(repo, "a.b.c", "x").await.unwrap(),
        Some(block(1).0)
    );
    // A record change stores its record's block: `blocks` held only the
    // commit's.
    assert_eq!(
        store.get_block(&block(2).0).await.unwrap().map(|b| b.cid()),
        Some(block(2).0)
    );

    // A stale writer gets a conflict and writes nothing.
    let stale = commit(repo, None, 2, vec![rec("a.b.c", "z", Some(3))]);
    let err = store.commit(stale.clone()).await.unwrap_err();
    assert!(
        matches!(err, Error::Conflict(ref c) if c.actual == Some(c1.head.commit)),
        "{err}"
    );
    assert_eq!(store.head(repo).await.unwrap(), Some(c1.head));
    assert_eq!(store.record(repo, "a.b.c", "z").await.unwrap(), None);
    assert_eq!(store.get_block(&stale.head.commit).await.unwrap(), None);
    assert_eq!(store.get_block(&block(3).0).await.unwrap(), None);

    // A commit's blocks are `Block`s: bytes that do not match their CID
    // cannot become one.
    assert!(matches!(
        Block::verify(block(77).0, Bytes::from_static(b"wrong")),
        Err(Error::HashMismatch { .. })
    ));

    let c2 = commit(
        repo,
        Some(c1.head.commit),
        4,
        vec![rec("a.b.c", "x", None), rec("a.b.c", "z", Some(3))],
    );
    store.commit(c2.clone()).await.unwrap();
    assert_eq!(store.record(repo, "a.b.c", "x").await.unwrap(), None);
    let log = store.commit_log(repo, false, 10).await.unwrap();
    assert_eq!(log, vec![(1, c1.head.commit), (4, c2.head.commit)]);
    let newest = store.commit_log(repo, true, 1).await.unwrap();
    assert_eq!(newest, vec![(4, c2.head.commit)]);
}

async fn listing_is_a_range_scan<K: Kv>(store: &Store<K>) {
    let repo = "did:web:list.example";
    let mut changes: Vec<RecordChange> = (0..25)
        .map(|i| rec("app.x.post", &format!("k{i:02}"), Some(i)))
        .collect();
    // Neighbours that must not show up.
    changes.push(rec("app.x.posts", "k00", Some(99)));
    changes.push(rec("app.x.pos", "k00", Some(98)));
    store.commit(commit(repo, None, 1, changes)).await.unwrap();
    store
        .commit(commit(
            "did:web:other",
            None,
            1,
            vec![rec("app.x.post", "k00", Some(97))],
        ))
        .await
        .unwrap();

    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = store
            .list_records(repo, "app.x.post", cursor.as_deref(), false, 10)
            .await
            .unwrap();
        if page.is_empty() {
            break;
        }
        cursor = page.last().map(|(k, _)| k.clone());
        seen.extend(page);
    }
    let expected: Vec<(String, cid::Cid)> =
        (0..25).map(|i| (format!("k{i:02}"), block(i).0)).collect();
    assert_eq!(seen, expected);
    let back = store
        .list_records(repo, "app.x.post", Some("k10"), true, 3)
        .await
        .unwrap();
    assert_eq!(
        back.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
        ["k09", "k08", "k07"]
    );
}

async fn pail_runs_on_the_store<K: Kv>(store: &Store<K>) {
    use std::sync::Arc;
    let empty = Arc::new(pail::Shard::empty(pail::ShardConfig {
        max_size: 1000,
        max_key_length: 64,
    }));
    store
        .put_blocks(&[(empty.cid(), Bytes::copy_from_slice(empty.bytes()))])
        .await
        .unwrap();
    let mut batch = pail::Batch::new(store, empty.cid()).await.unwrap();
    for i in 0..40 {
        batch.put(&format!("key/{i:03}"), block(i).0).await.unwrap();
    }
    let m = batch.commit();
    let blocks: Vec<_> = m
        .additions
        .iter()
        .map(|s| (s.cid(), Bytes::copy_from_slice(s.bytes())))
        .collect();
    assert!(blocks.len() > 1, "the tree should have split");
    store.put_blocks(&blocks).await.unwrap();
    for i in 0..40 {
        assert_eq!(
            pail::get(store, m.root, &format!("key/{i:03}"))
                .await
                .unwrap(),
            Some(block(i).0)
        );
    }
}

async fn all<K: Kv>(store: &Store<K>) {
    blocks_are_verified(store).await;
    commits_are_atomic_and_compare_and_swap(store).await;
    listing_is_a_range_scan(store).await;
    pail_runs_on_the_store(store).await;
}

#[tokio::test]
async fn in_memory() {
    all(&Store::new(MemoryKv::new())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slatedb_local_directory() {
    let tmp = testkit::tempdir("semantics");
    let dir = tmp.path();
    let kv = SlateKv::open_local(dir).await.unwrap();
    all(&Store::new(kv.clone())).await;
    kv.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_commits_survive_reopening() {
    let tmp = testkit::tempdir("reopen");
    let dir = tmp.path();
    let repo = "did:web:durable";
    let mut last = None;
    {
        let kv = SlateKv::open_local(dir).await.unwrap();
        let store = Store::new(kv.clone());
        for n in 1..=20 {
            let c = commit(repo, last, n, vec![rec("a.b.c", &format!("r{n}"), Some(n))]);
            store.commit(c.clone()).await.unwrap();
            last = Some(c.head.commit);
        }
        kv.close().await.unwrap();
    }
    let kv = SlateKv::open_local(dir).await.unwrap();
    let store = Store::new(kv.clone());
    assert_eq!(store.head(repo).await.unwrap().map(|h| h.commit), last);
    assert_eq!(store.commit_log(repo, false, 100).await.unwrap().len(), 20);
    assert_eq!(
        store
            .list_records(repo, "a.b.c", None, false, 100)
            .await
            .unwrap()
            .len(),
        20
    );
    kv.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_one_wins_each_round() {
    let store = std::sync::Arc::new(Store::new(MemoryKv::new()));
    let repo = "did:web:race";
    let mut head = None;
    for round in 0..20u64 {
        let tasks: Vec<_> = (0..4u64)
            .map(|w| {
                let store = std::sync::Arc::clone(&store);
                let c = commit(repo, head, round * 10 + w + 1, vec![]);
                tokio::spawn(async move { store.commit(c.clone()).await.map(|()| c.head.commit) })
            })
            .collect();
        let mut winners = Vec::new();
        for t in tasks {
            match t.await.unwrap() {
                Ok(c) => winners.push(c),
                Err(Error::Conflict(_)) => {}
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(
            winners.len(),
            1,
            "exactly one writer per round wins the CAS"
        );
        head = Some(winners[0]);
        assert_eq!(store.head(repo).await.unwrap().map(|h| h.commit), head);
    }
}

/// Against a real S3-compatible server on 127.0.0.1 (SeaweedFS, started by
/// `scripts/test`, which sets `DATAREPO_TEST_S3` to an `s3://` location and
/// the `AWS_*` variables). Without it the test fails under CI and is skipped
/// with a note elsewhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_compatible_object_storage() {
    let Ok(base) = std::env::var("DATAREPO_TEST_S3") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run this test: scripts/test sets DATAREPO_TEST_S3"
        );
        eprintln!(
            "skipped: DATAREPO_TEST_S3 is not set (scripts/test starts SeaweedFS and sets it)"
        );
        return;
    };
    let location: store::Location = format!("{base}/semantics-{}", std::process::id())
        .parse()
        .unwrap();
    let kv = SlateKv::open(&location).await.unwrap();
    all(&Store::new(kv.clone())).await;
    kv.close().await.unwrap();
    // Reopen: everything acknowledged is there.
    let kv = SlateKv::open(&location).await.unwrap();
    let store = Store::new(kv.clone());
    assert!(store.head("did:web:example.com").await.unwrap().is_some());
    kv.close().await.unwrap();
}

#[test]
fn locations_parse() {
    use store::Location;
    assert_eq!(
        "./data".parse::<Location>().unwrap(),
        Location::Local("./data".into())
    );
    assert_eq!(
        "file:///var/db".parse::<Location>().unwrap(),
        Location::Local("/var/db".into())
    );
    assert_eq!(
        "s3://bucket/a/b/".parse::<Location>().unwrap(),
        Location::S3 {
            bucket: "bucket".into(),
            prefix: "a/b".into()
        }
    );
    assert_eq!(
        "s3://bucket".parse::<Location>().unwrap(),
        Location::S3 {
            bucket: "bucket".into(),
            prefix: String::new()
        }
    );
    for bad in ["", "s3://", "s3:///x", "gs://b/p", "file://relative"] {
        assert!(bad.parse::<Location>().is_err(), "{bad}");
    }
}
