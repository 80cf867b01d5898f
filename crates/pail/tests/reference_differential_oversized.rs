//! Differential test against `@web3-storage/pail@0.5.0` (npm) on long
//! workloads that keep shards over `maxSize`. A split moves only the
//! common-prefix group of the key just put, so a shard can stay oversized,
//! and every later put into it must split it again: also a put that stores
//! the value its key already has (the spec's size rule applies after every
//! put; the reference checks the size before it checks for a change).
//!
//! Each workload is thousands of operations at `maxSize` 1–4 KiB: puts of
//! new random keys of 1–40 characters, re-puts of live keys with their
//! current value and with a new one, deletes of live and of absent keys,
//! and batches of all of these. The root must equal the reference's after
//! every operation.
//!
//! The workload is generated while it is applied to our tree, which steers
//! some re-puts of an unchanged value into a shard that is oversized at that
//! moment (found by its entries' values: every put stores a distinct value).
//! That only chooses keys; the expected roots all come from the reference.
//!
//! Short keys are prefixes of longer ones, so splits leave `[link, data]`
//! entries; deletes that could empty the shard under one are left out,
//! because there the reference loses data (`docs/pail.md`,
//! `reference_bugs.rs`). The other known reference bugs need keys longer
//! than `maxKeyLength` or two equal shards, which these workloads do not
//! make (keys of at most 40 characters, a distinct value per put). So every
//! root must match, to the end of every workload.

use crate::common;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use cid::Cid;
use common::{all_entries, empty_tree, model_entries, value};
use pail::{Batch, Error, MemoryBlocks, ShardConfig, ShardFetcher};
use serde_json::{Value, json};
use testkit::Rng;

#[derive(Debug, Clone)]
enum Op {
    Put(String, Cid),
    Del(String),
    /// One batch here; the reference applies it with `pail/batch` when it
    /// has only puts, else one operation at a time.
    Batch(Vec<(String, Option<Cid>)>),
}

/// Few enough characters that short keys are prefixes of many others
/// (splits then leave `[link, data]` entries, and shards stay oversized),
/// and that most shards hold keys with a common prefix to split on.
const ALPHABET: &str = "abcdefgh";

/// 1 to 40 characters of `alphabet`.
fn random_key(rng: &mut Rng, alphabet: &[char]) -> String {
    let len = 1 + rng.index(40);
    rng.string(alphabet, len)
}

/// Whether deleting `key` is safe from the reference's data-loss bug: a
/// delete that empties the shard under a `[link, data]` entry drops that
/// entry's data there. Such an entry's key is a live key that is a proper
/// prefix of the deleted one, so a key with no live proper prefix is safe.
fn deletable(key: &str, live: &BTreeMap<String, Cid>) -> bool {
    !key.char_indices()
        .skip(1)
        .any(|(i, _)| live.contains_key(&key[..i]))
}

/// The live map, with each value's key (every put stores a new value) and
/// the live keys in a list, to pick one at random in constant time.
#[derive(Clone, Default)]
struct Model {
    live: BTreeMap<String, Cid>,
    keys: HashMap<Cid, String>,
    list: Vec<String>,
    at: HashMap<String, usize>,
}

impl Model {
    fn put(&mut self, k: &str, v: Cid) {
        match self.live.insert(k.to_owned(), v) {
            Some(old) => {
                self.keys.remove(&old);
            }
            None => {
                self.at.insert(k.to_owned(), self.list.len());
                self.list.push(k.to_owned());
            }
        }
        self.keys.insert(v, k.to_owned());
    }

    fn del(&mut self, k: &str) {
        if let Some(old) = self.live.remove(k) {
            self.keys.remove(&old);
            let i = self.at.remove(k).expect("a live key is listed");
            self.list.swap_remove(i);
            if let Some(moved) = self.list.get(i) {
                self.at.insert(moved.clone(), i);
            }
        }
    }

    /// Sets `k` to `v` (`None` deletes it), logging the value it had.
    fn set(&mut self, k: &str, v: Option<Cid>, log: &mut Vec<(String, Option<Cid>)>) {
        log.push((k.to_owned(), self.live.get(k).copied()));
        match v {
            Some(v) => self.put(k, v),
            None => self.del(k),
        }
    }

    /// Undoes the changes in `log`.
    fn undo(&mut self, log: Vec<(String, Option<Cid>)>) {
        for (k, v) in log.into_iter().rev() {
            match v {
                Some(v) => self.put(&k, v),
                None => self.del(&k),
            }
        }
    }

    fn pick(&self, rng: &mut Rng) -> Option<(String, Cid)> {
        if self.list.is_empty() {
            return None;
        }
        let k = &self.list[rng.index(self.list.len())];
        Some((k.clone(), self.live[k]))
    }

