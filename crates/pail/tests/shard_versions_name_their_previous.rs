//! A shard a write makes by changing an existing one names it
//! (`Shard::previous`), which a store uses to keep the new version as a
//! change to the old: the named shard is one the write replaced, never the
//! new version itself. Shards decoded from bytes name none.

use crate::common;

use common::{empty_tree, value};
use pail::{Batch, MemoryBlocks, Mutation, Shard, ShardConfig};

/// Checks the mutation's additions against its removals, stores it, and
/// returns how many additions named a previous version.
fn check_and_apply(blocks: &MemoryBlocks, m: &Mutation) -> usize {
    let mut named = 0;
    for shard in &m.additions {
        assert!(Shard::decode(shard.bytes()).unwrap().previous().is_none());
        let Some(previous) = shard.previous() else {
            continue;
        };
        named += 1;
        assert_ne!(previous, shard.cid());
        // A replaced shard equal to another addition is not a removal.
        assert!(
            m.removals.contains(&previous) || m.additions.iter().any(|a| a.cid() == previous),
            "{previous} is neither removed nor added by this write"
        );
    }
    blocks.apply(m, true);
    named
}

#[test]
fn new_versions_name_the_shards_they_replace() {
    let config = ShardConfig {
        max_size: 2048,
        max_key_length: 24,
    };
    let (blocks, mut root) = empty_tree(config);
    let key = |i: u64| format!("app.bsky.feed.post/3m{:011x}", 1_000_000 + i * 977);
    let mut named = 0;
    pollster::block_on(async {
        for i in 0..1_000 {
            let m = pail::put(&blocks, root, &key(i), value(i)).await.unwrap();
            named += check_and_apply(&blocks, &m);
            root = m.root;
        }
        for i in (0..1_000).step_by(3) {
            let m = pail::del(&blocks, root, &key(i)).await.unwrap();
            named += check_and_apply(&blocks, &m);
            root = m.root;
        }
        let mut batch = Batch::new(&blocks, root).await.unwrap();
        for i in (0..1_000).step_by(7) {
            batch.put(&key(i), value(i + 5_000)).await.unwrap();
        }
        let m = batch.commit();
        named += check_and_apply(&blocks, &m);
    });
    // Every put and delete changes at least the root.
    assert!(
        named >= 1_334,
        "only {named} additions named a previous version"
    );
}
