//! Every shard a write adds is named by the SHA-256 of its bytes, computed
//! here from scratch. Writes hash a new shard version from where it first
//! differs from the version it replaces (`docs/pail.md`); these workloads
//! make such versions all the time: keys that arrive in order (a hot path
//! of shards whose only change is the link to the child below), updates in
//! place, deletes, and batches.

use crate::common;

use common::{empty_tree, value};
use multihash_codetable::{Code, MultihashDigest};
use pail::{Batch, Cid, MemoryBlocks, Mutation, ShardConfig};

/// Checks every added shard against an independent hash of its bytes,
/// then stores the mutation.
fn check_and_apply(blocks: &MemoryBlocks, m: &Mutation) -> usize {
    for shard in &m.additions {
        let rehashed = Cid::new_v1(pail::DAG_CBOR, Code::Sha2_256.digest(shard.bytes()));
        assert_eq!(
            shard.cid(),
            rehashed,
            "a shard of {} bytes is named by a CID that is not its hash",
            shard.bytes().len()
        );
    }
    blocks.apply(m, true);
    m.additions.iter().map(|s| s.bytes().len()).sum()
}

/// Keys that arrive in order, like TIDs made one millisecond apart.
fn ordered_key(i: u64) -> String {
    format!("app.bsky.feed.post/3m{:011x}", 1_000_000 + i * 977)
}

fn workload(config: ShardConfig) {
    let (blocks, mut root) = empty_tree(config);
    let n = 3_000;
    let mut shard_bytes = 0;
    pollster::block_on(async {
        for i in 0..n {
            let m = pail::put(&blocks, root, &ordered_key(i), value(i))
                .await
                .unwrap();
            shard_bytes += check_and_apply(&blocks, &m);
            root = m.root;
        }
        // Updates in place keep every shard's entry count: the new version
        // shares the bytes before the changed entry.
        for i in (0..n).step_by(7) {
            let m = pail::put(&blocks, root, &ordered_key(i), value(i + n))
                .await
                .unwrap();
            check_and_apply(&blocks, &m);
            root = m.root;
        }
        for i in (0..n).step_by(5) {
            let m = pail::del(&blocks, root, &ordered_key(i)).await.unwrap();
            check_and_apply(&blocks, &m);
            root = m.root;
        }
        let mut batch = Batch::new(&blocks, root).await.unwrap();
        for i in (1..n).step_by(3) {
            batch.put(&ordered_key(i), value(i + 2 * n)).await.unwrap();
        }
        let m = batch.commit();
        check_and_apply(&blocks, &m);
        root = m.root;
    });
    // The workload did make large shard versions, or it would test nothing.
    assert!(
        shard_bytes as u64 > n * config.max_size.min(4096) / 4,
        "only {shard_bytes} bytes of shards written"
    );
    // And the tree still reads back: the deleted keys, less those the
    // batch put back.
    let expected = (0..n).filter(|i| i % 5 != 0 || i % 3 == 1).count();
    assert_eq!(common::all_entries(&blocks, root).len(), expected);
}

#[test]
fn small_shards() {
    workload(ShardConfig {
        max_size: 2048,
        max_key_length: 64,
    });
}

#[test]
fn repository_sized_shards() {
    workload(ShardConfig {
        max_size: 8192,
        max_key_length: 24,
    });
}

#[test]
fn large_shards() {
    workload(ShardConfig {
        max_size: 64 * 1024,
        max_key_length: 64,
    });
}