    /// A live key that is safe to delete, if one of the first few tried is.
    fn pick_deletable(&self, rng: &mut Rng) -> Option<String> {
        (0..8)
            .filter_map(|_| self.pick(rng))
            .map(|(k, _)| k)
            .find(|k| deletable(k, &self.live))
    }
}

/// A live key stored as data in a shard over `max_size`, with its value.
fn key_in_oversized_shard(
    blocks: &MemoryBlocks,
    max_size: u64,
    model: &Model,
    rng: &mut Rng,
) -> Option<(String, Cid)> {
    let mut oversized: Vec<_> = blocks
        .shards()
        .into_iter()
        .filter(|s| s.bytes().len() as u64 > max_size)
        .collect();
    oversized.sort_by_key(|s| s.cid());
    let shard = oversized.get(rng.index(oversized.len().max(1)))?;
    let data: Vec<Cid> = (0..shard.len()).filter_map(|i| shard.data(i)).collect();
    let v = *data.get(rng.index(data.len().max(1)))?;
    model.keys.get(&v).map(|k| (k.clone(), v))
}

/// Applies `op` to our tree, keeping only the live tree's blocks.
fn apply(blocks: &MemoryBlocks, root: Cid, op: &Op) -> Result<Cid, Error> {
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
        blocks.apply(&m, true);
        Ok(m.root)
    })
}

/// A workload, and what our tree answered to each operation.
struct Run {
    config: ShardConfig,
    ops: Vec<Op>,
    roots: Vec<Result<Cid, Error>>,
    /// Single re-puts of an unchanged value into an oversized shard.
    re_puts_into_oversized: usize,
}

fn run(seed: u64, len: usize) -> Run {
    let mut rng = Rng(seed);
    let config = ShardConfig {
        max_size: [1024, 1536, 2048, 3072, 4096][rng.index(5)],
        max_key_length: 64,
    };
    let alphabet: Vec<char> = ALPHABET.chars().collect();
    let (blocks, mut root) = empty_tree(config);
    let mut model = Model::default();
    let mut counter = seed << 32;
    let mut fresh_value = move || {
        counter += 1;
        value(counter)
    };
    let mut out = Run {
        config,
        ops: Vec::with_capacity(len),
        roots: Vec::with_capacity(len),
        re_puts_into_oversized: 0,
    };
    while out.ops.len() < len {
        let mut steered = false;
        // The model changes as the operation is made; undone if we refuse it.
        let mut log = Vec::new();
        let op = match rng.index(20) {
            // Grow the tree faster than it shrinks, so shards fill up.
            0..=7 => Op::Put(random_key(&mut rng, &alphabet), fresh_value()),
            // A live key put again with the value it has: one stored in an
            // oversized shard when there is one, or any.
            8..=10 => {
                let found = key_in_oversized_shard(&blocks, config.max_size, &model, &mut rng);
                steered = found.is_some();
                match found.or_else(|| model.pick(&mut rng)) {
                    Some((k, v)) => Op::Put(k, v),
                    None => continue,
                }
            }
            11 | 12 => match model.pick(&mut rng) {
                Some((k, _)) => Op::Put(k, fresh_value()),
                None => continue,
            },
            13 | 14 => match model.pick_deletable(&mut rng) {
                Some(k) => Op::Del(k),
                None => continue,
            },
            15 => {
                // An absent key: a random one, or a prefix of a live key
                // (often a shard link's key, which a delete leaves alone).
                let k = match (rng.index(2), model.pick(&mut rng)) {
                    (0, Some((k, _))) => k.chars().take(1 + rng.index(4)).collect(),
                    _ => random_key(&mut rng, &alphabet),
                };
                if model.live.contains_key(&k) {
                    continue;
                }
                Op::Del(k)
            }
            _ => {
                // Puts of new keys, re-puts of the current value, new
                // values, and (in half the batches) deletes, in one batch.
                let with_dels = rng.index(2) == 0;
                let mut items = Vec::new();
                for _ in 0..1 + rng.index(40) {
                    let put = match rng.index(6) {
                        0 | 1 => Some((random_key(&mut rng, &alphabet), fresh_value())),
                        2 => key_in_oversized_shard(&blocks, config.max_size, &model, &mut rng)
                            .or_else(|| model.pick(&mut rng)),
                        3 => model.pick(&mut rng),
                        4 => model.pick(&mut rng).map(|(k, _)| (k, fresh_value())),
                        _ => None,
                    };
                    let item = match put {
                        Some((k, v)) => (k, Some(v)),
                        None if with_dels => {
                            let k = match model.pick_deletable(&mut rng) {
                                Some(k) if rng.index(2) == 0 => k,
                                _ => random_key(&mut rng, &alphabet),
                            };
                            if model.live.contains_key(&k) && !deletable(&k, &model.live) {
                                continue;
                            }
                            (k, None)
                        }
                        None => continue,
                    };
                    model.set(&item.0, item.1, &mut log);
                    items.push(item);
                }
                if items.is_empty() {
                    continue;
                }
                Op::Batch(items)
            }
        };
        match &op {
            Op::Put(k, v) => model.set(k, Some(*v), &mut log),
            Op::Del(k) => model.set(k, None, &mut log),
            Op::Batch(_) => {}
        }
        let result = apply(&blocks, root, &op);
        match result {
            Ok(new_root) => {
                root = new_root;
                out.re_puts_into_oversized += usize::from(steered);
            }
            Err(_) => model.undo(log),
        }
        if out.ops.len().is_multiple_of(500) {
            assert_eq!(
                all_entries(&blocks, root),
                model_entries(&model.live),
                "seed {seed} op {}",
                out.ops.len()
            );
        }
        out.ops.push(op);
        out.roots.push(result);
    }
    assert_eq!(
        all_entries(&blocks, root),
        model_entries(&model.live),
        "seed {seed} at the end"
    );
    // Only the live tree is kept (removals dropped): every block held is
    // reachable from the root, and every reachable one is held.
    assert_eq!(blocks.len(), reachable_shards(&blocks, root), "seed {seed}");
    out
}

