//! datarepo against `shrike` (AT Protocol's Merkle Search Tree repository in
//! Rust), in memory, on the same records, in the same run:
//!
//! 1. N small records, a new root after every insert. shrike: MST insert of
//!    the record's CID, then `root_cid()` (its nodes encoded and hashed);
//!    the record bytes are pre-encoded for it. datarepo: one full commit per
//!    record through `Repository::apply_writes` (JSON to dag-cbor, record
//!    block, Pail update, commit block, record index, store write). And,
//!    like for like with shrike's loop, Pail alone: the record's CID, a put
//!    and the new root, shards in memory.
//! 2. CAR export of the N-record repository (median of several runs, the
//!    two exporters alternating).
//!
//! Run: `cargo run --release -p datarepo-bench --bin repo-vs-shrike [-- --n 100000]`
//! (`--ours-only 1` runs datarepo's commits alone, for a profiler; each
//! side's line says how much its phase raised the process's peak memory).
#![allow(clippy::disallowed_methods, clippy::unwrap_used)] // a benchmark measures wall time

/// The allocator the `datarepo` binary ships with (shrike, measured in the
/// same process, gets it too).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use multihash_codetable::{Code, MultihashDigest};
use repo::{Env, Record, Repos, Write};
use serde_json::{Value, json};
use shrike::{
    crypto::K256SigningKey,
    mst::{MemBlockStore, Tree},
    syntax::{Did, Nsid, RecordKey, TidClock},
};
use store::{MemoryKv, Store};

/// The records' collection (`--collection NSID`, default `app.bsky.feed.post`).
fn collection() -> &'static str {
    static NAME: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        datarepo_bench::arg("--collection", "app.bsky.feed.post".to_owned())
    });
    &NAME
}

