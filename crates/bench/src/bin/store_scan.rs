//! Scan read-ahead: `listRecords`-shaped pages (100 records at a random
//! cursor) read cold, right after reopening SlateDB, for several
//! `scan_read_ahead_bytes` settings, on a local directory (or on
//! S3-compatible storage with `DATAREPO_BENCH_S3=s3://bucket/prefix` and the
//! `AWS_*` variables).
//!
//! Run: `cargo run --release -p datarepo-bench --bin store-scan [-- --n 300000 --pages 300]`
#![allow(clippy::disallowed_methods, clippy::unwrap_used)] // a benchmark measures wall time

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use repo::{Env, Repos, Write};
use serde_json::json;
use store::{Location, SlateKv, SlateOptions, Store};

const COLLECTION: &str = "app.bsky.feed.post";

fn rkey(i: u64) -> String {
    rkey::Tid::from_parts(1_767_225_600_000_000 + i * 10, 7)
        .unwrap()
        .to_string()
}

fn env() -> Env {
    let clock = Arc::new(std::sync::atomic::AtomicU64::new(1_767_225_600_000_000));
    Env::new(
        move || clock.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        1,
    )
}

fn main() {
    let n: u64 = datarepo_bench::arg("--n", 300_000);
    let pages: usize = datarepo_bench::arg("--pages", 300);
    let name = format!("datarepo-bench-scan-{}", std::process::id());
    let location: Location = match std::env::var("DATAREPO_BENCH_S3") {
        Ok(base) => format!("{base}/{name}").parse().unwrap(),
        Err(_) => Location::Local(std::env::temp_dir().join(&name)),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let kv = SlateKv::open(&location).await.unwrap();
        let repos = Repos::new(Arc::new(Store::new(kv.clone())), env());
        let repo = repos.create("did:plc:scan").await.unwrap();
        let mut i = 0;
        while i < n {
            let writes = (i..(i + 10_000).min(n))
                .map(|j| Write::Create {
                    collection: COLLECTION.into(),
                    rkey: Some(rkey(j)),
                    value: json!({"text": format!("post number {j}"), "createdAt": "2026-01-01T00:00:00.000Z"}),
                })
                .collect();
            repo.apply_writes(writes, None).await.unwrap();
            i += 10_000;
        }
        kv.close().await.unwrap();
        drop(repos);
        println!("{n} records; {pages} cold pages of 100 per setting, after reopening");
        // `--rounds 2` measures every setting twice, in opposite orders, so
        // the operating system's file cache favours none of them.
        let rounds: usize = datarepo_bench::arg("--rounds", 2);
        let settings = [1usize, 16 << 10, 64 << 10, 256 << 10];
        let order: Vec<usize> = (0..rounds)
            .flat_map(|r| {
                let mut o = settings.to_vec();
                if r % 2 == 1 {
                    o.reverse();
                }
                o
            })
            .collect();
        for read_ahead in order {
            let mut options = SlateOptions::default();
            options.scan_read_ahead_bytes = Some(read_ahead);
            let kv = SlateKv::open_with(&location, &options).await.unwrap();
            let repos = Repos::new(Arc::new(Store::new(kv.clone())), env());
            let repo = repos.open("did:plc:scan").await.unwrap();
            let mut rng = datarepo_bench::Rng(read_ahead as u64 + 1);
            let mut times: Vec<Duration> = Vec::with_capacity(pages);
            for _ in 0..pages {
                let cursor = rkey(rng.next_u64() % n);
                let start = Instant::now();
                let page = repo.list_records(COLLECTION, Some(&cursor), false, 100).await.unwrap();
                times.push(start.elapsed());
                std::hint::black_box(page);
            }
            times.sort();
            println!(
                "read_ahead {:>7} B: p50 {:>6.0} us  p99 {:>6.0} us",
                read_ahead,
                times[times.len() / 2].as_secs_f64() * 1e6,
                times[times.len() * 99 / 100].as_secs_f64() * 1e6
            );
            kv.close().await.unwrap();
        }
        if let Location::Local(dir) = &location {
            let _ = std::fs::remove_dir_all(dir);
        }
    });
}
