//! datarepo's repository at scale, in one run:
//!
//! 1. `apply_writes` of N records (batches of `--batch`) into an in-memory
//!    store: records/s and peak memory.
//! 2. CAR export of that repository, and import of the CAR into a fresh
//!    in-memory store: records/s and peak memory.
//! 3. `list_records` of 100-record pages at random cursors in the
//!    N-record collection, in memory and on SlateDB in a local directory:
//!    median and p99 latency.
//! 4. Durable single-record commits on SlateDB in a local directory, for 1
//!    and 16 concurrent writers to one repository (group commit).
//!
//! Run: `cargo run --release -p datarepo-bench --bin repo-scale [-- --n 1000000 --batch 10000 --secs 5]`
//! (`--only-apply 1` stops after step 1, `--only-import 1` after the in-memory import;
//! `--write-car FILE` saves the exported CAR, and `--import-car FILE` only
//! imports that file into memory, in a process that did nothing else before,
//! as `datarepo import` would: the in-run import reuses memory the export
//! freed, which this VM otherwise has to fault in)
#![allow(clippy::disallowed_methods, clippy::unwrap_used)] // a benchmark measures wall time

/// The allocator the `datarepo` binary ships with (shrike, measured in the
/// same process, gets it too).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use repo::{Env, Repos, Write};
use serde_json::json;
use store::{Kv, MemoryKv, SlateKv, Store};

const COLLECTION: &str = "app.bsky.feed.post";

fn env() -> Env {
    let clock = Arc::new(std::sync::atomic::AtomicU64::new(1_767_225_600_000_000));
    Env::new(
        move || clock.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        1,
    )
}

fn rkey(i: u64) -> String {
    rkey::Tid::from_parts(1_767_225_600_000_000 + i * 10, 7)
        .unwrap()
        .to_string()
}

fn value(i: u64) -> serde_json::Value {
    json!({"$type": COLLECTION, "text": format!("post number {i}"), "createdAt": "2026-01-01T00:00:00.000Z"})
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p) as usize]
}

async fn page_latency<K: Kv>(repos: &Repos<K>, n: u64) -> (Duration, Duration) {
    let repo = repos.open("did:plc:scale").await.unwrap();
    let mut rng = datarepo_bench::Rng(42);
    let mut times = Vec::new();
    for _ in 0..1000 {
        let cursor = rkey(rng.next_u64() % n);
        let start = Instant::now();
        let page = repo
            .list_records(COLLECTION, Some(&cursor), false, 100)
            .await
            .unwrap();
        times.push(start.elapsed());
        assert!(!page.is_empty() || cursor >= rkey(n - 101));
    }
    times.sort();
    (percentile(&times, 0.5), percentile(&times, 0.99))
}

async fn durable_commits(writers: usize, secs: f64) -> f64 {
    let dir = std::env::temp_dir().join(format!(
        "datarepo-bench-repo-commits-{writers}-{}",
        std::process::id()
    ));
    let kv = SlateKv::open_local(&dir).await.unwrap();
    let repos = Arc::new(Repos::new(Arc::new(Store::new(kv.clone())), env()));
    let repo = repos.create("did:plc:durable").await.unwrap();
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let start = Instant::now();
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let repo = Arc::clone(&repo);
            tokio::spawn(async move {
                let mut n = 0u64;
                while Instant::now() < deadline {
                    repo.apply_writes(
                        vec![Write::Create {
                            collection: COLLECTION.into(),
                            rkey: Some(format!("w{w}-{n}")),
                            value: value(n),
                        }],
                        None,
                    )
                    .await
                    .unwrap();
                    n += 1;
                }
                n
            })
        })
        .collect();
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    let rate = total as f64 / start.elapsed().as_secs_f64();
    kv.close().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    rate
}

/// Imports `car` into a fresh in-memory store; prints time and memory.
async fn import(car: &[u8]) {
    let base = datarepo_bench::current_mib();
    datarepo_bench::reset_peak();
    let fresh = Repos::new(Arc::new(Store::new(MemoryKv::new())), env());
    let start = Instant::now();
    let imported = fresh.import_car(car, None).await.unwrap();
    let t = start.elapsed();
    println!(
        "import {} records, memory: {:.2} s, {:.0} records/s, peak {:.0} MiB (+{:.0}, CAR {:.0} MiB included)",
        imported.records,
        t.as_secs_f64(),
        imported.records as f64 / t.as_secs_f64(),
        datarepo_bench::peak_mib(),
        datarepo_bench::peak_mib() - base,
        car.len() as f64 / (1 << 20) as f64
    );
}