fn records(n: usize) -> Vec<(String, Value)> {
    // TIDs one millisecond apart, as a busy account makes them.
    (0..n)
        .map(|i| {
            let tid = rkey::Tid::from_parts(1_767_225_600_000_000 + i as u64 * 1000, 7).unwrap();
            let value = json!({
                "$type": collection(),
                "text": format!("post number {i}, a short message"),
                "createdAt": "2026-01-01T00:00:00.000Z",
            });
            (tid.to_string(), value)
        })
        .collect()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let n: usize = datarepo_bench::arg("--n", 100_000);
    let runs: usize = datarepo_bench::arg("--runs", 9);
    let recs = records(n);
    // Pre-encoded records for shrike (datarepo encodes its own from JSON).
    let encoded: Vec<(String, Record)> = recs
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                Record::from_json(collection(), v.clone()).unwrap(),
            )
        })
        .collect();

    // `--ours-only 1`: datarepo's commits alone (for profiling them).
    let ours_only = datarepo_bench::arg("--ours-only", 0u8) != 0;

    // 1. shrike: insert + new root per record. Its tree stays alive, so
    // that our commits do not run on memory it freed.
    let start = Instant::now();
    let base = datarepo_bench::current_mib();
    datarepo_bench::reset_peak();
    let mut tree = Tree::new(Box::new(MemBlockStore::new()));
    if !ours_only {
        for (rkey, record) in &encoded {
            let cid = shrike::cbor::Cid::compute(shrike::cbor::Codec::Drisl, record.bytes());
            tree.insert(format!("{}/{rkey}", collection()), cid)
                .unwrap();
            std::hint::black_box(tree.root_cid().unwrap());
        }
    }
    let shrike_insert = start.elapsed();
    let shrike_peak = datarepo_bench::peak_mib() - base;

    // 1. Pail alone, like for like with shrike's MST: record CID, put and
    // new root per record, shards in memory (the replaced ones dropped).
    // Its shards, like shrike's tree, stay alive through our commits.
    let max_size: u64 = datarepo_bench::arg("--max-size", repo::DEFAULT_MAX_SHARD_SIZE);
    let max_key_length: u64 = datarepo_bench::arg("--max-key-length", repo::DEFAULT_MAX_KEY_LENGTH);
    let config = pail::ShardConfig {
        max_size,
        max_key_length,
    };
    // `--pail-keeps-versions 1`: keep replaced shards too, in full, as
    // shrike keeps every node version.
    let pail_keeps_versions = datarepo_bench::arg("--pail-keeps-versions", 0u8) != 0;
    let start = Instant::now();
    let base = datarepo_bench::current_mib();
    datarepo_bench::reset_peak();
    let blocks = pail::MemoryBlocks::new();
    if !ours_only {
        let empty = Arc::new(pail::Shard::empty(config));
        blocks.insert(Arc::clone(&empty));
        let mut root = empty.cid();
        pollster::block_on(async {
            for (rkey, record) in &encoded {
                let cid = cid::Cid::new_v1(0x71, Code::Sha2_256.digest(record.bytes()));
                let m = pail::put(&blocks, root, &format!("{}/{rkey}", collection()), cid)
                    .await
                    .unwrap();
                blocks.apply(&m, !pail_keeps_versions);
                root = std::hint::black_box(m.root);
            }
        });
    }
    let pail_insert = start.elapsed();
    let pail_peak = datarepo_bench::peak_mib() - base;

    // 1. datarepo: one commit per record.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let clock = Arc::new(std::sync::atomic::AtomicU64::new(1_767_225_600_000_000));
    let env = Env::new(
        move || clock.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        1,
    );
    let repos = Repos::new(Arc::new(Store::new(MemoryKv::new())), env).with_shard_config(config);
    let repo = rt.block_on(repos.create("did:plc:bench")).unwrap();
    let base = datarepo_bench::current_mib();
    datarepo_bench::reset_peak();
    let start = Instant::now();
    rt.block_on(async {
        for (rkey, value) in &recs {
            repo.apply_writes(
                vec![Write::Create {
                    collection: collection().into(),
                    rkey: Some(rkey.clone()),
                    value: value.clone(),
                }],
                None,
            )
            .await
            .unwrap();
        }
    });
    let ours_insert = start.elapsed();
    let ours_peak = datarepo_bench::peak_mib() - base;
    drop((tree, blocks));
    if ours_only {
        println!(
            "commit       datarepo {:>8.3} s  ({:>7.0} commits/s, memory +{ours_peak:.0} MiB)",
            ours_insert.as_secs_f64(),
            n as f64 / ours_insert.as_secs_f64(),
        );
        return;
    }

    // 2. CAR export. shrike needs a signed commit to export.
    let did = Did::try_from("did:plc:bench").unwrap();
    let mut shrike_repo = shrike::repo::repo::Repo::new(did, TidClock::new(1).unwrap());
    let collection = Nsid::try_from(collection()).unwrap();
    for (rkey, record) in &encoded {
        shrike_repo
            .create(
                &collection,
                &RecordKey::try_from(rkey.as_str()).unwrap(),
                record.bytes(),
            )
            .unwrap();
    }
    let key = K256SigningKey::from_bytes(&[7; 32]).unwrap();
    shrike_repo.commit(&key).unwrap();
    // Alternating, so that both see the same state of this noisy machine.
    let (mut shrike_times, mut ours_times) = (Vec::new(), Vec::new());
    let (mut shrike_car_len, mut ours_car_len) = (0, 0);
    for _ in 0..runs {
        let start = Instant::now();
        let car = shrike_repo.export_car().unwrap();
        shrike_times.push(start.elapsed());
        shrike_car_len = car.len();
        drop(car);
        let start = Instant::now();
        let (car, _) = rt
            .block_on(repo.export_car(Vec::with_capacity(32 << 20), None, |_| {}))
            .unwrap();
        ours_times.push(start.elapsed());
        ours_car_len = car.len();
    }
    let (shrike_export, ours_export) = (median(shrike_times), median(ours_times));

    println!("records: {n} (one commit / new root each), in memory");
    println!(
        "insert+root  shrike   {:>8.3} s  ({:>7.0} records/s, memory +{shrike_peak:.0} MiB)",
        shrike_insert.as_secs_f64(),
        n as f64 / shrike_insert.as_secs_f64()
    );
    println!(
        "insert+root  pail     {:>8.3} s  ({:>7.0} records/s, memory +{pail_peak:.0} MiB)  ratio shrike/pail {:.2}x",
        pail_insert.as_secs_f64(),
        n as f64 / pail_insert.as_secs_f64(),
        shrike_insert.as_secs_f64() / pail_insert.as_secs_f64()
    );
    println!(
        "commit       datarepo {:>8.3} s  ({:>7.0} commits/s, memory +{ours_peak:.0} MiB)  ratio shrike/datarepo {:.2}x",
        ours_insert.as_secs_f64(),
        n as f64 / ours_insert.as_secs_f64(),
        shrike_insert.as_secs_f64() / ours_insert.as_secs_f64()
    );
    println!(
        "export CAR   shrike   {:>8.1} ms  ({} bytes, median of {runs})",
        shrike_export.as_secs_f64() * 1e3,
        shrike_car_len
    );
    println!(
        "export CAR   datarepo {:>8.1} ms  ({} bytes, median of {runs})  ratio shrike/datarepo {:.2}x",
        ours_export.as_secs_f64() * 1e3,
        ours_car_len,
        shrike_export.as_secs_f64() / ours_export.as_secs_f64()
    );
}
