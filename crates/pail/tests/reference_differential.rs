//! Differential test against `@web3-storage/pail@0.5.0` (npm): the same
//! random workloads (puts of new keys, overwrites, deletes, batches, keys
//! longer than maxKeyLength, long shared prefixes, BMP Unicode keys, small
//! maxSize so sharding is frequent) must give the same root CID after every
//! operation.
//!
//! The one allowed divergence is where the reference loses data (its known
//! bugs, see `docs/pail.md`): then the reference's entries must differ from
//! a `BTreeMap` model while ours equal it, and that workload stops there.

use crate::common;

use std::collections::BTreeMap;

use cid::Cid;
use common::{all_entries, empty_tree, model_entries, value};
use pail::{Batch, Error, ShardConfig};
use serde_json::{Value, json};
use testkit::Rng;

#[derive(Debug, Clone)]
enum Op {
    Put(String, Cid),
    Del(String),
    /// Applied as one batch here; by the reference as `pail/batch` when
    /// there are only puts, else one by one.
    Batch(Vec<(String, Option<Cid>)>),
}

struct Workload {
    config: ShardConfig,
    ops: Vec<Op>,
}

fn workload(seed: u64) -> Workload {
    let mut rng = Rng(seed);
    let max_size = [1024, 1536, 2048, 3072, 4096][rng.index(5)];
    let max_key_length = [64, 64, 16, 8][rng.index(4)];
    let ascii: Vec<char> = "abcde".chars().collect();
    let wide: Vec<char> = "aéßñΩ€漢字ー".chars().collect();
    let stems: Vec<String> = (0..3)
        .map(|_| rng.string(&['x', 'y'], max_key_length))
        .collect();
    let mut live: Vec<String> = Vec::new();
    let mut counter = seed << 20;
    let mut next_value = || {
        counter += 1;
        value(counter)
    };
    let key = |rng: &mut Rng, live: &Vec<String>| -> String {
        match rng.index(10) {
            0..=2 => {
                let len = 1 + rng.index(10);
                rng.string(&ascii, len)
            }
            3 | 4 => {
                let user = rng.string(&ascii, 2);
                let len = 1 + rng.index(6);
                format!("users/{user}/posts/{}", rng.string(&ascii, len))
            }
            5 => {
                // Around maxKeyLength: exactly at, one under, one over.
                let len = max_key_length - 1 + rng.index(3);
                rng.string(&['a', 'b'], len)
            }
            6 => {
                // Longer than maxKeyLength, often sharing a stem.
                let stem = &stems[rng.index(stems.len())];
                let tail_len = 1 + rng.index(2 * max_key_length + 5);
                let tail = rng.string(&['x', 'y', 'z'], tail_len);
                format!("{stem}{tail}")
            }
            // The exact stem as a plain key, rarely: a later longer key
            // through it hits the reference's data-loss bug.
            7 if rng.index(8) == 0 => stems[rng.index(stems.len())].clone(),
            7 => format!("{}{}", rng.string(&ascii, 1), stems[rng.index(stems.len())]),
            8 => {
                let len = 1 + rng.index(8);
                rng.string(&wide, len)
            }
            _ if !live.is_empty() => live[rng.index(live.len())].clone(),
            _ => "fallback".to_owned(),
        }
    };
    // A new key longer than maxKeyLength that extends a stored key of at
    // least maxKeyLength characters can hit the reference's data-loss bug
    // (its first piece replaces the stored value); such keys are pinned by
    // `reference_bugs.rs`, and kept out of these workloads so that most
    // of them run to the end.
    let risky = |k: &str, live: &Vec<String>| {
        k.chars().count() > max_key_length
            && live.iter().any(|l| {
                l.len() < k.len()
                    && k.starts_with(l.as_str())
                    && l.chars().count() >= max_key_length
            })
    };
    let mut ops = Vec::new();
    for _ in 0..160 {
        match rng.index(20) {
            0..=10 => {
                let k = key(&mut rng, &live);
                if risky(&k, &live) {
                    continue;
                }
                live.push(k.clone());
                ops.push(Op::Put(k, next_value()));
            }
            11 | 12 if !live.is_empty() => {
                // Overwrite.
                let k = live[rng.index(live.len())].clone();
                ops.push(Op::Put(k, next_value()));
            }
            13..=16 if !live.is_empty() => {
                let i = rng.index(live.len());
                ops.push(Op::Del(live.swap_remove(i)));
            }
            17 => ops.push(Op::Del(key(&mut rng, &live))),
            _ => {
                let with_dels = rng.index(2) == 0;
                let mut items = Vec::new();
                for _ in 0..1 + rng.index(30) {
                    if with_dels && !live.is_empty() && rng.index(4) == 0 {
                        let i = rng.index(live.len());
                        items.push((live.swap_remove(i), None));
                    } else {
                        let k = key(&mut rng, &live);
                        if risky(&k, &live) {
                            continue;
                        }
                        live.push(k.clone());
                        items.push((k, Some(next_value())));
                    }
                }
                ops.push(Op::Batch(items));
            }
        }
    }
    Workload {
        config: ShardConfig {
            max_size: max_size as u64,
            max_key_length: max_key_length as u64,
        },
        ops,
    }
}

