//! Where `@web3-storage/pail@0.5.0` loses data, datarepo follows the spec
//! and keeps the map semantics. Each test builds the case, checks that our
//! tree still holds every key, and runs the same operations through the
//! reference to show that it really does lose data there (so the case
//! keeps pinning a real difference).

use crate::common;

use std::collections::BTreeMap;

use cid::Cid;
use common::{all_entries, empty_tree, value};
use pail::ShardConfig;
use serde_json::{Value, json};

enum Op<'a> {
    Put(&'a str, Cid),
    Del(&'a str),
}

/// Runs `ops` on our tree and the reference; returns (ours, reference,
/// model) entries at the end.
fn run(config: ShardConfig, ops: &[Op<'_>]) -> [Vec<(String, String)>; 3] {
    let (blocks, mut root) = empty_tree(config);
    let mut model = BTreeMap::new();
    let mut lines = vec![
        json!({"op": "init", "maxSize": config.max_size, "maxKeyLength": config.max_key_length}),
    ];
    for op in ops {
        let m = pollster::block_on(async {
            match op {
                Op::Put(k, v) => {
                    model.insert((*k).to_owned(), *v);
                    lines.push(json!({"op": "put", "key": k, "value": v.to_string()}));
                    pail::put(&blocks, root, k, *v).await
                }
                Op::Del(k) => {
                    model.remove(*k);
                    lines.push(json!({"op": "del", "key": k}));
                    pail::del(&blocks, root, k).await
                }
            }
        })
        .unwrap();
        blocks.apply(&m, false);
        root = m.root;
    }
    lines.push(json!({"op": "entries"}));
    let input: String = lines.iter().map(|l| l.to_string() + "\n").collect();
    let out = testkit::run_node("pail-oracle.mjs", &input);
    let listed: Value = serde_json::from_str(out.last().unwrap()).unwrap();
    let reference: Vec<(String, String)> =
        serde_json::from_value(listed["entries"].clone()).unwrap();
    let strings = |v: Vec<(String, Cid)>| {
        v.into_iter()
            .map(|(k, v)| (k, v.to_string()))
            .collect::<Vec<_>>()
    };
    let model = strings(model.into_iter().collect());
    [strings(all_entries(&blocks, root)), reference, model]
}

const SMALL_KEYS: ShardConfig = ShardConfig {
    max_size: 4096,
    max_key_length: 4,
};

/// Bug: putting a key longer than maxKeyLength whose first piece equals an
/// existing key replaces that key's value with a bare shard link.
#[test]
fn long_key_through_an_existing_key_keeps_its_value() {
    let [ours, reference, model] = run(
        SMALL_KEYS,
        &[Op::Put("abcd", value(1)), Op::Put("abcdef", value(2))],
    );
    assert_eq!(ours, model);
    assert_ne!(
        reference, model,
        "the reference is expected to drop \"abcd\""
    );
}

/// Bug: deleting the last key under an entry `[link, data]` removes the
/// whole entry, data included, instead of leaving the data.
#[test]
fn emptying_a_shard_keeps_its_parents_data() {
    let ops = [
        Op::Put("abcdef", value(1)),
        Op::Put("abcd", value(2)),
        Op::Del("abcdef"),
    ];
    let [ours, reference, model] = run(SMALL_KEYS, &ops);
    assert_eq!(ours, model);
    assert_eq!(model, vec![("abcd".to_owned(), value(2).to_string())]);
    assert_ne!(
        reference, model,
        "the reference is expected to drop \"abcd\""
    );
}

/// Bug: when a shard empties, every parent entry linking to a shard with
/// the same CID is removed, including unrelated keys whose child shards
/// happen to have equal contents.
#[test]
fn emptying_a_shard_leaves_equal_sibling_shards_alone() {
    let ops = [
        Op::Put("aaaaXY", value(1)),
        Op::Put("bbbbXY", value(1)),
        Op::Del("aaaaXY"),
    ];
    let [ours, reference, model] = run(SMALL_KEYS, &ops);
    assert_eq!(ours, model);
    assert_eq!(model, vec![("bbbbXY".to_owned(), value(1).to_string())]);
    assert_ne!(
        reference, model,
        "the reference is expected to drop \"bbbbXY\""
    );
}
