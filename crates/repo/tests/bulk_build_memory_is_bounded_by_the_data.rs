//! Building indexes in bulk (`index add`, `index rebuild`, an import's
//! rebuild, `check`) over a record with thousands of values at an integer-
//! and a datetime-indexed path costs memory by the values, not by values ×
//! bit-sliced rows: each value is a slot of 66 rows, and a builder that
//! kept a dense buffer per row used ~0.7 MB per value (4,000 values → 2.8
//! GB).
//!
//! Measured as the process's peak resident memory during each operation
//! (the kernel's high-water mark, reset before it), against the same
//! operation on a repository whose record has one value at each path. The
//! bound is the target, 100 MB for 50,000 values, scaled down: 2
//! KB per value.

mod common;

use std::sync::Arc;

use repo::{IndexKind, Repos, Repository, Write};
use serde_json::{Value, json};
use store::MemoryKv;

const DID: &str = "did:web:many-values";
const COLLECTION: &str = "app.test.series";
const VALUES: usize = 10_000;
const BYTES_PER_VALUE: u64 = 2_048;

/// A record with `n` integers and `n` datetimes, all distinct.
fn record(n: usize) -> Value {
    let n = n as i64;
    json!({
        "points": (0..n).map(|i| i * 7_919 - 1_000_000).collect::<Vec<_>>(),
        "times": (0..n)
            .map(|i| format!("20{:02}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z",
                10 + i % 80, 1 + i % 12, 1 + i % 28, i % 24, i % 60, (i / 60) % 60, i))
            .collect::<Vec<_>>(),
    })
}

fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("reads /proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("/proc/self/status has no {field}"))
}

/// The peak resident bytes `f` adds to the process.
async fn peak_growth<T>(f: impl std::future::Future<Output = T>) -> (T, u64) {
    // Writing 5 resets the high-water mark (proc(5), clear_refs).
    std::fs::write("/proc/self/clear_refs", "5").expect("resets the peak RSS");
    let before = status_kib("VmRSS:");
    let out = f.await;
    let peak = status_kib("VmHWM:");
    (out, peak.saturating_sub(before) * 1024)
}

/// Peak growth of each bulk operation on a repository whose one record
/// has `n` values at each indexed path.
async fn growths(n: usize) -> Vec<(&'static str, u64)> {
    let repos = common::repos();
    let repo = repos.create(DID).await.unwrap();
    repo.apply_writes(
        vec![Write::Create {
            collection: COLLECTION.into(),
            rkey: Some("one".into()),
            value: record(n),
        }],
        None,
    )
    .await
    .unwrap();
    let mut out = Vec::new();
    let add = |repo: Arc<Repository<MemoryKv>>| async move {
        repo.add_index(COLLECTION, "points", IndexKind::Integer, |_| {})
            .await
            .unwrap();
        repo.add_index(COLLECTION, "times", IndexKind::Datetime, |_| {})
            .await
            .unwrap();
    };
    out.push(("index add", peak_growth(add(repo.clone())).await.1));
    let (rebuilt, grew) = peak_growth(repo.rebuild_indexes(|_| {})).await;
    assert_eq!(rebuilt.unwrap(), 1);
    out.push(("index rebuild", grew));
    let (report, grew) = peak_growth(repos.check(DID, |_| {})).await;
    assert_eq!(report.unwrap().problems, Vec::<String>::new());
    out.push(("check", grew));

    // An import into a repository that declares the indexes rebuilds them
    // from the records in the file.
    let (car, _) = repo.export_car(Vec::new(), None, |_| {}).await.unwrap();
    let target: Repos<MemoryKv> = common::repos();
    let declared = target.create(DID).await.unwrap();
    add(declared).await;
    let (report, grew) = peak_growth(target.import_car(&car[..], Some(DID))).await;
    assert_eq!(report.unwrap().records, 1);
    out.push(("import", grew));

    // The indexes answer as the record says.
    let repo = target.open(DID).await.unwrap();
    let last = (n as i64 - 1) * 7_919 - 1_000_000;
    for (q, want) in [
        (format!("points = {last}"), 1),
        (format!("points = {}", last + 1), 0),
        ("points < -1000000".to_owned(), 0),
        ("times >= \"2010-01-01T00:00:00Z\"".to_owned(), 1),
    ] {
        assert_eq!(repo.count(COLLECTION, Some(&q)).await.unwrap(), want, "{q}");
    }
    out
}

#[test]
fn a_record_with_many_values_builds_in_memory_bounded_by_its_values() {
    common::rt().block_on(async {
        // The small case first: what a process holds anyway is then held.
        let one = growths(1).await;
        let many = growths(VALUES).await;
        let bound = VALUES as u64 * BYTES_PER_VALUE;
        for ((what, small), (_, large)) in one.iter().zip(&many) {
            let extra = large.saturating_sub(*small);
            eprintln!(
                "{what}: {} KiB at one value, {} KiB at {VALUES} values",
                small / 1024,
                large / 1024
            );
            assert!(
                extra <= bound,
                "{what} over a record with {VALUES} values took {} MiB more at its peak than \
                 over one value (bound {} MiB)",
                extra >> 20,
                bound >> 20
            );
        }
    });
}
