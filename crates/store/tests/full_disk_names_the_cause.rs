//! A commit that cannot become durable because the store's disk filled up
//! fails with an error that names the cause (no space left), instead of a
//! bare timeout; the commits acknowledged before are kept. Needs root to
//! mount a small tmpfs; skipped with a message elsewhere.

use crate::common;

use std::time::Duration;

use common::block;
use store::{Block, Commit, Error, Head, Location, RecordChange, SlateKv, Store};
use testkit::Mount;

const REPO: &str = "did:web:full.example";

fn commit(expected: Option<cid::Cid>, rev: u64) -> Commit {
    let (c, bytes) = block(rev);
    let (r, rbytes) = block(10_000 + rev);
    Commit {
        repo: REPO.into(),
        expected,
        head: Head { commit: c, rev },
        blocks: vec![
            Block::verify(c, bytes).unwrap(),
            Block::verify(r, rbytes.clone()).unwrap(),
        ],
        records: vec![RecordChange {
            collection: "a.b.c".into(),
            rkey: format!("r{rev:05}"),
            record: Some(Block::verify(r, rbytes).unwrap()),
        }],
        collections: Vec::new(),
        index: Vec::new(),
        history: store::LogChange::default(),
        event: None,
        stream: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_on_a_full_disk_says_so() {
    let tmp = testkit::tempdir("full-disk");
    let Some(disk) = Mount::tmpfs(&tmp.path().join("disk"), "16m") else {
        return;
    };
    let location = Location::Local(disk.path().join("data"));
    let kv = SlateKv::open(&location).await.unwrap();
    let store = Store::new(kv.clone()).with_durability_timeout(Duration::from_secs(3));
    store.commit(commit(None, 1)).await.unwrap();

    disk.fill();
    let expected = Some(block(1).0);
    let mut failed = None;
    // SlateDB may still hold a little room; a few commits fill it.
    for rev in 2..=50 {
        if let Err(e) = store.commit(commit(expected, rev)).await {
            failed = Some(e);
            break;
        }
    }
    let e = failed.expect("commits on a full disk must fail");
    match &e {
        Error::DurabilityBlocked { source, .. } => {
            assert_eq!(source.kind(), std::io::ErrorKind::StorageFull, "{e}");
        }
        other => panic!("expected the cause named, got {other:?}"),
    }
    assert!(e.to_string().contains("No space left on device"), "{e}");
    drop(store);
    drop(kv);
}
