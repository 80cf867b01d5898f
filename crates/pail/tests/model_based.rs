//! Model-based property tests: after any sequence of puts, deletes and
//! batches at small `maxSize` (so shards split and merge often), `get` and
//! `entries` (with every kind of range, reverse and limit) agree with a
//! `BTreeMap`; a batch's puts and deletes report the values they replace;
//! and a batch gives the same root as its operations one by one.

use crate::common;

use std::collections::BTreeMap;

use cid::Cid;
use common::{all_entries, empty_tree, value};
use pail::{Batch, EntriesOptions, MemoryBlocks, ShardConfig};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Put(String, u64),
    Del(String),
    Batch(Vec<(String, Option<u64>)>),
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[abc]{1,6}",
        2 => "[ab]{7,9}",                // around maxKeyLength 8
        1 => "[ab]{10,30}",              // chains of pieces
        1 => "[aé漢]{1,5}",               // multi-byte BMP characters
        1 => Just(String::new()),
    ]
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        6 => (key(), 0u64..1000).prop_map(|(k, v)| Op::Put(k, v)),
        3 => key().prop_map(Op::Del),
        1 => proptest::collection::vec((key(), proptest::option::of(0u64..1000)), 1..12).prop_map(Op::Batch),
    ];
    proptest::collection::vec(op, 1..80)
}

fn config() -> impl Strategy<Value = ShardConfig> {
    (
        prop_oneof![Just(300u64), Just(512), Just(1024)],
        prop_oneof![Just(8u64), Just(64)],
    )
        .prop_map(|(max_size, max_key_length)| ShardConfig {
            max_size,
            max_key_length,
        })
}

fn run(blocks: &MemoryBlocks, mut root: Cid, ops: &[Op], model: &mut BTreeMap<String, Cid>) -> Cid {
    pollster::block_on(async {
        for op in ops {
            let before = model.clone();
            let result = match op {
                Op::Put(k, v) => {
                    model.insert(k.clone(), value(*v));
                    pail::put(blocks, root, k, value(*v)).await
                }
                Op::Del(k) => {
                    model.remove(k);
                    pail::del(blocks, root, k).await
                }
                Op::Batch(items) => {
                    let mut batch = Batch::new(blocks, root).await.unwrap();
                    let mut failed = None;
                    for (k, v) in items {
                        let r = match v {
                            // Each call reports the value it replaced.
                            Some(v) => {
                                let previous = model.insert(k.clone(), value(*v));
                                let r = batch.put(k, value(*v)).await;
                                r.map(|old| assert_eq!(old, previous, "put {k:?}"))
                            }
                            None => {
                                let previous = model.remove(k);
                                let r = batch.del(k).await;
                                r.map(|old| assert_eq!(old, previous, "del {k:?}"))
                            }
                        };
                        if let Err(e) = r {
                            failed = Some(e);
                            break;
                        }
                    }
                    match failed {
                        None => Ok(batch.commit()),
                        Some(e) => Err(e),
                    }
                }
            };
            match result {
                Ok(m) => {
                    blocks.apply(&m, false);
                    root = m.root;
                }
                Err(pail::Error::ShardLimit { .. }) => *model = before,
                Err(e) => panic!("{e}"),
            }
        }
        root
    })
}

fn model_range(model: &BTreeMap<String, Cid>, o: &EntriesOptions) -> Vec<(String, Cid)> {
    let mut out: Vec<(String, Cid)> = model
        .iter()
        .filter(|(k, _)| {
            o.prefix.as_ref().is_none_or(|p| k.starts_with(p.as_str()))
                && o.gt.as_ref().is_none_or(|b| k.as_str() > b.as_str())
                && o.gte.as_ref().is_none_or(|b| k.as_str() >= b.as_str())
                && o.lt.as_ref().is_none_or(|b| k.as_str() < b.as_str())
                && o.lte.as_ref().is_none_or(|b| k.as_str() <= b.as_str())
        })
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    if o.reverse {
        out.reverse();
    }
    out.truncate(o.limit.unwrap_or(usize::MAX));
    out
}