fn main() {
    let import_car: String = datarepo_bench::arg("--import-car", String::new());
    if !import_car.is_empty() {
        let car = std::fs::read(&import_car).unwrap();
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
            .block_on(import(&car));
        return;
    }
    let n: u64 = datarepo_bench::arg("--n", 1_000_000);
    let batch: u64 = datarepo_bench::arg("--batch", 10_000);
    let secs: f64 = datarepo_bench::arg("--secs", 5.0);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // 1. apply_writes in memory.
        let base = datarepo_bench::current_mib();
        datarepo_bench::reset_peak();
        let repos = Repos::new(Arc::new(Store::new(MemoryKv::new())), env());
        let repo = repos.create("did:plc:scale").await.unwrap();
        // The requests, as a client would send them, made before timing.
        let batches: Vec<Vec<Write>> = (0..n)
            .step_by(usize::try_from(batch).unwrap())
            .map(|i| {
                (i..(i + batch).min(n))
                    .map(|j| Write::Create {
                        collection: COLLECTION.into(),
                        rkey: Some(rkey(j)),
                        value: value(j),
                    })
                    .collect()
            })
            .collect();
        let start = Instant::now();
        for writes in batches {
            repo.apply_writes(writes, None).await.unwrap();
        }
        let t = start.elapsed();
        println!(
            "apply_writes {n} records in batches of {batch}, memory: {:.2} s, {:.0} records/s, peak {:.0} MiB (+{:.0})",
            t.as_secs_f64(),
            n as f64 / t.as_secs_f64(),
            datarepo_bench::peak_mib(),
            datarepo_bench::peak_mib() - base
        );

        if datarepo_bench::arg("--only-apply", 0) == 1 {
            return;
        }

        // 3a. pages in memory.
        let (p50, p99) = page_latency(&repos, n).await;
        println!(
            "list_records 100 of {n}, memory: p50 {:.0} us, p99 {:.0} us",
            p50.as_secs_f64() * 1e6,
            p99.as_secs_f64() * 1e6
        );

        // 2. export, then import into a fresh store.
        let start = Instant::now();
        let (car, report) = repo.export_car(Vec::new(), None, |_| {}).await.unwrap();
        let t = start.elapsed();
        println!(
            "export {n} records: {:.2} s, {} blocks, {:.1} MiB",
            t.as_secs_f64(),
            report.blocks,
            car.len() as f64 / (1 << 20) as f64
        );
        let write_car: String = datarepo_bench::arg("--write-car", String::new());
        if !write_car.is_empty() {
            std::fs::write(&write_car, &car).unwrap();
        }
        drop(repo);
        drop(repos);
        import(&car).await;
        if datarepo_bench::arg("--only-import", 0) == 1 {
            return;
        }

        // 3b. pages on SlateDB in a local directory.
        let dir = std::env::temp_dir().join(format!("datarepo-bench-repo-ls-{}", std::process::id()));
        let kv = SlateKv::open_local(&dir).await.unwrap();
        let slate = Repos::new(Arc::new(Store::new(kv.clone())), env());
        let start = Instant::now();
        slate.import_car(&car[..], None).await.unwrap();
        println!("import {n} records, local SlateDB (durable): {:.2} s", start.elapsed().as_secs_f64());
        drop(car);
        let (p50, p99) = page_latency(&slate, n).await;
        println!(
            "list_records 100 of {n}, local SlateDB: p50 {:.0} us, p99 {:.0} us",
            p50.as_secs_f64() * 1e6,
            p99.as_secs_f64() * 1e6
        );
        kv.close().await.unwrap();
        let _ = std::fs::remove_dir_all(&dir);

        // 4. durable commits.
        for writers in [1, 16] {
            let rate = durable_commits(writers, secs).await;
            println!("durable commits, local SlateDB, {writers} writers on one repository: {rate:.0} commits/s");
        }
    });
}
