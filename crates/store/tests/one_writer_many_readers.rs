//! One writer per database: a second writer fences the first, which then
//! fails with `Error::Fenced` and loses nothing it acknowledged; read-only
//! openers see new commits within their refresh interval.

use crate::common;

use std::time::Duration;

use common::block;
use store::{Block, Commit, Error, Head, Location, RecordChange, SlateKv, Store};

fn commit(expected: Option<cid::Cid>, rev: u64) -> Commit {
    let (c, bytes) = block(rev);
    Commit {
        repo: "did:web:one".into(),
        expected,
        head: Head { commit: c, rev },
        blocks: vec![Block::verify(c, bytes.clone()).unwrap()],
        records: vec![RecordChange {
            collection: "a.b.c".into(),
            rkey: format!("r{rev}"),
            record: Some(Block::verify(c, bytes).unwrap()),
        }],
        collections: Vec::new(),
        index: Vec::new(),
        history: store::LogChange::default(),
        event: None,
        stream: None,
    }
}

/// The locations to test (see `testkit::store_locations`); the local
/// directory lives as long as the returned guard.
fn locations(name: &str) -> (testkit::TempDir, Vec<Location>) {
    let (tmp, locations) = testkit::store_locations(name);
    (tmp, locations.iter().map(|l| l.parse().unwrap()).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_writer_fences_the_first() {
    let (_tmp, locations) = locations("fence");
    for location in locations {
        second_writer_fences_the_first(&location).await;
    }
}

async fn second_writer_fences_the_first(location: &Location) {
    let first = Store::new(SlateKv::open(location).await.unwrap());
    first.commit(commit(None, 1)).await.unwrap();
    let second_kv = SlateKv::open(location).await.unwrap();
    let second = Store::new(second_kv.clone());
    // The fenced writer fails clearly (possibly after a moment, when it
    // next touches the manifest) and writes nothing more.
    let mut fenced = false;
    for rev in 2..40 {
        match first.commit(commit(Some(block(rev - 1).0), rev)).await {
            Err(Error::Fenced) => {
                fenced = true;
                break;
            }
            Err(e) => panic!("expected Fenced, got {e}"),
            Ok(()) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    assert!(fenced, "the first writer was never fenced");
    assert!(Error::Fenced.to_string().contains("another writer"));
    // The new writer has everything acknowledged and continues from it.
    let head = second.head("did:web:one").await.unwrap().unwrap();
    second
        .commit(commit(Some(head.commit), head.rev + 100))
        .await
        .unwrap();
    second_kv.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_see_new_commits_within_the_refresh_interval() {
    let (_tmp, locations) = locations("reader");
    for location in locations {
        readers_follow(&location).await;
    }
}

async fn readers_follow(location: &Location) {
    let writer_kv = SlateKv::open(location).await.unwrap();
    let writer = Store::new(writer_kv.clone());
    writer.commit(commit(None, 1)).await.unwrap();
    let reader_kv = SlateKv::open_reader(location, Duration::from_millis(100))
        .await
        .unwrap();
    let reader = Store::new(reader_kv.clone());
    assert_eq!(
        reader.head("did:web:one").await.unwrap().map(|h| h.rev),
        Some(1)
    );
    assert!(matches!(
        reader.commit(commit(Some(block(1).0), 2)).await,
        Err(Error::ReadOnly)
    ));

    writer.commit(commit(Some(block(1).0), 2)).await.unwrap();
    // Polls for up to 10 s (500 × 20 ms); the refresh interval is 100 ms.
    let mut polls = 0;
    while reader.head("did:web:one").await.unwrap().map(|h| h.rev) != Some(2) {
        polls += 1;
        assert!(polls < 500, "the reader never saw rev 2");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        reader.record("did:web:one", "a.b.c", "r2").await.unwrap(),
        Some(block(2).0)
    );
    reader_kv.close().await.unwrap();
    writer_kv.close().await.unwrap();
}