fn bound() -> impl Strategy<Value = Option<String>> {
    proptest::option::weighted(0.3, "[abc]{0,4}")
}

fn options() -> impl Strategy<Value = EntriesOptions> {
    (
        bound(),
        bound(),
        bound(),
        bound(),
        bound(),
        any::<bool>(),
        proptest::option::of(0usize..20),
    )
        .prop_map(
            |(prefix, gt, gte, lt, lte, reverse, limit)| EntriesOptions {
                prefix,
                gt,
                gte,
                lt,
                lte,
                reverse,
                limit,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn get_and_entries_agree_with_a_btreemap(config in config(), ops in ops(), probes in proptest::collection::vec(key(), 10)) {
        let (blocks, root) = empty_tree(config);
        let mut model = BTreeMap::new();
        let root = run(&blocks, root, &ops, &mut model);
        prop_assert_eq!(all_entries(&blocks, root), model.iter().map(|(k, v)| (k.clone(), *v)).collect::<Vec<_>>());
        for k in model.keys().chain(probes.iter()) {
            let got = pollster::block_on(pail::get(&blocks, root, k)).unwrap();
            prop_assert_eq!(got, model.get(k).copied(), "get {:?}", k);
        }
    }

    #[test]
    fn ranged_entries_agree_with_a_btreemap(config in config(), ops in ops(), opts in proptest::collection::vec(options(), 8)) {
        let (blocks, root) = empty_tree(config);
        let mut model = BTreeMap::new();
        let root = run(&blocks, root, &ops, &mut model);
        for o in &opts {
            let got = pollster::block_on(pail::entries(&blocks, root, o)).unwrap();
            prop_assert_eq!(got, model_range(&model, o), "{:?}", o);
        }
    }

    #[test]
    fn pagination_with_gt_visits_every_key_once(config in config(), ops in ops(), page in 1usize..7, reverse in any::<bool>()) {
        let (blocks, root) = empty_tree(config);
        let mut model = BTreeMap::new();
        let root = run(&blocks, root, &ops, &mut model);
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let o = EntriesOptions {
                gt: if reverse { None } else { cursor.clone() },
                lt: if reverse { cursor.clone() } else { None },
                reverse,
                limit: Some(page),
                ..EntriesOptions::default()
            };
            let got = pollster::block_on(pail::entries(&blocks, root, &o)).unwrap();
            if got.is_empty() { break; }
            cursor = got.last().map(|(k, _)| k.clone());
            seen.extend(got);
        }
        let mut expected = model_range(&model, &EntriesOptions::default());
        if reverse { expected.reverse(); }
        prop_assert_eq!(seen, expected);
    }

    #[test]
    fn batch_root_equals_one_by_one_root(config in config(), prefix_ops in ops(), items in proptest::collection::vec((key(), proptest::option::of(0u64..1000)), 1..60)) {
        let (blocks, root) = empty_tree(config);
        let mut model = BTreeMap::new();
        let base = run(&blocks, root, &prefix_ops, &mut model);
        let mut one_model = model.clone();
        let one_by_one: Vec<Op> = items.iter().map(|(k, v)| match v {
            Some(v) => Op::Put(k.clone(), *v),
            None => Op::Del(k.clone()),
        }).collect();
        // Stop both at the first failing put, if any: a failed put changes nothing.
        let sequential = run(&blocks, base, &one_by_one, &mut one_model);
        let batched = pollster::block_on(async {
            let mut batch = Batch::new(&blocks, base).await.unwrap();
            for (k, v) in &items {
                let r = match v {
                    Some(v) => batch.put(k, value(*v)).await,
                    None => batch.del(k).await,
                };
                if r.is_err() { return None; }
            }
            let m = batch.commit();
            blocks.apply(&m, false);
            Some(m.root)
        });
        if let Some(batched) = batched {
            prop_assert_eq!(batched, sequential);
        }
    }
}
