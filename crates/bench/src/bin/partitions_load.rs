//! Partitions: the aggregate durable `createRecord` rate of one store of 4
//! partitions written by 1, 2 and 4 `datarepo serve` processes on one
//! bucket (SeaweedFS locally, as the test command starts it), against an
//! unpartitioned store written by one process in the same run; the CPU
//! each process used; and the memory one process holds per open
//! partition. What the user runs: `datarepo serve` as processes.
//!
//! Rates: `--writers` connections (default 64), each writing its own
//! repository (`did:web:wN.bench`, spread over the partitions by their
//! hash) through the process that writes that repository's partition
//! (`--partitions-owned` splits the partitions evenly), for `--secs`
//! seconds after one warm-up second. Processes are pinned round-robin to
//! the machine's cores with `taskset` (when it exists).
//!
//! Memory: one process serving a local store of 1 and of 64 partitions,
//! idle after opening and after 20 writes to every partition; the
//! difference of their resident sizes over 63.
//!
//!   cargo build --release -p datarepo-cli -p datarepo-bench
//!   (source scripts/s3-test-server.sh; target/release/partitions-load --secs 8)
//!
//! Needs the AWS_* settings and DATAREPO_TEST_S3 (`s3://bucket/prefix`).

#![allow(clippy::disallowed_methods, clippy::unwrap_used)] // a benchmark measures wall time

use std::{
    path::Path,
    sync::Arc,
    time::{Duration, Instant},
};

use datarepo_bench::{ServeProcess, arg, create_records_for, datarepo_bin};

const TOKEN: &str = "bench";
const PARTITIONS: u32 = 4;

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
}

/// Resident memory of process `pid`, MiB: now (`VmRSS:`) or its peak
/// (`VmHWM:`).
fn rss_mib(pid: u32) -> f64 {
    status_mib(pid, "VmRSS:")
}