fn op_json(op: &Op) -> Value {
    match op {
        Op::Put(k, v) => json!({"op": "put", "key": k, "value": v.to_string()}),
        Op::Del(k) => json!({"op": "del", "key": k}),
        Op::Batch(items) if items.iter().all(|(_, v)| v.is_some()) => json!({
            "op": "batch",
            "puts": items.iter().map(|(k, v)| json!([k, v.map(|v| v.to_string())])).collect::<Vec<_>>(),
        }),
        Op::Batch(items) => json!({
            "op": "seq",
            "ops": items.iter().map(|(k, v)| match v {
                Some(v) => json!({"op": "put", "key": k, "value": v.to_string()}),
                None => json!({"op": "del", "key": k}),
            }).collect::<Vec<_>>(),
        }),
    }
}

fn script(w: &Workload, ops: &[Op], tail: &[Value]) -> String {
    let mut lines = vec![
        json!({"op": "init", "maxSize": w.config.max_size, "maxKeyLength": w.config.max_key_length}),
    ];
    lines.extend(ops.iter().map(op_json));
    lines.extend(tail.iter().cloned());
    lines.iter().map(|l| l.to_string() + "\n").collect()
}

/// Applies `op` to our tree and the model; returns the new root or the error.
fn apply(
    blocks: &pail::MemoryBlocks,
    root: Cid,
    op: &Op,
    model: &mut BTreeMap<String, Cid>,
) -> Result<Cid, Error> {
    pollster::block_on(async {
        let m = match op {
            Op::Put(k, v) => pail::put(blocks, root, k, *v).await?,
            Op::Del(k) => pail::del(blocks, root, k).await?,
            Op::Batch(items) => {
                let mut batch = Batch::new(blocks, root).await?;
                for (k, v) in items {
                    match v {
                        Some(v) => batch.put(k, *v).await?,
                        None => batch.del(k).await?,
                    };
                }
                batch.commit()
            }
        };
        blocks.apply(&m, false);
        match op {
            Op::Put(k, v) => {
                model.insert(k.clone(), *v);
            }
            Op::Del(k) => {
                model.remove(k);
            }
            Op::Batch(items) => {
                for (k, v) in items {
                    match v {
                        Some(v) => model.insert(k.clone(), *v),
                        None => model.remove(k),
                    };
                }
            }
        }
        Ok(m.root)
    })
}

