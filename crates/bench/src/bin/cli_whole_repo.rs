//! The commands that read (or import) a whole repository, run as a user
//! runs them: a `datarepo` process each, on a store of a million records
//! (`import` into a new store, of the file `export` wrote), timed from
//! spawn to exit, with the process's peak resident memory (`ru_maxrss`).
//!
//!   cargo build --release --bin datarepo
//!   cargo run --release -p datarepo-bench --bin index-vs-sqlite -- --import-only 1 --keep 1
//!   cargo run --release -p datarepo-bench --bin cli-whole-repo -- --store DIR [--runs 3]
//!
//! `DIR` is the store `index-vs-sqlite` keeps (it prints `kept: DIR`):
//! 1,000,000 records in one collection with five field indexes.
//! `DATAREPO_BIN` names another binary. The last row imports an increment
//! (five records written to a copy of the store, `export --since`) onto
//! copies of the store as it was.

#![allow(clippy::disallowed_methods)]

use std::{
    path::Path,
    process::{Command, Stdio},
    time::Duration,
};

/// The repository `index-vs-sqlite` writes.
const DID: &str = "did:plc:indexbench";

/// Runs `bin args` to its end: wall time and peak resident memory in MiB.
fn run(bin: &Path, args: &[&str]) -> (Duration, f64) {
    let mut cmd = Command::new(bin);
    cmd.args(args).stdout(Stdio::null()).stderr(Stdio::null());
    let (status, wall, peak) = datarepo_bench::run_measured(&mut cmd);
    assert!(status.success(), "datarepo {args:?} failed: {status}");
    (wall, peak)
}

fn main() {
    let store: String = datarepo_bench::arg("--store", String::new());
    assert!(
        !store.is_empty(),
        "--store DIR: a store index-vs-sqlite kept"
    );
    let runs: usize = datarepo_bench::arg("--runs", 3);
    let bin = datarepo_bench::datarepo_bin();
    let scratch = testkit::tempdir("cli-whole-repo");
    let car = scratch.path().join("repo.car");
    let car_arg = car.to_string_lossy().into_owned();
    let history = scratch.path().join("history.car");
    let history_arg = history.to_string_lossy().into_owned();
    let commands: Vec<(&str, Vec<&str>)> = vec![
        ("export FILE", vec!["export", "--force", &car_arg]),
        (
            "export --history FILE",
            vec!["export", "--history", "--force", &history_arg],
        ),
        ("verify FILE", vec!["verify", &car_arg]),
        ("check", vec!["check"]),
        ("gc --dry-run", vec!["gc", "--dry-run"]),
        // Into a new store each run (below).
        ("import FILE", vec!["import", &car_arg]),
    ];
    let fresh = scratch.path().join("imported");
    let fresh_arg = fresh.to_string_lossy().into_owned();
    println!(
        "datarepo ({}), store {store}; {runs} runs each\n",
        bin.display()
    );
    println!("| command | wall time | peak RSS |");
    println!("| --- | --- | --- |");
    for (name, args) in commands {
        let importing = args[0] == "import";
        let on = if importing { &fresh_arg } else { &store };
        let all: Vec<&str> = ["--store", on.as_str(), "--repo", DID]
            .into_iter()
            .chain(args.iter().copied())
            .collect();
        let mut times = Vec::new();
        let mut peaks = Vec::new();
        for _ in 0..runs {
            if importing && fresh.exists() {
                std::fs::remove_dir_all(&fresh).expect("removing the last import's store");
            }
            let (t, peak) = run(&bin, &all);
            times.push(t.as_secs_f64());
            peaks.push(peak);
        }
        print_row(&format!("`datarepo {name}`"), &times, &peaks);
    }
    increment_row(&bin, &store, scratch.path(), runs);
}

/// Prints a row of the table: the ranges of wall times and peaks.
fn print_row(name: &str, times: &[f64], peaks: &[f64]) {
    let range = |v: &[f64]| {
        let min = v.iter().copied().fold(f64::INFINITY, f64::min);
        let max = v.iter().copied().fold(0.0, f64::max);
        (min, max)
    };
    let ((t0, t1), (p0, p1)) = (range(times), range(peaks));
    println!("| {name} | {t0:.2}–{t1:.2} s | {p0:.0}–{p1:.0} MiB |");
}

/// A copy of directory `from` at `to` (untimed set-up).
fn copy_dir(from: &Path, to: &Path) {
    if to.exists() {
        std::fs::remove_dir_all(to).expect("removing an old copy");
    }
    let status = Command::new("cp")
        .arg("-r")
        .arg(from)
        .arg(to)
        .status()
        .expect("cp");
    assert!(status.success(), "copying {} failed", from.display());
}

/// `import` of an increment (`export --since`: five new records) onto a
/// copy of the store as it was before them: an incremental restore, whose
/// file is small and whose repository is not.
fn increment_row(bin: &Path, store: &str, scratch: &Path, runs: usize) {
    let source = scratch.join("increment-source");
    copy_dir(Path::new(store), &source);
    let on = |dir: &Path| -> Vec<String> {
        ["--store", &dir.to_string_lossy(), "--repo", DID]
            .into_iter()
            .map(str::to_owned)
            .collect()
    };
    let log = Command::new(bin)
        .args(on(&source))
        .args(["log", "--json", "--limit", "1"])
        .output()
        .expect("datarepo log");
    let log: serde_json::Value = serde_json::from_slice(&log.stdout).expect("log --json");
    let base = log["commits"][0]["rev"]
        .as_str()
        .expect("the head's rev")
        .to_owned();
    for n in 0..5 {
        let mut put = Command::new(bin)
            .args(on(&source))
            .args(["put", "app.bsky.feed.post"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("datarepo put");
        let record = serde_json::json!({
            "$type": "app.bsky.feed.post",
            "text": format!("increment {n}"),
            "createdAt": "2026-11-29T12:00:00Z",
        });
        std::io::Write::write_all(
            put.stdin.as_mut().expect("put's input"),
            record.to_string().as_bytes(),
        )
        .expect("writing a record");
        drop(put.stdin.take());
        assert!(put.wait().expect("put").success(), "datarepo put failed");
    }
    let increment = scratch.join("increment.car");
    let status = Command::new(bin)
        .args(on(&source))
        .args(["export", "--force", "--since", &base])
        .arg(&increment)
        .stdout(Stdio::null())
        .status()
        .expect("datarepo export --since");
    assert!(status.success(), "export --since failed");
    std::fs::remove_dir_all(&source).expect("removing the source copy");
    let target = scratch.join("increment-target");
    let mut times = Vec::new();
    let mut peaks = Vec::new();
    for _ in 0..runs {
        copy_dir(Path::new(store), &target);
        let mut args = on(&target);
        args.extend([
            "import".to_owned(),
            increment.to_string_lossy().into_owned(),
        ]);
        let (t, peak) = run(bin, &args.iter().map(String::as_str).collect::<Vec<_>>());
        times.push(t.as_secs_f64());
        peaks.push(peak);
    }
    std::fs::remove_dir_all(&target).expect("removing the target copy");
    print_row(
        "`datarepo import FILE` of an increment (`export --since`, 5 records), onto a copy of the store before it",
        &times,
        &peaks,
    );
}
