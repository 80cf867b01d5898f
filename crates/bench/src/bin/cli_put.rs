//! One-record `datarepo put` as a user runs it: a process per write on a
//! local store, timed from spawn to exit (open, commit, durable, close).
//! Prints the latency percentiles and the files the store holds after.
//!
//!   cargo build --release --bin datarepo
//!   cargo run --release -p datarepo-bench --bin cli-put -- [--n 300] [--every K]
//!
//! `--every K` also prints the mean of each K puts as they run, with the
//! manifests and compaction records the store holds then (a long loop of
//! puts shows whether they pile up). `DATAREPO_BIN` names another binary.

#![allow(clippy::disallowed_methods)]

use std::{
    io::Write,
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

fn files_under(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .flatten()
            .map(|e| {
                let path = e.path();
                if path.is_dir() { files_under(&path) } else { 1 }
            })
            .sum()
    })
}

fn run(bin: &Path, args: &[&str], stdin: &str) -> Duration {
    let start = Instant::now();
    let mut child = Command::new(bin)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn datarepo");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    let status = child.wait().expect("wait");
    assert!(status.success(), "{args:?}: {status}");
    start.elapsed()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args
        .iter()
        .position(|a| a == "--n")
        .and_then(|i| args.get(i + 1))
        .map_or(300, |v| v.parse().expect("--n N"));
    // With `--every K`: the mean of each K puts as they run, and the
    // manifests and compaction records the store then holds.
    let every: usize = args
        .iter()
        .position(|a| a == "--every")
        .and_then(|i| args.get(i + 1))
        .map_or(0, |v| v.parse().expect("--every K"));
    let bin = datarepo_bench::datarepo_bin();
    assert!(
        bin.is_file(),
        "{} is missing: run `cargo build --release --bin datarepo` (or set DATAREPO_BIN)",
        bin.display()
    );
    let tmp = testkit::tempdir("bench-cli-put");
    let store = tmp.path().join("data");
    let store = store.to_str().expect("utf-8 path");
    let did = "did:web:bench.example";
    run(&bin, &["--store", store, "--repo", did, "init"], "");
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let rkey = format!("r{i}");
        let record = format!(r#"{{"text":"post {i}","createdAt":"2026-11-25T00:00:00Z"}}"#);
        times.push(run(
            &bin,
            &[
                "--store",
                store,
                "--repo",
                did,
                "put",
                "app.bsky.feed.post",
                &rkey,
            ],
            &record,
        ));
        if every > 0 && (i + 1) % every == 0 {
            let recent = &times[times.len() - every..];
            let mean = recent.iter().sum::<Duration>() / u32::try_from(every).unwrap_or(1);
            let db = Path::new(store).join("db");
            println!(
                "  puts {:>5}: mean of the last {every} {:.1} ms; manifests {}, compaction records {}",
                i + 1,
                mean.as_secs_f64() * 1e3,
                files_under(&db.join("manifest")),
                files_under(&db.join("compactions")),
            );
        }
    }
    let mut sorted = times.clone();
    sorted.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("cli-put: {n} one-record `datarepo put` processes on a local store");
    println!(
        "  p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms (target p99 <= 100 ms)",
        ms(percentile(&sorted, 0.5)),
        ms(percentile(&sorted, 0.9)),
        ms(percentile(&sorted, 0.99)),
        ms(sorted[sorted.len() - 1]),
    );
    println!(
        "  files in the store after: {} (collected once older than a minimum age: 30 s for manifests and compaction records, 5 min or more for the rest)",
        files_under(Path::new(store))
    );
}
