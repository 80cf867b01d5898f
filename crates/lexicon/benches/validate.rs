//! Validating Bluesky-style posts against the real `app.bsky.feed.post`
//! Lexicon and everything it refers to (the schemas `@atproto/api` is
//! built from), and the same records through `@atproto/lexicon`'s
//! `assertValidRecord`, measured in the same run
//! (`tests/oracles/bench-lexicon.mjs`).
//!
//! Run: `cargo bench -p lexicon --bench validate` (needs `npm ci --prefix
//! tests/oracles`).

#![allow(missing_docs)] // criterion_group! generates an undocumented function
#![allow(clippy::disallowed_methods)] // a benchmark reads the clock

#[allow(dead_code, unreachable_pub)]
#[path = "../tests/common/posts.rs"]
mod posts;

use std::{hint::black_box, io::Write as _, process::Command, time::Instant};

use criterion::{Criterion, criterion_group};
use lexicon::{Document, Lexicons};
use serde_json::{Value, json};
use testkit::Rng;

fn lexicons() -> Lexicons {
    let mut out = Lexicons::new();
    for line in testkit::run_node("atproto-lexicons.mjs", "") {
        let doc: Value = serde_json::from_str(&line).expect("JSON");
        out.insert(Document::parse(doc).expect("a real Lexicon parses"));
    }
    out
}

fn records(n: usize) -> Vec<Value> {
    let mut rng = Rng(0x9057);
    (0..n).map(|_| posts::post(&mut rng)).collect()
}

fn bench(c: &mut Criterion) {
    let lexicons = lexicons();
    let records = records(1000);
    c.bench_function("validate_record/app.bsky.feed.post", |b| {
        let mut i = 0;
        b.iter(|| {
            let r = &records[i % records.len()];
            i += 1;
            black_box(lexicons.validate_record("app.bsky.feed.post", r)).expect("valid");
        });
    });
    // 1,000 posts (~2 MB of parsed JSON: more than a core's L2 cache) and
    // 100 (as a server meets a record: just parsed, in cache).
    compare(&lexicons, &records);
    compare(&lexicons, &records[..100]);
}

/// Ours and the reference's nanoseconds per record, on the same records.
fn compare(lexicons: &Lexicons, records: &[Value]) {
    let rounds = 50_000 / records.len();
    for r in records {
        lexicons
            .validate_record("app.bsky.feed.post", r)
            .expect("valid");
    }
    let start = Instant::now();
    for _ in 0..rounds {
        for r in records {
            black_box(lexicons.validate_record("app.bsky.feed.post", black_box(r))).ok();
        }
    }
    let ours = start.elapsed().as_secs_f64() * 1e9 / (rounds * records.len()) as f64;
    let input: String = records
        .iter()
        .map(|r| {
            format!(
                "{}\n",
                json!({"collection": "app.bsky.feed.post", "record": r})
            )
        })
        .collect();
    let output = Command::new("node")
        .arg("bench-lexicon.mjs")
        .arg(rounds.to_string())
        .current_dir(testkit::oracles_dir())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            let mut stdin = child.stdin.take().expect("stdin");
            stdin.write_all(input.as_bytes())?;
            drop(stdin);
            child.wait_with_output()
        })
        .expect("node runs the benchmark peer");
    assert!(output.status.success(), "bench-lexicon.mjs failed");
    let js: f64 = String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .expect("ns per record");
    println!(
        "compare/validate app.bsky.feed.post, {} posts: datarepo {ours:.0} ns/record, \
         @atproto/lexicon {js:.0} ns/record, datarepo is {:.1}x faster",
        records.len(),
        js / ours
    );
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
