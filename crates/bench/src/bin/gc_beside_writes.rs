//! `datarepo serve --gc-interval-secs 2 --gc-keep-last 20` as a process on
//! a local store of `--n` records written `--commit-every` to a commit (a
//! long history, whose older shard versions become garbage): the server's
//! first garbage collection with no writes, then, on an identical copy of
//! the store, beside `--writers` writers that never pause
//! (`createRecord`), and those writes' latency while it ran.
//!
//!   cargo build --release --bin datarepo
//!   cargo run --release -p datarepo-bench --bin gc-beside-writes -- \
//!     [--n 200000] [--commit-every 10] [--writers 16] [--timeout-secs 1800]
//!
//! `--writers 0` runs the collection with no writes only. The server's
//! peak resident memory is read from `/proc` after that collection.
//!
//! `DATAREPO_BIN` names another binary (an older build, to compare).

#![allow(clippy::disallowed_methods, clippy::unwrap_used)] // a benchmark measures wall time

use std::{
    io::Write as _,
    path::Path,
    process::{Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use datarepo_bench::ServeProcess;

const TOKEN: &str = "bench";
const DID: &str = "did:web:gc-beside.example";
const POSTS: &str = "app.bsky.feed.post";

/// Creates records one at a time until `stop`; each one's latency.
async fn writer(base: String, stop: Arc<AtomicBool>) -> Vec<Duration> {
    datarepo_bench::create_records_until(base, TOKEN, DID, POSTS, stop, |i| {
        serde_json::json!({"text": format!("beside gc {i}"), "createdAt": "2026-11-27T00:00:00Z"})
    })
    .await
}

/// A sample of the server's metrics (`name{labels}`), if present.
async fn metric(client: &reqwest::Client, base: &str, name: &str, labels: &str) -> Option<f64> {
    let text = client
        .get(format!("{base}/metrics"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    let prefix = if labels.is_empty() {
        format!("{name} ")
    } else {
        format!("{name}{{{labels}}} ")
    };
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.trim().parse().ok())
}

/// Waits for the server's first successful collection: its duration in
/// seconds, or `None` past `timeout` (the phase reached then is printed).
async fn first_collection(base: &str, timeout: Duration) -> Option<f64> {
    let client = reqwest::Client::new();
    let start = Instant::now();
    let mut last_report = Instant::now();
    loop {
        let ok = metric(&client, base, "datarepo_gc_runs_total", r#"outcome="ok""#).await;
        if ok.unwrap_or(0.0) >= 1.0 {
            return metric(&client, base, "datarepo_gc_last_duration_seconds", "").await;
        }
        if start.elapsed() > timeout {
            return None;
        }
        if last_report.elapsed() > Duration::from_secs(30) {
            last_report = Instant::now();
            let phase = metric(&client, base, "datarepo_gc_phase", "").await;
            let done = metric(&client, base, "datarepo_gc_phase_done", "").await;
            println!(
                "  … {:.0} s: gc phase {phase:?}, {done:?} blocks",
                start.elapsed().as_secs_f64()
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn copy(from: &Path, to: &Path) {
    assert!(
        Command::new("cp")
            .arg("-a")
            .arg(from)
            .arg(to)
            .status()
            .unwrap()
            .success()
    );
}

fn main() {
    let n: usize = datarepo_bench::arg("--n", 200_000);
    let commit_every: usize = datarepo_bench::arg("--commit-every", 10);
    let writers: usize = datarepo_bench::arg("--writers", 16);
    let timeout = Duration::from_secs(datarepo_bench::arg("--timeout-secs", 1800));
    let bin = datarepo_bench::datarepo_bin();
    assert!(
        bin.exists(),
        "build the release binary first: cargo build --release --bin datarepo"
    );
    let dir = std::env::temp_dir().join(format!("datarepo-bench-gc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let base_store = dir.join("base");
    let written = Instant::now();
    let mut put = Command::new(&bin)
        .arg("--store")
        .arg(&base_store)
        .args(["--repo", DID, "put", "--batch", "--commit-every"])
        .arg(commit_every.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    {
        let mut stdin = std::io::BufWriter::new(put.stdin.take().unwrap());
        for i in 0..n {
            writeln!(
                stdin,
                r#"{{"$type":"com.atproto.repo.applyWrites#create","collection":"{POSTS}","value":{{"text":"post {i}","createdAt":"2026-11-27T00:00:00Z"}}}}"#
            )
            .unwrap();
        }
    }
    assert!(put.wait().unwrap().success());
    println!(
        "{n} records in {} commits of {commit_every}: written in {:.1} s",
        n.div_ceil(commit_every),
        written.elapsed().as_secs_f64()
    );
    let (quiet, loaded) = (dir.join("quiet"), dir.join("loaded"));
    copy(&base_store, &quiet);
    copy(&base_store, &loaded);
    let serve_args = ["--gc-interval-secs", "2", "--gc-keep-last", "20"];
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();

    let server = ServeProcess::start_with(&bin, &quiet, TOKEN, &serve_args);
    rt.block_on(server.ready());
    let alone = rt.block_on(first_collection(&server.base, timeout));
    let peak = datarepo_bench::peak_mib_of(server.pid());
    server.stop();
    match alone {
        Some(s) => println!("first collection, no writes: {s:.1} s; server peak RSS {peak:.0} MiB"),
        None => println!(
            "first collection, no writes: not done in {} s",
            timeout.as_secs()
        ),
    }

    if writers == 0 {
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    let server = ServeProcess::start_with(&bin, &loaded, TOKEN, &serve_args);
    rt.block_on(async {
        server.ready().await;
        let stop = Arc::new(AtomicBool::new(false));
        let tasks: Vec<_> = (0..writers)
            .map(|_| tokio::spawn(writer(server.base.clone(), Arc::clone(&stop))))
            .collect();
        let beside = first_collection(&server.base, timeout).await;
        stop.store(true, Ordering::Relaxed);
        let mut latencies = Vec::new();
        for t in tasks {
            latencies.extend(t.await.unwrap());
        }
        match beside {
            Some(s) => println!("first collection beside {writers} writers: {s:.1} s"),
            None => println!(
                "first collection beside {writers} writers: not done in {} s",
                timeout.as_secs()
            ),
        }
        println!(
            "createRecord while it ran: {}",
            datarepo_bench::latency_summary(latencies)
        );
    });
    server.stop();
    let _ = std::fs::remove_dir_all(&dir);
}
