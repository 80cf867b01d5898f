//! A full CAR export holds exactly the head's DAG in pre-order: the commit,
//! then each shard followed, entry by entry, by the entry's record and its
//! child shard's subtree, every block once. The expected order is computed
//! here by a plain recursive walk over the CAR's own blocks.
//!
//! The repository has collections whose names prefix each other, more
//! records per collection than the exporter reads from the record index at
//! once, identical records, records too large to be kept inline in the
//! index, and updates and deletes after the first writes.
//!
//! Records are read from the record index, but the tree decides: an index
//! row naming another block than the tree is not used.

use crate::common;

use std::collections::{HashMap, HashSet};

use cid::Cid;
use multihash_codetable::{Code, MultihashDigest};
use repo::{Repos, Write};
use serde_json::json;
use store::{Block, Commit, Head, MemoryKv, RecordChange};

const DID: &str = "did:web:order.example";
const COLLECTIONS: [&str; 3] = ["com.example.a", "com.example.a.b", "com.example.ab"];

fn value(i: usize) -> serde_json::Value {
    if i.is_multiple_of(97) {
        // Over 4 KiB: stored as its own block, not inline in the index.
        json!({ "big": "x".repeat(5000 + i) })
    } else {
        // Many records share a value, and so a block.
        json!({ "n": i % 41 })
    }
}

/// Pre-order from `shard`: the shard, then per entry its data and its link.
fn walk(cid: Cid, blocks: &HashMap<Cid, Vec<u8>>, seen: &mut HashSet<Cid>, out: &mut Vec<Cid>) {
    if !seen.insert(cid) {
        return;
    }
    out.push(cid);
    let shard = pail::Shard::decode(&blocks[&cid]).unwrap();
    for i in 0..shard.len() {
        if let Some(data) = shard.data(i)
            && seen.insert(data)
        {
            out.push(data);
        }
        if let Some(link) = shard.link(i) {
            walk(link, blocks, seen, out);
        }
    }
}

/// 6,000 records (2,000 per collection), then 150 deleted and 150 updated.
async fn populated() -> Repos<store::MemoryKv> {
    let repos = common::repos();
    let repo = repos.create(DID).await.unwrap();
    for batch in 0..6 {
        let writes = (batch * 1000..(batch + 1) * 1000)
            .map(|j| Write::Update {
                collection: COLLECTIONS[j % 3].into(),
                rkey: format!("k{j:05}"),
                value: value(j),
                swap_record: None,
            })
            .collect();
        repo.apply_writes(writes, None).await.unwrap();
    }
    let later = (0..300)
        .map(|i| match i % 2 {
            0 => Write::Delete {
                collection: COLLECTIONS[(i * 7) % 3].into(),
                rkey: format!("k{:05}", i * 7),
                swap_record: None,
            },
            _ => Write::Update {
                collection: COLLECTIONS[(i * 11) % 3].into(),
                rkey: format!("k{:05}", i * 11),
                value: json!({ "updated": i }),
                swap_record: None,
            },
        })
        .collect();
    repo.apply_writes(later, None).await.unwrap();
    repos
}

/// Exports the repository and checks the file against a walk of its head:
/// same blocks, same order, each once, each hashing to its CID.
async fn export_matches_the_walk(repos: &Repos<MemoryKv>) -> HashMap<Cid, Vec<u8>> {
    let repo = repos.open(DID).await.unwrap();
    let (car, report) = repo.export_car(Vec::new(), None, |_| {}).await.unwrap();
    let mut reader = iroh_car::CarReader::new(&car[..]).await.unwrap();
    assert_eq!(reader.header().roots(), [report.commit]);
    let mut order = Vec::new();
    let mut blocks = HashMap::new();
    while let Some((cid, bytes)) = reader.next_block().await.unwrap() {
        assert_eq!(
            cid.hash().digest(),
            Code::Sha2_256.digest(&bytes).digest(),
            "{cid} does not hash to its CID"
        );
        order.push(cid);
        assert!(blocks.insert(cid, bytes).is_none(), "{cid} written twice");
    }
    let head = repo.head().await.unwrap();
    let mut expected = vec![head.commit];
    let mut seen = HashSet::from([head.commit]);
    walk(head.data, &blocks, &mut seen, &mut expected);
    assert_eq!(order, expected);
    assert_eq!(report.blocks, order.len() as u64);
    blocks
}

#[test]
fn export_is_the_heads_dag_in_pre_order() {
    common::rt().block_on(async {
        let repos = populated().await;
        let blocks = export_matches_the_walk(&repos).await;
        // Every record in the head is in the file, with its exact bytes.
        let repo = repos.open(DID).await.unwrap();
        let mut records = 0;
        for collection in COLLECTIONS {
            for (_, record) in repo
                .list_records(collection, None, false, usize::MAX)
                .await
                .unwrap()
            {
                assert_eq!(blocks[&record.cid()], record.bytes().as_ref());
                records += 1;
            }
        }
        // 6,000 written (2,000 per collection), 150 deleted.
        assert_eq!(records, 6000 - 150);
    });
}

/// The exporter reads records from the record index but follows the tree:
/// an index row naming another block than the tree (as when a commit lands
/// during an export) is not used.
#[test]
fn the_tree_wins_over_a_differing_index_row() {
    common::rt().block_on(async {
        let repos = populated().await;
        let store = repos.store();
        let head = store.head(DID).await.unwrap().unwrap();
        let other = Block::new(
            0x71,
            serde_ipld_dagcbor::to_vec(&"not the record")
                .unwrap()
                .into(),
        );
        let repo = repos.open(DID).await.unwrap();
        // A record no other key shares (an update's value), so the walk
        // asks for its block at this key.
        let tree_cid = repo
            .get_record(COLLECTIONS[2], "k00011")
            .await
            .unwrap()
            .unwrap()
            .cid();
        // The head stays; only the index row for one record changes.
        store
            .commit(Commit {
                repo: DID.into(),
                expected: Some(head.commit),
                head: Head {
                    commit: head.commit,
                    rev: head.rev,
                },
                blocks: vec![other.clone()],
                records: vec![RecordChange {
                    collection: COLLECTIONS[2].into(),
                    rkey: "k00011".into(),
                    record: Some(other.clone()),
                }],
                collections: Vec::new(),
                index: Vec::new(),
                history: store::LogChange::default(),
                event: None,
                stream: None,
            })
            .await
            .unwrap();
        let blocks = export_matches_the_walk(&repos).await;
        assert!(blocks.contains_key(&tree_cid));
        assert!(!blocks.contains_key(&other.cid()));
    });
}