/// The number of distinct shards reachable from `root`.
fn reachable_shards(blocks: &MemoryBlocks, root: Cid) -> usize {
    let mut seen = BTreeSet::new();
    let mut todo = vec![root];
    while let Some(cid) = todo.pop() {
        if !seen.insert(cid) {
            continue;
        }
        let shard = pollster::block_on(blocks.get_shard(&cid)).expect("reachable shard is stored");
        todo.extend((0..shard.len()).filter_map(|i| shard.link(i)));
    }
    seen.len()
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

fn script(run: &Run) -> String {
    let init = json!({"op": "init", "maxSize": run.config.max_size, "maxKeyLength": run.config.max_key_length});
    std::iter::once(init)
        .chain(run.ops.iter().map(op_json))
        .map(|line| line.to_string() + "\n")
        .collect()
}

#[test]
fn same_root_as_reference_while_shards_stay_oversized() {
    const WORKLOADS: u64 = 5;
    const OPS_PER_WORKLOAD: usize = 5_000;
    let runs: Vec<Run> = (1..=WORKLOADS).map(|s| run(s, OPS_PER_WORKLOAD)).collect();
    let input: String = runs.iter().map(script).collect();
    let answers = testkit::run_node("pail-oracle.mjs", &input);
    assert_eq!(
        answers.len(),
        runs.iter().map(|r| r.ops.len() + 1).sum::<usize>(),
        "one answer per operation"
    );
    let mut answers = answers.iter();
    let (mut compared, mut refused) = (0usize, 0usize);
    for (n, run) in runs.iter().enumerate() {
        let init: Value = serde_json::from_str(answers.next().expect("init answer")).unwrap();
        let (_, empty) = empty_tree(run.config);
        assert_eq!(init["root"], empty.to_string(), "empty root, workload {n}");
        let mut root = empty;
        for (i, (op, ours)) in run.ops.iter().zip(&run.roots).enumerate() {
            let theirs: Value = serde_json::from_str(answers.next().expect("answer")).unwrap();
            match (ours, theirs.get("error")) {
                (Ok(ours), None) => root = *ours,
                // Both refuse a key no split can make room for; nothing changes.
                (Err(Error::ShardLimit { .. }), Some(_)) => refused += 1,
                (ours, theirs) => panic!(
                    "workload {n} op {i} {op:?}: we answered {ours:?}, the reference {theirs:?}"
                ),
            }
            assert_eq!(
                theirs["root"],
                root.to_string(),
                "workload {n} ({:?}) op {i} {op:?}: roots differ",
                run.config
            );
            compared += 1;
        }
    }
    let steered: usize = runs.iter().map(|r| r.re_puts_into_oversized).sum();
    eprintln!(
        "compared {compared} operations; {steered} single re-puts of an unchanged value \
         into an oversized shard; {refused} refused by both"
    );
    assert!(
        compared >= 25_000,
        "too few operations compared: {compared}"
    );
    assert!(refused * 100 < compared, "refusals dominate: {refused}");
    // The workloads must reach the state this file exists for.
    assert!(
        steered >= 10,
        "too few re-puts into oversized shards: {steered}"
    );
}