/// Replays operation `i` step by step in the reference, listing its
/// entries after each step; true when some listing differs from the model
/// (starting from `model`, the state before operation `i`).
fn reference_lost_data(w: &Workload, i: usize, model: &BTreeMap<String, Cid>) -> bool {
    let steps: Vec<(String, Option<Cid>)> = match &w.ops[i] {
        Op::Put(k, v) => vec![(k.clone(), Some(*v))],
        Op::Del(k) => vec![(k.clone(), None)],
        Op::Batch(items) => items.clone(),
    };
    let mut tail = Vec::new();
    for (k, v) in &steps {
        tail.push(match v {
            Some(v) => json!({"op": "put", "key": k, "value": v.to_string()}),
            None => json!({"op": "del", "key": k}),
        });
        tail.push(json!({"op": "entries"}));
    }
    let out = testkit::run_node("pail-oracle.mjs", &script(w, &w.ops[..i], &tail));
    let mut model = model.clone();
    for (j, (k, v)) in steps.iter().enumerate() {
        match v {
            Some(v) => model.insert(k.clone(), *v),
            None => model.remove(k),
        };
        let listed: Value = serde_json::from_str(&out[1 + i + 2 * j + 1]).unwrap();
        let expected: Vec<(String, String)> = model
            .iter()
            .map(|(k, v)| (k.clone(), v.to_string()))
            .collect();
        let reference: Vec<(String, String)> =
            serde_json::from_value(listed["entries"].clone()).unwrap();
        if reference != expected {
            return true;
        }
    }
    false
}

#[test]
fn same_root_as_reference_after_every_operation() {
    let workloads: Vec<Workload> = (1..=64).map(workload).collect();
    let input: String = workloads.iter().map(|w| script(w, &w.ops, &[])).collect();
    let answers = testkit::run_node("pail-oracle.mjs", &input);
    let mut answers = answers.iter();
    let (mut compared, mut reference_bugs, mut errors, mut splits) = (0, 0, 0, 0usize);

    for (seed, w) in workloads.iter().enumerate() {
        let (blocks, mut root) = empty_tree(w.config);
        let init: Value = serde_json::from_str(answers.next().unwrap()).unwrap();
        assert_eq!(
            init["root"],
            root.to_string(),
            "empty root, workload {seed}"
        );
        let mut model = BTreeMap::new();
        let mut diverged = false;
        for (i, op) in w.ops.iter().enumerate() {
            let theirs: Value = serde_json::from_str(answers.next().unwrap()).unwrap();
            if diverged {
                continue;
            }
            let before = model.clone();
            let ours = apply(&blocks, root, op, &mut model);
            match (&ours, theirs.get("error")) {
                (Err(e), Some(_)) => {
                    assert!(
                        matches!(e, Error::ShardLimit { .. }),
                        "workload {seed} op {i}: {e}"
                    );
                    model = before;
                    errors += 1;
                    assert_eq!(theirs["root"], root.to_string());
                    continue;
                }
                (Err(e), None) => {
                    panic!("workload {seed} op {i} {op:?}: we failed ({e}), the reference did not")
                }
                (Ok(_), Some(err)) => panic!(
                    "workload {seed} op {i} {op:?}: the reference failed ({err}), we did not"
                ),
                (Ok(new_root), None) => {
                    root = *new_root;
                    compared += 1;
                }
            }
            if theirs["root"] != root.to_string() {
                // Allowed only where the reference lost data and we did not.
                let ours: Vec<(String, Cid)> = all_entries(&blocks, root);
                assert_eq!(
                    ours,
                    model_entries(&model),
                    "workload {seed} op {i}: our entries differ from the model"
                );
                assert!(
                    reference_lost_data(w, i, &before),
                    "workload {seed} op {i} {op:?}: roots differ but the reference kept the map semantics"
                );
                reference_bugs += 1;
                diverged = true;
                continue;
            }
            if i % 10 == 0 {
                assert_eq!(
                    all_entries(&blocks, root),
                    model_entries(&model),
                    "workload {seed} op {i}"
                );
            }
        }
        assert_eq!(
            all_entries(&blocks, root),
            model_entries(&model),
            "workload {seed} at the end"
        );
        splits += blocks.len();
    }
    eprintln!(
        "compared {compared} operations; {errors} shard-limit errors agreed; \
         {reference_bugs} workloads stopped at a reference data-loss bug; {splits} shards made"
    );
    assert!(compared > 4000, "too few operations compared: {compared}");
    assert!(
        reference_bugs * 4 < workloads.len(),
        "reference bugs dominate: {reference_bugs}"
    );
}
