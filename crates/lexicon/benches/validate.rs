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

use std::{
    hint::black_box,
    io::{BufRead as _, BufReader, Write as _},
    process::{Command, Stdio},
    time::Instant,
};

use criterion::{Criterion, criterion_group};

/// The allocator of the `datarepo` binary, which validates the records it
/// parses: where a record's strings and maps sit depends on it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
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

/// Ours and the reference's nanoseconds per record, on the same records, in
/// interleaved rounds of about the same wall time each (this VM's speed
/// drifts by tens of percent within a minute; a ratio is only fair between
/// neighbouring rounds). Prints the medians and the per-round ratios'
/// median and range.
fn compare(lexicons: &Lexicons, records: &[Value]) {
    const ROUNDS: usize = 15;
    let js_passes = (20_000 / records.len()).max(1);
    let our_passes = 15 * js_passes;
    for r in records {
        lexicons
            .validate_record("app.bsky.feed.post", r)
            .expect("valid");
    }
    let mut peer = Command::new("node")
        .arg("bench-lexicon.mjs")
        .current_dir(testkit::oracles_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("node runs the benchmark peer");
    let mut to_peer = peer.stdin.take().expect("stdin");
    let mut from_peer = BufReader::new(peer.stdout.take().expect("stdout")).lines();
    writeln!(to_peer, "{}", records.len()).expect("peer reads");
    for r in records {
        writeln!(
            to_peer,
            "{}",
            json!({"collection": "app.bsky.feed.post", "record": r})
        )
        .expect("peer reads");
    }
    let (mut ours, mut theirs, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let start = Instant::now();
        for _ in 0..our_passes {
            for r in records {
                black_box(lexicons.validate_record("app.bsky.feed.post", black_box(r))).ok();
            }
        }
        let ns = start.elapsed().as_secs_f64() * 1e9 / (our_passes * records.len()) as f64;
        writeln!(to_peer, "{js_passes}").expect("peer reads");
        let js: f64 = from_peer
            .next()
            .expect("the peer answers each round")
            .expect("peer output")
            .trim()
            .parse()
            .expect("ns per record");
        ours.push(ns);
        theirs.push(js);
        ratios.push(js / ns);
    }
    drop(to_peer);
    assert!(
        peer.wait().expect("peer exits").success(),
        "bench-lexicon.mjs failed"
    );
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (low, high) = (
        ratios.iter().copied().fold(f64::INFINITY, f64::min),
        ratios.iter().copied().fold(0.0, f64::max),
    );
    println!(
        "compare/validate app.bsky.feed.post, {} posts, {ROUNDS} interleaved rounds: \
         datarepo {:.0} ns/record, @atproto/lexicon {:.0} ns/record (medians); \
         datarepo is {:.1}x faster (median of the rounds' ratios; {low:.1}x to {high:.1}x)",
        records.len(),
        median(&mut ours),
        median(&mut theirs),
        median(&mut ratios),
    );
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
