//! Pail against `@web3-storage/pail@0.5.0`, same keys and values (random
//! 20–40 character keys, raw-codec CID values), in memory, additions stored
//! and removals dropped, both measured in this run:
//!
//! - N puts one at a time (root after each), and the time SHA-256 alone
//!   needs for exactly the bytes those puts hashed;
//! - one batch of M puts (same root as one by one, checked against the
//!   reference's);
//! - median `get` and full `entries` scan at M keys.
//!
//! Run: `cargo run --release -p datarepo-bench --bin pail-vs-reference -- [--puts N] [--batch M] [--no-reference]`
//! (the reference needs `npm ci --prefix tests/oracles`; at the defaults it
//! takes about ten minutes).
#![allow(clippy::disallowed_methods)] // a benchmark measures wall time

use std::{
    ops::ControlFlow,
    process::Command,
    sync::Arc,
    time::{Duration, Instant},
};

use datarepo_bench::{random_keys, raw_value};
use multihash_codetable::{Code, MultihashDigest};
use pail::{Batch, EntriesOptions, MemoryBlocks, Shard, ShardConfig};
use serde_json::{Value, json};

fn fresh() -> (MemoryBlocks, cid::Cid) {
    let blocks = MemoryBlocks::new();
    let root = Arc::new(Shard::empty(ShardConfig::default()));
    blocks.insert(Arc::clone(&root));
    (blocks, root.cid())
}

fn main() {
    let puts = datarepo_bench::arg("--puts", 10_000);
    let batch_n = datarepo_bench::arg("--batch", 100_000);
    let with_reference = !std::env::args().any(|a| a == "--no-reference");
    let n = puts.max(batch_n);
    let keys = random_keys(n, 0xda7a);
    let values: Vec<cid::Cid> = (0..n as u64).map(raw_value).collect();

    // N single puts.
    let (blocks, mut root) = fresh();
    let mut hashed: Vec<usize> = Vec::with_capacity(puts * 2);
    let start = Instant::now();
    for i in 0..puts {
        let m = pollster::block_on(pail::put(&blocks, root, &keys[i], values[i])).expect("put");
        hashed.extend(m.additions.iter().map(|s| s.bytes().len()));
        blocks.apply(&m, true);
        root = m.root;
    }
    let single = start.elapsed();
    let single_root = root;

    // SHA-256 alone over exactly those byte counts.
    let max = hashed.iter().copied().max().unwrap_or(0);
    let buf: Vec<u8> = (0..max).map(|i| (i * 31 % 251) as u8).collect();
    let start = Instant::now();
    for &len in &hashed {
        std::hint::black_box(Code::Sha2_256.digest(&buf[..len]));
    }
    let sha_only = start.elapsed();
    let hashed_total: usize = hashed.iter().sum();

    // One batch.
    let (blocks, root) = fresh();
    let start = Instant::now();
    let mut batch = pollster::block_on(Batch::new(&blocks, root)).expect("batch");
    for i in 0..batch_n {
        pollster::block_on(batch.put(&keys[i], values[i])).expect("batch put");
    }
    let m = batch.commit();
    blocks.apply(&m, true);
    let batched = start.elapsed();
    let batch_root = m.root;

    // Gets and a full scan at `batch_n` keys.
    let mut samples: Vec<Duration> = (0..batch_n.min(100_000))
        .map(|i| {
            let k = &keys[(i * 7919) % batch_n];
            let t = Instant::now();
            let v = pollster::block_on(pail::get(&blocks, batch_root, k)).expect("get");
            let e = t.elapsed();
            assert!(v.is_some());
            e
        })
        .collect();
    samples.sort();
    let get_median = samples[samples.len() / 2];
    // The first scan also builds each shard's key text (a per-shard cache);
    // report it and a second, warm scan.
    let scan_once = || {
        let start = Instant::now();
        let mut count = 0usize;
        pollster::block_on(pail::for_each_entry(
            &blocks,
            batch_root,
            &EntriesOptions::default(),
            |_, v| {
                std::hint::black_box(v);
                count += 1;
                ControlFlow::Continue(())
            },
        ))
        .expect("scan");
        assert_eq!(count, batch_n);
        count as f64 / start.elapsed().as_secs_f64()
    };
    let cold_scan_rate = scan_once();
    let scan_rate = scan_once();

    println!("## datarepo pail ({puts} single puts, {batch_n}-put batch)");
    println!("| measure | datarepo |");
    println!("| --- | --- |");
    println!("| {puts} single puts | {:.3} s |", single.as_secs_f64());
    println!(
        "| SHA-256 alone over the {:.2} GB those puts hashed | {:.3} s (ratio {:.2}) |",
        hashed_total as f64 / 1e9,
        sha_only.as_secs_f64(),
        single.as_secs_f64() / sha_only.as_secs_f64()
    );
    println!("| {batch_n}-put batch | {:.3} s |", batched.as_secs_f64());
    println!(
        "| get, median at {batch_n} keys | {:.2} µs |",
        get_median.as_secs_f64() * 1e6
    );
    println!(
        "| full entries scan, first | {:.1} M entries/s |",
        cold_scan_rate / 1e6
    );
    println!(
        "| full entries scan, again | {:.1} M entries/s |",
        scan_rate / 1e6
    );

    if !with_reference {
        return;
    }
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/oracles");
    let path = std::env::temp_dir().join(format!("pail-bench-{}.json", std::process::id()));
    let workload = json!({
        "keys": keys,
        "values": values.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "puts": puts,
        "batch": batch_n,
    });
    std::fs::write(&path, workload.to_string()).expect("write workload");
    let out = Command::new("node")
        .arg("bench-pail.mjs")
        .arg(&path)
        .current_dir(dir)
        .output()
        .expect("run node (npm ci --prefix tests/oracles first)");
    let _ = std::fs::remove_file(&path);
    assert!(
        out.status.success(),
        "reference failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("reference output");
    let f = |k: &str| r[k].as_f64().unwrap_or(f64::NAN);
    println!();
    println!("## against @web3-storage/pail 0.5.0, same run");
    println!("| measure | datarepo | reference | datarepo speed-up |");
    println!("| --- | --- | --- | --- |");
    println!(
        "| {puts} single puts | {:.3} s | {:.1} s | {:.0}× |",
        single.as_secs_f64(),
        f("single_puts_s"),
        f("single_puts_s") / single.as_secs_f64()
    );
    println!(
        "| {batch_n}-put batch | {:.3} s | {:.1} s | {:.0}× |",
        batched.as_secs_f64(),
        f("batch_s"),
        f("batch_s") / batched.as_secs_f64()
    );
    println!(
        "| get, median | {:.2} µs | {:.0} µs | {:.0}× |",
        get_median.as_secs_f64() * 1e6,
        f("get_median_us"),
        f("get_median_us") / (get_median.as_secs_f64() * 1e6)
    );
    println!(
        "| entries scan (first) | {:.1} M/s | {:.2} M/s | {:.0}× |",
        cold_scan_rate / 1e6,
        f("entries_per_s") / 1e6,
        cold_scan_rate / f("entries_per_s")
    );
    let same_single = r["single_puts_root"] == single_root.to_string();
    let same_batch = r["batch_root"] == batch_root.to_string();
    println!("\nsame roots as the reference: single puts {same_single}, batch {same_batch}");
    assert!(same_single && same_batch, "roots differ from the reference");
}
