//! Import checks every record of a large file (enough records to be
//! checked on several threads) and reports the first bad one in tree
//! order, writing nothing.
//!
//! The bad records are planted with the `pail` and `store` crates under a
//! repository written normally: the store keeps any bytes, so an export
//! carries them, and only import's own check stands between them and a
//! fresh store.

use crate::common;

use repo::{CommitData, Error, Write};
use serde_json::json;
use store::{Block, Commit, Head, RecordChange};

const DID: &str = "did:web:checks.example";
const COLLECTION: &str = "com.example.post";
const RECORDS: usize = 9_000;

/// `{"b": 1, "a": n}` with its keys in the order given, not dag-cbor's
/// canonical order (shorter keys first, then bytewise: "a" before "b").
fn unsorted_map(n: u8) -> Block {
    Block::new(0x71, vec![0xa2, 0x61, b'b', 0x01, 0x61, b'a', n].into())
}

/// A CAR of a repository of `RECORDS` good records plus one bad record
/// under each of `bad_keys`.
async fn car_with_bad_records(bad_keys: &[&str]) -> Vec<u8> {
    let repos = common::repos();
    let repo = repos.create(DID).await.unwrap();
    let writes = (0..RECORDS)
        .map(|i| Write::Create {
            collection: COLLECTION.into(),
            rkey: Some(format!("k{i:05}")),
            value: json!({ "n": i }),
        })
        .collect();
    repo.apply_writes(writes, None).await.unwrap();

    let store = repos.store();
    let head = repo.head().await.unwrap();
    let mut batch = pail::Batch::new(&**store, head.data).await.unwrap();
    let mut blocks = Vec::new();
    let mut records = Vec::new();
    for (i, key) in bad_keys.iter().enumerate() {
        let block = unsorted_map(u8::try_from(i).unwrap() + 2);
        batch
            .put(&format!("{COLLECTION}/{key}"), block.cid())
            .await
            .unwrap();
        records.push(RecordChange {
            collection: COLLECTION.into(),
            rkey: (*key).into(),
            record: Some(block.clone()),
        });
        blocks.push(block);
    }
    let mutation = batch.commit();
    blocks.extend(mutation.additions.iter().map(Block::from_shard));
    let rev = rkey::Tid::from_u64(head.rev.as_u64() + 1);
    let commit = CommitData::new(DID.into(), rev, mutation.root, Some(head.commit)).encode();
    let commit_cid = commit.cid();
    blocks.push(commit);
    store
        .commit(Commit {
            repo: DID.into(),
            expected: Some(head.commit),
            head: Head {
                commit: commit_cid,
                rev: rev.as_u64(),
            },
            blocks,
            records,
            collections: Vec::new(),
            index: Vec::new(),
            history: store::LogChange::default(),
            event: None,
            stream: None,
        })
        .await
        .unwrap();
    let (car, _) = repos
        .open(DID)
        .await
        .unwrap()
        .export_car(Vec::new(), None, |_| {})
        .await
        .unwrap();
    car
}

#[test]
fn the_first_bad_record_in_tree_order_is_reported_and_nothing_is_written() {
    common::rt().block_on(async {
        // Planted in tree order near both ends, so that the two fall to
        // different threads; the second-planted sorts first.
        let car = car_with_bad_records(&["k08999z", "k00001z"]).await;
        let fresh = common::repos();
        let err = fresh.import_car(&car[..], None).await.unwrap_err();
        assert!(matches!(err, Error::InvalidCar(_)), "{err}");
        let message = err.to_string();
        assert!(
            message.contains(&format!("record {COLLECTION}/k00001z"))
                && message.contains("malformed"),
            "{message}"
        );
        assert!(fresh.list().await.unwrap().is_empty());

        // With only the later one planted, that one is reported.
        let car = car_with_bad_records(&["k08999z"]).await;
        let err = fresh.import_car(&car[..], None).await.unwrap_err();
        assert!(
            err.to_string()
                .contains(&format!("record {COLLECTION}/k08999z")),
            "{err}"
        );
        assert!(fresh.list().await.unwrap().is_empty());
    });
}

#[test]
fn a_large_good_file_imports() {
    common::rt().block_on(async {
        let car = car_with_bad_records(&[]).await;
        let fresh = common::repos();
        let report = fresh.import_car(&car[..], None).await.unwrap();
        assert_eq!(report.records, RECORDS as u64);
        let repo = fresh.open(DID).await.unwrap();
        let record = repo
            .get_record(COLLECTION, "k04321")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(record.to_json()["n"], json!(4321));
    });
}
