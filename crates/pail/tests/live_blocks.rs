//! `LiveBlocks` holds exactly the shards its root reaches, after any
//! sequence of writes: also when equal shards (one CID) sit in two places of
//! the tree and one of them changes, and when writes empty whole subtrees.

use crate::common;

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
};

use cid::Cid;
use common::value;
use pail::{Batch, EntriesOptions, LiveBlocks, Shard, ShardConfig, ShardFetcher};
use testkit::Rng;

/// CIDs of the shards reachable from `root`, found by walking the tree.
fn reachable(blocks: &LiveBlocks, root: Cid) -> BTreeSet<Cid> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![root];
    while let Some(cid) = todo.pop() {
        if seen.insert(cid) {
            let shard =
                pollster::block_on(blocks.get_shard(&cid)).expect("reachable shard is held");
            todo.extend((0..shard.len()).filter_map(|i| shard.link(i)));
        }
    }
    seen
}

#[test]
fn holds_exactly_what_the_root_reaches() {
    for seed in 1..=20u64 {
        let mut rng = Rng(seed);
        let config = ShardConfig {
            max_size: 400 + rng.below(600),
            max_key_length: 4 + rng.below(8),
        };
        let mut blocks = LiveBlocks::new(Arc::new(Shard::empty(config)));
        let mut model: BTreeMap<String, Cid> = BTreeMap::new();
        // Few values and mirrored key groups, so that subtrees under
        // different prefixes often have equal contents (one shared CID).
        let groups = ["p/", "q/", "r/"];
        let stems: Vec<String> = (0..40)
            .map(|_| {
                let len = 1 + rng.index(14);
                rng.string(&['a', 'b', 'c'], len)
            })
            .collect();
        for step in 0..400 {
            let mut batch = Batch::new(&blocks, blocks.root()).await_ok();
            for _ in 0..1 + rng.index(6) {
                let stem = &stems[rng.index(stems.len())];
                let v = value(rng.below(3));
                // Mostly the same write in every group, so the groups' subtrees stay equal.
                let keys: Vec<String> = if rng.index(4) == 0 {
                    vec![format!("{}{stem}", groups[rng.index(groups.len())])]
                } else {
                    groups.iter().map(|g| format!("{g}{stem}")).collect()
                };
                let del = rng.index(3) == 0;
                for k in keys {
                    if del {
                        pollster::block_on(batch.del(&k)).expect("del");
                        model.remove(&k);
                    } else {
                        pollster::block_on(batch.put(&k, v)).expect("put");
                        model.insert(k, v);
                    }
                }
            }
            let m = batch.commit();
            blocks.apply(&m);
            assert_eq!(blocks.root(), m.root);
            let reach = reachable(&blocks, m.root);
            assert_eq!(
                blocks.len(),
                reach.len(),
                "seed {seed} step {step}: held shards that the root does not reach"
            );
            let entries =
                pollster::block_on(pail::entries(&blocks, m.root, &EntriesOptions::default()))
                    .expect("every shard of the tree is held");
            let expected: Vec<(String, Cid)> = model.iter().map(|(k, v)| (k.clone(), *v)).collect();
            assert_eq!(entries, expected, "seed {seed} step {step}");
        }
    }
}

trait AwaitOk<T> {
    fn await_ok(self) -> T;
}

impl<T, F: std::future::Future<Output = Result<T, pail::Error>>> AwaitOk<T> for F {
    fn await_ok(self) -> T {
        pollster::block_on(self).expect("the root is held")
    }
}

#[test]
fn equal_subtrees_share_one_shard_until_one_changes() {
    // Keys longer than maxKeyLength are chained through one shard per
    // piece; two keys that differ only in their first piece get equal chains
    // after it, so the tree links twice to each of those shards.
    let config = ShardConfig {
        max_size: 4096,
        max_key_length: 4,
    };
    let keys = ["aaaawxyz1234", "bbbbwxyz1234"];
    let mut blocks = LiveBlocks::new(Arc::new(Shard::empty(config)));
    for k in keys {
        let m = pollster::block_on(pail::put(&blocks, blocks.root(), k, value(7))).expect("put");
        blocks.apply(&m);
    }
    // Root, and the two shared chain shards: three, each held once.
    assert_eq!(reachable(&blocks, blocks.root()).len(), 3);
    assert_eq!(blocks.len(), 3);
    // Changing one key replaces its chain; the other still needs the shared
    // shards, which the mutation lists as removed.
    let m = pollster::block_on(pail::put(&blocks, blocks.root(), keys[0], value(8))).expect("put");
    assert!(m.removals.len() >= 2, "{:?}", m.removals);
    blocks.apply(&m);
    assert_eq!(blocks.len(), reachable(&blocks, blocks.root()).len());
    assert_eq!(blocks.len(), 5);
    for (k, v) in [(keys[0], value(8)), (keys[1], value(7))] {
        let got =
            pollster::block_on(pail::get(&blocks, blocks.root(), k)).expect("every shard is held");
        assert_eq!(got, Some(v));
    }
    // Deleting the other key frees its chain too.
    let m = pollster::block_on(pail::del(&blocks, blocks.root(), keys[1])).expect("del");
    blocks.apply(&m);
    assert_eq!(blocks.len(), 3);
    assert_eq!(blocks.len(), reachable(&blocks, blocks.root()).len());
}
