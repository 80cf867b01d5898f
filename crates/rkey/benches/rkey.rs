//! Record key validation, TID parsing and TID generation; and a comparison
//! with `@atproto/syntax`'s `isValidRecordKey` on the same inputs, measured
//! in the same run (`tests/oracles/bench-syntax.mjs`).
//!
//! Run: `cargo bench -p rkey --bench rkey` (needs `npm ci --prefix tests/oracles`
//! for the comparison; without it the comparison is skipped with a note).

#![allow(missing_docs)] // criterion_group! generates an undocumented function

use std::{hint::black_box, process::Command, time::Instant};

use criterion::{Criterion, criterion_group};
use rkey::{Tid, TidGenerator, validate_record_key};

/// Typical 13-character keys: TIDs and other `any` keys.
fn inputs() -> Vec<String> {
    let mut keys: Vec<String> = (0..1024u64)
        .map(|i| {
            Tid::from_parts(1_700_000_000_000_000 + i * 7919, i % 1024)
                .unwrap()
                .to_string()
        })
        .collect();
    keys.extend((0..1000).map(|i| format!("key-{i:05}.ab:~")));
    keys
}

fn bench(c: &mut Criterion) {
    // 1024 inputs so that the index wraps with a mask, not a division.
    let keys = &inputs()[976..2000];
    let tid_strings = &inputs()[..1024];
    c.bench_function("validate_record_key/13 chars", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) & 1023;
            validate_record_key(black_box(&keys[i]))
        });
    });
    c.bench_function("Tid::parse", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) & 1023;
            Tid::parse(black_box(&tid_strings[i]))
        });
    });
    let tids = TidGenerator::builder().clock_id(1).build().unwrap();
    c.bench_function("TidGenerator::next_tid (system clock)", |b| {
        b.iter(|| tids.next_tid())
    });
}

/// Times our validator over `inputs()` and runs the node script on the same
/// inputs; prints both and the ratio.
#[allow(clippy::disallowed_methods)]
fn compare_with_atproto() {
    let keys = inputs();
    let rounds = 2000;
    let mut valid = 0usize;
    let start = Instant::now();
    for _ in 0..rounds {
        for k in &keys {
            valid += usize::from(validate_record_key(black_box(k)).is_ok());
        }
    }
    let ours = start.elapsed().as_secs_f64() * 1e9 / (rounds * keys.len()) as f64;
    assert_eq!(valid, rounds * keys.len());
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/oracles");
    let output = Command::new("node")
        .arg("bench-syntax.mjs")
        .arg(rounds.to_string())
        .current_dir(dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            let mut stdin = child.stdin.take().expect("stdin");
            stdin.write_all(keys.join("\n").as_bytes())?;
            drop(stdin);
            child.wait_with_output()
        });
    match output {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            let js: f64 = text.trim().parse().unwrap_or(f64::NAN);
            println!(
                "compare/isValidRecordKey: datarepo {ours:.2} ns/key, @atproto/syntax {js:.2} ns/key, \
                 datarepo is {:.1}x faster",
                js / ours
            );
        }
        _ => println!("compare/isValidRecordKey: skipped (run `npm ci --prefix tests/oracles`)"),
    }
}

criterion_group!(benches, bench);

fn main() {
    benches();
    compare_with_atproto();
    Criterion::default().configure_from_args().final_summary();
}
