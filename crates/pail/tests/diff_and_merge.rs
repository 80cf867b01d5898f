//! `diff` reports exactly the key changes between two trees (whatever
//! their shapes) and the shards that differ; `merge` applies targets'
//! changes to a base like a map would.

use crate::common;

use std::collections::{BTreeMap, BTreeSet, HashSet};

use cid::Cid;
use common::{all_entries, empty_tree, value};
use pail::{KeyChange, MemoryBlocks, ShardConfig};
use proptest::prelude::*;

fn build(blocks: &MemoryBlocks, mut root: Cid, puts: &[(String, Option<u64>)]) -> Cid {
    for (k, v) in puts {
        let m = pollster::block_on(async {
            match v {
                Some(v) => pail::put(blocks, root, k, value(*v)).await,
                None => pail::del(blocks, root, k).await,
            }
        })
        .unwrap();
        blocks.apply(&m, false);
        root = m.root;
    }
    root
}

fn model_diff(a: &BTreeMap<String, Cid>, b: &BTreeMap<String, Cid>) -> Vec<KeyChange> {
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| KeyChange {
            key: k.clone(),
            old: a.get(k).copied(),
            new: b.get(k).copied(),
        })
        .collect()
}

/// Every shard CID reachable from `root`.
fn reachable(blocks: &MemoryBlocks, root: Cid) -> HashSet<Cid> {
    let all: BTreeMap<Cid, _> = blocks.shards().into_iter().map(|s| (s.cid(), s)).collect();
    let mut seen = HashSet::new();
    let mut todo = vec![root];
    while let Some(c) = todo.pop() {
        if seen.insert(c) {
            todo.extend(all[&c].entries().filter_map(|(_, v)| v.link()));
        }
    }
    seen
}

fn ops() -> impl Strategy<Value = Vec<(String, Option<u64>)>> {
    proptest::collection::vec(
        ("[abc]{1,7}", proptest::option::weighted(0.8, 0u64..5)),
        0..60,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn diff_matches_the_model(common_ops in ops(), a_ops in ops(), b_ops in ops()) {
        let config = ShardConfig { max_size: 400, max_key_length: 4 };
        let (blocks, root) = empty_tree(config);
        let base = build(&blocks, root, &common_ops);
        let a = build(&blocks, base, &a_ops);
        let b = build(&blocks, base, &b_ops);
        let ma: BTreeMap<String, Cid> = all_entries(&blocks, a).into_iter().collect();
        let mb: BTreeMap<String, Cid> = all_entries(&blocks, b).into_iter().collect();
        let d = pollster::block_on(pail::diff(&blocks, a, b)).unwrap();
        prop_assert_eq!(&d.keys, &model_diff(&ma, &mb));
        let (ra, rb) = (reachable(&blocks, a), reachable(&blocks, b));
        // Every shard only b reaches is reported (a holder of a needs
        // exactly these); reported shards are all reachable from their side.
        // Equal-content shards share a CID, so a shard opened on one side
        // may also sit, unopened, inside a subtree both sides share: such
        // a shard can be reported too (see `Diff`).
        let additions: HashSet<Cid> = d.additions.iter().copied().collect();
        let removals: HashSet<Cid> = d.removals.iter().copied().collect();
        prop_assert!(rb.difference(&ra).all(|c| additions.contains(c)));
        prop_assert!(ra.difference(&rb).all(|c| removals.contains(c)));
        prop_assert!(additions.iter().all(|c| rb.contains(c)));
        prop_assert!(removals.iter().all(|c| ra.contains(c)));
    }

    #[test]
    fn merge_applies_each_targets_changes(common_ops in ops(), a_ops in ops(), b_ops in ops()) {
        let config = ShardConfig { max_size: 400, max_key_length: 4 };
        let (blocks, root) = empty_tree(config);
        let base = build(&blocks, root, &common_ops);
        let a = build(&blocks, base, &a_ops);
        let b = build(&blocks, base, &b_ops);
        let m = pollster::block_on(pail::merge(&blocks, base, &[a, b])).unwrap();
        blocks.apply(&m, false);
        let mbase: BTreeMap<String, Cid> = all_entries(&blocks, base).into_iter().collect();
        let mut expected = mbase.clone();
        for target in [a, b] {
            let mt: BTreeMap<String, Cid> = all_entries(&blocks, target).into_iter().collect();
            for change in model_diff(&mbase, &mt) {
                match change.new {
                    Some(v) => expected.insert(change.key, v),
                    None => expected.remove(&change.key),
                };
            }
        }
        prop_assert_eq!(all_entries(&blocks, m.root), expected.into_iter().collect::<Vec<_>>());
    }
}

#[test]
fn diff_of_equal_roots_is_empty_and_differently_shaped_equal_trees_have_no_key_changes() {
    let config = ShardConfig {
        max_size: 1000,
        max_key_length: 64,
    };
    let (blocks, root) = empty_tree(config);
    let keys: Vec<(String, Option<u64>)> = (0..30).map(|i| (format!("k{i:02}"), Some(i))).collect();
    let forward = build(&blocks, root, &keys);
    let mut reversed = keys.clone();
    reversed.reverse();
    let backward = build(&blocks, root, &reversed);
    let d = pollster::block_on(pail::diff(&blocks, forward, forward)).unwrap();
    assert!(d.keys.is_empty() && d.additions.is_empty() && d.removals.is_empty());
    let d = pollster::block_on(pail::diff(&blocks, forward, backward)).unwrap();
    assert!(
        d.keys.is_empty(),
        "same contents, history-dependent shapes: {:?}",
        d.keys
    );
}
