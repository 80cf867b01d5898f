//! Reads that clients see (durable head, record index, commit log,
//! repository list) never show a commit whose WAL flush is still pending,
//! while writers and gc see it at once.

use crate::common;

use common::block;
use store::{
    Block, Commit, GcProgress, Head, Location, RecordChange, Retention, SlateKv, SlateOptions,
    Store,
};

const REPO: &str = "did:web:example.com";
const POST: &str = "app.bsky.feed.post";

fn commit(rev: u64, expected: Option<Head>, rkey: &str) -> Commit {
    let (c, bytes) = block(1_000 + rev);
    let (r, record) = block(rev);
    Commit {
        repo: REPO.into(),
        expected: expected.map(|h| h.commit),
        head: Head { commit: c, rev },
        blocks: vec![Block::verify(c, bytes).unwrap()],
        records: vec![RecordChange {
            collection: POST.into(),
            rkey: rkey.into(),
            record: Some(Block::verify(r, record).unwrap()),
        }],
        collections: Vec::new(),
        index: Vec::new(),
        history: store::LogChange::default(),
        event: None,
        stream: None,
    }
}

/// A store whose WAL is flushed only when asked.
async fn open(dir: &std::path::Path) -> SlateKv {
    let mut options = SlateOptions::default();
    options.flush_interval = Some(std::time::Duration::from_secs(3_600));
    SlateKv::open_with(&Location::Local(dir.to_path_buf()), &options)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_commit_is_invisible_to_readers_until_durable() {
    let dir = testkit::tempdir("durable-reads");
    let first = commit(1, None, "a");
    let first_head = first.head;
    let second = commit(2, Some(first_head), "b");
    let second_head = second.head;
    // One store throughout: reopening would replay the WAL, and SlateDB's
    // flush of the recovered memtable could make the pending commit durable.
    let kv = open(dir.path()).await;
    let store = Store::new(kv.clone());
    let landed = store.stage_commit(first).await.unwrap();
    kv.flush().await.unwrap();
    landed.durable().await.unwrap();

    let pending = store.stage_commit(second).await.unwrap();

    // Writers (and gc) see the pending commit: the next commit builds on it.
    assert_eq!(store.head(REPO).await.unwrap(), Some(second_head));
    // Readers do not: a crash now would lose it.
    assert_eq!(store.durable_head(REPO).await.unwrap(), Some(first_head));
    assert_eq!(store.record(REPO, POST, "b").await.unwrap(), None);
    assert!(store.record_block(REPO, POST, "b").await.unwrap().is_none());
    let keys = |rows: Vec<(String, cid::Cid)>| rows.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
    assert_eq!(
        keys(
            store
                .list_records(REPO, POST, None, false, 10)
                .await
                .unwrap()
        ),
        ["a"]
    );
    let blocks = store
        .list_record_blocks(REPO, POST, None, true, 10)
        .await
        .unwrap();
    assert_eq!(blocks.len(), 1);
    assert_eq!(store.commit_at(REPO, 2).await.unwrap(), None);
    assert_eq!(
        store.commit_log(REPO, true, 10).await.unwrap(),
        [(1, first_head.commit)]
    );
    assert_eq!(
        store.repos().await.unwrap(),
        [(REPO.to_owned(), first_head)]
    );
    // gc keeps the pending commit's blocks: it marks from what was written.
    // Its deletions wait for a WAL flush, made once it has chosen what to
    // delete.
    let sweeping = std::sync::atomic::AtomicBool::new(false);
    let gc = store.gc(Retention::All, |p| {
        if matches!(p, GcProgress::Sweeping { .. }) {
            sweeping.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    });
    tokio::pin!(gc);
    let report = loop {
        tokio::select! {
            report = &mut gc => break report,
            () = tokio::time::sleep(std::time::Duration::from_millis(10)) => {
                if sweeping.load(std::sync::atomic::Ordering::SeqCst) {
                    kv.flush().await.unwrap();
                }
            }
        }
    };
    let report = report.unwrap();
    assert!(report.deleted > 0, "{report:?}");
    // The flush made the pending commit durable too, and so visible.
    pending.durable().await.unwrap();
    assert_eq!(store.durable_head(REPO).await.unwrap(), Some(second_head));
    assert!(store.record(REPO, POST, "b").await.unwrap().is_some());
    assert_eq!(store.commit_log(REPO, true, 10).await.unwrap().len(), 2);
    assert!(
        store
            .get_block(&second_head.commit)
            .await
            .unwrap()
            .is_some()
    );
    assert!(store.get_block(&first_head.commit).await.unwrap().is_some());
    store.kv().close().await.unwrap();
}