fn status_mib(pid: u32, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn pin(pid: u32, core: usize) {
    if Path::new("/usr/bin/taskset").exists() {
        let _ = std::process::Command::new("/usr/bin/taskset")
            .args(["-a", "-p", "-c", &core.to_string(), &pid.to_string()])
            .stdout(std::process::Stdio::null())
            .status();
    }
}

fn init(bin: &Path, location: &str, partitions: u32) {
    let out = std::process::Command::new(bin)
        .args([
            "--store",
            location,
            "init",
            "--partitions",
            &partitions.to_string(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

async fn partition_writers(client: &reqwest::Client, base: &str) -> Vec<bool> {
    let Ok(response) = client.get(format!("{base}/xrpc/_health")).send().await else {
        return Vec::new();
    };
    let v: serde_json::Value = response.json().await.unwrap_or_default();
    v["partitions"]
        .as_array()
        .map(|ps| ps.iter().map(|p| p["role"] == "writer").collect())
        .unwrap_or_default()
}

struct Round {
    writes_per_sec: f64,
    /// Each server's CPU (cores busy on average).
    cpu: Vec<f64>,
    /// The object store's CPU, when its process is known.
    store_cpu: Option<f64>,
}

/// `processes` servers of a fresh 4-partition store (or, with `None`, one
/// server of an unpartitioned store), `writers` connections for `secs`.
async fn round(
    bin: &Path,
    root: &str,
    processes: Option<usize>,
    writers: usize,
    secs: f64,
    object_store: Option<u32>,
) -> Round {
    let location = format!(
        "{root}/partitions-load-{}-{}",
        processes.map_or("plain".to_owned(), |n| n.to_string()),
        std::process::id()
    );
    let count = processes.unwrap_or(1);
    if processes.is_some() {
        init(bin, &location, PARTITIONS);
    }
    let per = PARTITIONS as usize / count;
    let servers: Vec<ServeProcess> = (0..count)
        .map(|i| {
            let owned = format!("{}-{}", i * per, (i + 1) * per - 1);
            let mut args = vec![];
            if processes.is_some() {
                args.extend(["--partitions-owned", owned.as_str()]);
            }
            ServeProcess::start_with(bin, Path::new(&location), TOKEN, &args)
        })
        .collect();
    for (i, s) in servers.iter().enumerate() {
        s.ready().await;
        pin(s.pid(), i % cores());
    }
    let client = reqwest::Client::new();
    if processes.is_some() {
        for (i, s) in servers.iter().enumerate() {
            let mine = i * per..(i + 1) * per;
            while !partition_writers(&client, &s.base)
                .await
                .iter()
                .enumerate()
                .all(|(p, w)| !mine.contains(&p) || *w)
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    let partitions = store::Partitions::new(PARTITIONS).unwrap();
    // Each writer's repository and the server writing its partition.
    let mut groups: Vec<Vec<usize>> = vec![Vec::new(); count];
    for w in 0..writers {
        let p = partitions.of(&format!("did:web:w{w}.bench")) as usize;
        groups[if processes.is_some() { p / per } else { 0 }].push(w);
    }
    let writes = |secs: f64| {
        let tasks: Vec<_> = servers
            .iter()
            .zip(&groups)
            .filter(|(_, group)| !group.is_empty())
            .map(|(s, group)| {
                let (base, group) = (s.base.clone(), group.clone());
                let connections = group.len();
                let body: Arc<dyn Fn(usize, u64) -> String + Send + Sync> =
                    Arc::new(move |i, n| {
                        format!(
                            r#"{{"repo":"did:web:w{}.bench","collection":"app.bsky.feed.post","record":{{"text":"post {n}","createdAt":"2026-11-28T00:00:00Z"}}}}"#,
                            group[i]
                        )
                    });
                tokio::spawn(async move {
                    create_records_for(&base, TOKEN, secs, connections, body, None).await
                })
            })
            .collect::<Vec<_>>();
        async move {
            let mut total = 0;
            for t in tasks {
                total += t.await.unwrap();
            }
            total
        }
    };
    writes(1.0).await;
    let before: Vec<f64> = servers
        .iter()
        .map(|s| datarepo_bench::cpu_secs(s.pid()))
        .collect();
    let store_before = object_store.map(datarepo_bench::cpu_secs);
    let started = Instant::now();
    let total = writes(secs).await;
    let wall = started.elapsed().as_secs_f64();
    let cpu = servers
        .iter()
        .zip(before)
        .map(|(s, b)| (datarepo_bench::cpu_secs(s.pid()) - b) / wall)
        .collect();
    for s in servers {
        s.stop();
    }
    Round {
        writes_per_sec: total as f64 / wall,
        cpu,
        store_cpu: object_store
            .zip(store_before)
            .map(|(pid, b)| (datarepo_bench::cpu_secs(pid) - b) / wall),
    }
}

/// Resident memory of one server of a local store of `partitions`
/// partitions: just opened, after 20 writes to every partition, and its
/// peak over 10 s of 64 connections writing to every partition.
async fn memory(bin: &Path, partitions: u32) -> (f64, f64, f64) {
    let dir = std::env::temp_dir().join(format!(
        "datarepo-partitions-memory-{partitions}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let location = dir.to_str().unwrap().to_owned();
    init(bin, &location, partitions);
    let server = ServeProcess::start_with(bin, &dir, TOKEN, &[]);
    server.ready().await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle = rss_mib(server.pid());
    let layout = store::Partitions::new(partitions).unwrap();
    // One repository per partition.
    let mut repos = vec![None; partitions as usize];
    let mut i = 0;
    while repos.iter().any(Option::is_none) {
        let did = format!("did:web:m{i}.bench");
        let slot = &mut repos[layout.of(&did) as usize];
        if slot.is_none() {
            *slot = Some(did);
        }
        i += 1;
    }
    let repos: Vec<String> = repos.into_iter().map(Option::unwrap).collect();
    let count = repos.len();
    let body: Arc<dyn Fn(usize, u64) -> String + Send + Sync> = Arc::new(move |w, n| {
        format!(
            r#"{{"repo":"{}","collection":"app.bsky.feed.post","record":{{"text":"post {n}"}}}}"#,
            repos[w % count]
        )
    });
    let client = reqwest::Client::new();
    for n in 0..20 {
        for w in 0..count {
            let response = client
                .post(format!(
                    "{}/xrpc/com.atproto.repo.createRecord",
                    server.base
                ))
                .bearer_auth(TOKEN)
                .header("content-type", "application/json")
                .body(body(w, n))
                .send()
                .await
                .unwrap();
            assert!(response.status().is_success());
        }
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let written = rss_mib(server.pid());
    create_records_for(&server.base, TOKEN, 10.0, 64, body, None).await;
    let peak = status_mib(server.pid(), "VmHWM:");
    server.stop();
    let _ = std::fs::remove_dir_all(&dir);
    (idle, written, peak)
}

#[tokio::main]
async fn main() {
    let secs: f64 = arg("--secs", 8.0);
    let writers: usize = arg("--writers", 64);
    let bin = datarepo_bin();
    let root = std::env::var("DATAREPO_TEST_S3").expect("DATAREPO_TEST_S3=s3://bucket/prefix");
    println!(
        "partitions-load: {writers} writers, {secs} s per round, {} cores, store {root}",
        cores()
    );
    let weed = std::process::Command::new("pgrep")
        .args(["-f", "weed mini"])
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8(o.stdout)
                .ok()?
                .lines()
                .next()?
                .parse::<u32>()
                .ok()
        });
    let store_cpu = |r: &Round| r.store_cpu.map_or("?".to_owned(), |c| format!("{c:.2}"));
    let plain = round(&bin, &root, None, writers, secs, weed).await;
    println!(
        "unpartitioned store, 1 process: {:.0} writes/s, CPU {:.2}, object store CPU {}",
        plain.writes_per_sec,
        plain.cpu[0],
        store_cpu(&plain)
    );
    for processes in [1, 2, 4] {
        let r = round(&bin, &root, Some(processes), writers, secs, weed).await;
        let cpu: Vec<String> = r.cpu.iter().map(|c| format!("{c:.2}")).collect();
        println!(
            "{PARTITIONS} partitions, {processes} process(es): {:.0} writes/s ({:.0}% of unpartitioned), CPU per process [{}], object store CPU {}",
            r.writes_per_sec,
            100.0 * r.writes_per_sec / plain.writes_per_sec,
            cpu.join(", "),
            store_cpu(&r)
        );
    }
    let (idle1, written1, peak1) = memory(&bin, 1).await;
    let (idle64, written64, peak64) = memory(&bin, 64).await;
    println!(
        "memory: 1 partition {idle1:.0} MiB idle, {written1:.0} MiB written, peak {peak1:.0} MiB under 64 writers; \
         64 partitions {idle64:.0} MiB idle, {written64:.0} MiB written, peak {peak64:.0} MiB; \
         per open partition {:.1} MiB idle, {:.1} MiB written, {:.1} MiB at the peak",
        (idle64 - idle1) / 63.0,
        (written64 - written1) / 63.0,
        (peak64 - peak1) / 63.0
    );
}
