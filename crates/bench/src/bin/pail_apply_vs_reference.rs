//! `datarepo pail apply` against `@web3-storage/pail@0.5.0`, both as the
//! processes a user runs: each reads the same JSON Lines from a file on
//! stdin and prints a root per operation (`tests/oracles/pail-apply.mjs` is
//! the reference behind the same contract, keeping only the live tree, as
//! `pail apply` does). Measured in this run, same input:
//!
//! - N single puts of random 20–40 character keys (wall time of each whole
//!   process; the peak resident memory of `datarepo`'s);
//! - one batch of M puts (ours: best of `--runs` processes; the reference
//!   once, it is slow).
//!
//! Every root printed by the two must be equal, line for line.
//!
//! Run: `cargo build --release --bin datarepo && cargo run --release -p
//! datarepo-bench --bin pail-apply-vs-reference -- [--puts N] [--batch M]
//! [--runs K] [--no-reference]` (`DATAREPO_BIN` names another binary; the
//! reference needs `npm ci --prefix tests/oracles`; at the defaults it takes
//! about four minutes).
#![allow(clippy::disallowed_methods)] // a benchmark measures wall time

use std::{
    fs::File,
    io::Write,
    path::Path,
    process::{Command, Stdio},
    time::Duration,
};

use datarepo_bench::{random_keys, raw_value};
use serde_json::json;

/// What one process did: its wall time, peak resident memory and output.
struct Run {
    wall: Duration,
    peak_mib: f64,
    stdout: String,
}

/// Runs `cmd` with `input` on stdin, with its peak RSS.
fn run(mut cmd: Command, input: &Path) -> Run {
    let out_path = input.with_extension("out");
    cmd.stdin(File::open(input).expect("open input"))
        .stdout(File::create(&out_path).expect("create output"))
        .stderr(Stdio::inherit());
    let (status, wall, peak_mib) = datarepo_bench::run_measured(&mut cmd);
    assert!(status.success(), "{cmd:?} failed: {status}");
    Run {
        wall,
        peak_mib,
        stdout: std::fs::read_to_string(&out_path).expect("read output"),
    }
}

fn ours() -> Command {
    let bin = datarepo_bench::datarepo_bin();
    assert!(
        bin.is_file(),
        "{} is missing: run `cargo build --release --bin datarepo` (or set DATAREPO_BIN)",
        bin.display()
    );
    let mut cmd = Command::new(bin);
    cmd.args(["pail", "apply"]);
    cmd
}

fn reference() -> Command {
    let dir = testkit::oracles_dir();
    assert!(
        dir.join("node_modules").is_dir(),
        "run `npm ci --prefix tests/oracles` first"
    );
    let mut cmd = Command::new("node");
    cmd.arg(dir.join("pail-apply.mjs")).current_dir(dir);
    cmd
}

fn main() {
    let puts = datarepo_bench::arg("--puts", 10_000);
    let batch = datarepo_bench::arg("--batch", 30_000);
    let runs = datarepo_bench::arg("--runs", 5usize).max(1);
    let with_reference = !std::env::args().any(|a| a == "--no-reference");
    let n = puts.max(batch);
    let keys = random_keys(n, 0xda7a);
    let values: Vec<String> = (0..n as u64).map(|i| raw_value(i).to_string()).collect();

    let dir = testkit::tempdir("pail-apply-bench");
    let singles = dir.path().join("puts.jsonl");
    let mut f = std::io::BufWriter::new(File::create(&singles).expect("create"));
    for i in 0..puts {
        writeln!(
            f,
            "{}",
            json!({"op": "put", "key": keys[i], "value": values[i]})
        )
        .expect("write");
    }
    f.flush().expect("flush");
    drop(f);
    let batched = dir.path().join("batch.jsonl");
    let pairs: Vec<_> = (0..batch).map(|i| json!([keys[i], values[i]])).collect();
    std::fs::write(
        &batched,
        json!({"op": "batch", "puts": pairs}).to_string() + "\n",
    )
    .expect("write");

    let our_singles = run(ours(), &singles);
    let our_batches: Vec<Run> = (0..runs).map(|_| run(ours(), &batched)).collect();
    let best = our_batches
        .iter()
        .min_by_key(|r| r.wall)
        .expect("at least one run");
    let lines = |r: &Run| r.stdout.lines().count();
    assert_eq!(lines(&our_singles), puts, "a root per put");
    assert!(our_batches.iter().all(|r| r.stdout == best.stdout));

    println!(
        "{puts} single puts, one batch of {batch} puts; random 20-40 character keys, default shards (512 KiB)"
    );
    println!(
        "datarepo pail apply: {puts} puts {:.2} s, peak {:.1} MiB; batch best of {runs} {:.3} s (all: {}), peak {:.1} MiB",
        our_singles.wall.as_secs_f64(),
        our_singles.peak_mib,
        best.wall.as_secs_f64(),
        our_batches
            .iter()
            .map(|r| format!("{:.3}", r.wall.as_secs_f64()))
            .collect::<Vec<_>>()
            .join(" "),
        best.peak_mib,
    );
    if !with_reference {
        return;
    }
    let their_singles = run(reference(), &singles);
    assert_eq!(
        their_singles.stdout, our_singles.stdout,
        "the roots after each single put differ from the reference's"
    );
    let their_batch = run(reference(), &batched);
    assert_eq!(
        their_batch.stdout, best.stdout,
        "the batch's root differs from the reference's"
    );
    let single_ratio = their_singles.wall.as_secs_f64() / our_singles.wall.as_secs_f64();
    let batch_ratio = their_batch.wall.as_secs_f64() / best.wall.as_secs_f64();
    println!(
        "reference (node):    {puts} puts {:.2} s, peak {:.1} MiB; batch {:.2} s, peak {:.1} MiB",
        their_singles.wall.as_secs_f64(),
        their_singles.peak_mib,
        their_batch.wall.as_secs_f64(),
        their_batch.peak_mib,
    );
    println!("roots identical after every operation");
    println!(
        "single puts: {single_ratio:.1}x the reference (target >= 40x); datarepo peak {:.1} MiB (target <= 100 MiB)",
        our_singles.peak_mib
    );
    println!("batch: {batch_ratio:.0}x the reference (target >= 1000x)");
}
