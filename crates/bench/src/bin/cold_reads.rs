//! Fresh-process reads of a store a server wrote one record per commit:
//! `datarepo get`, `ls` and `query --count`, each a new process, beside the
//! running server (while writers keep writing, then quiet, then quiet with
//! `--direct-reads`) and again after its clean shutdown (SIGTERM). What the
//! user runs, on the real storage path (SlateDB on a local directory).
//!
//! Beside the server a command reads through it (its socket in the store's
//! directory); with `--direct-reads`, or after the shutdown, it opens the
//! store, replaying every WAL file written since the writer's last memtable
//! flush (before the writer bounded that backlog, ~1,400 commits made these
//! reads take 0.4–2.3 s). Target: p99 ≤ 100 ms for every command, beside
//! the server and after its shutdown, after 100,000 single-record
//! `createRecord`s.
//!
//!   cargo build --release --bin datarepo
//!   cargo run --release -p datarepo-bench --bin cold-reads -- [--records 100000 --writers 16 --reads 30]
//!
//! `DATAREPO_BIN` names another binary. `TRACE_FIRST=<RUST_LOG filter>`
//! runs each command's first read with that log filter and prints its
//! stderr (where a slow first read spends its time).

#![allow(clippy::disallowed_methods, clippy::unwrap_used)] // a benchmark measures wall time

use std::{
    path::Path,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use datarepo_bench::{ServeProcess, arg, datarepo_bin};

const TOKEN: &str = "bench";
const DID: &str = "did:web:cold-reads.example";
const POST: &str = "app.bsky.feed.post";

/// One durable `createRecord` of a post with `text`: its record key.
async fn create(client: &reqwest::Client, url: &str, text: &str) -> String {
    let body = format!(
        r#"{{"repo":"{DID}","collection":"{POST}","record":{{"text":"{text}","createdAt":"2026-11-27T00:00:00Z"}}}}"#
    );
    let response = client
        .post(url)
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success());
    let v: serde_json::Value = response.json().await.unwrap();
    v["uri"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned()
}

async fn write(base: &str, records: u64, writers: u64) -> String {
    let client = reqwest::Client::new();
    let mut tasks = Vec::new();
    for w in 0..writers {
        let client = client.clone();
        let url = format!("{base}/xrpc/com.atproto.repo.createRecord");
        tasks.push(tokio::spawn(async move {
            let mut last = String::new();
            let mut i = w;
            while i < records {
                last = create(&client, &url, &format!("post {i}")).await;
                i += writers;
            }
            last
        }));
    }
    let mut rkey = String::new();
    for t in tasks {
        rkey = t.await.unwrap();
    }
    rkey
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i].as_secs_f64() * 1000.0
}

/// Writers creating records until `stop`; they count them in `written`.
fn keep_writing(
    rt: &tokio::runtime::Runtime,
    base: &str,
    writers: u64,
    stop: &Arc<AtomicBool>,
    written: &Arc<AtomicU64>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let client = reqwest::Client::new();
    (0..writers)
        .map(|w| {
            let (client, stop, written) = (client.clone(), Arc::clone(stop), Arc::clone(written));
            let url = format!("{base}/xrpc/com.atproto.repo.createRecord");
            rt.spawn(async move {
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    create(&client, &url, &format!("more {w}-{i}")).await;
                    written.fetch_add(1, Ordering::Relaxed);
                    i += 1;
                }
            })
        })
        .collect()
}

/// Each command `reads` times as a fresh process (with `extra` arguments):
/// p50, p99, max in ms.
fn measure(bin: &Path, store: &Path, rkey: &str, reads: usize, phase: &str, extra: &[&str]) {
    let commands: [(&str, Vec<&str>); 3] = [
        ("get", vec!["get", POST, rkey]),
        ("ls", vec!["ls", POST, "--limit", "10"]),
        ("query --count", vec!["query", POST, "--count"]),
    ];
    for (name, args) in commands {
        let mut times = Vec::with_capacity(reads);
        for i in 0..reads {
            let started = Instant::now();
            let mut command = std::process::Command::new(bin);
            if i == 0
                && let Ok(filter) = std::env::var("TRACE_FIRST")
            {
                command.env("RUST_LOG", filter);
            }
            let out = command
                .arg("--store")
                .arg(store)
                .args(["--repo", DID])
                .args(extra)
                .args(&args)
                .output()
                .unwrap();
            times.push(started.elapsed());
            assert!(out.status.success(), "{name}: {out:?}");
            if i == 0 && std::env::var_os("TRACE_FIRST").is_some() {
                eprintln!("--- first {name} ({phase}): {:?}", started.elapsed());
                eprintln!("{}", String::from_utf8_lossy(&out.stderr));
            }
        }
        times.sort();
        println!(
            "{phase:<24} {name:<14} p50 {:>7.1} ms  p99 {:>7.1} ms  max {:>7.1} ms",
            percentile(&times, 0.5),
            percentile(&times, 0.99),
            percentile(&times, 1.0)
        );
    }
}

fn wal_files(store: &Path) -> usize {
    std::fs::read_dir(store.join("db/wal")).map_or(0, Iterator::count)
}

fn main() {
    let records: u64 = arg("--records", 100_000);
    let writers: u64 = arg("--writers", 16);
    let reads: usize = arg("--reads", 30);
    let bin = datarepo_bin();
    let dir = testkit::tempdir("bench-cold-reads");
    let store = dir.path().join("data");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = ServeProcess::start(&bin, &store, TOKEN);
    rt.block_on(server.ready());
    let started = Instant::now();
    let rkey = rt.block_on(write(&server.base, records, writers));
    let secs = started.elapsed().as_secs_f64();
    println!(
        "wrote {records} records, one per createRecord, {writers} writers: {secs:.1} s ({:.0}/s); {} WAL files in the store",
        records as f64 / secs,
        wal_files(&store)
    );
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let writing = keep_writing(&rt, &server.base, writers, &stop, &written);
    let started = Instant::now();
    measure(&bin, &store, &rkey, reads, "beside, during writes", &[]);
    stop.store(true, Ordering::Relaxed);
    for w in writing {
        rt.block_on(w).unwrap();
    }
    println!(
        "  (meanwhile {writers} writers created {} records, {:.0}/s)",
        written.load(Ordering::Relaxed),
        written.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
    );
    measure(&bin, &store, &rkey, reads, "beside the server", &[]);
    measure(
        &bin,
        &store,
        &rkey,
        reads,
        "beside, --direct-reads",
        &["--direct-reads"],
    );
    let status = server.stop();
    assert!(status.success(), "serve exited with {status}");
    println!(
        "after shutdown: {} WAL files in the store",
        wal_files(&store)
    );
    measure(&bin, &store, &rkey, reads, "after its shutdown", &[]);
}
