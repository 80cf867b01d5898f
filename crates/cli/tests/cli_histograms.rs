//! `query --histogram PATH --interval I [--from --to]` over a datetime
//! index: UTC calendar buckets (weeks from Monday, months), a value
//! written with a time zone counted in the bucket of its instant, empty
//! buckets between included, `--from`/`--to` bounding the range; an
//! interval that does not fit the index is refused naming the units.

use crate::common;

use common::datarepo;
use serde_json::{Value, json};

const DID: &str = "did:web:histograms.example";
const POST: &str = "app.bsky.feed.post";

fn run(store: &str, args: &[&str]) -> Value {
    let mut all = vec!["--store", store, "--repo", DID, "--json"];
    all.extend_from_slice(args);
    let out = datarepo(&all, "");
    assert!(out.status.success(), "{args:?}: {out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn weekly_and_monthly_buckets() {
    let tmp = testkit::tempdir("cli-histograms");
    let store = tmp.path().join("s");
    let store = store.to_str().unwrap();
    // 2024-01-01 was a Monday. The third is Sunday 7 January 23:30 UTC.
    let times = [
        "2024-01-02T10:00:00Z",
        "2024-01-07T23:59:59Z",
        "2024-01-08T00:30:00+01:00",
        "2024-01-22T00:00:00Z",
    ];
    for (i, t) in times.iter().enumerate() {
        let record = json!({"$type": POST, "text": "t", "createdAt": t});
        common::put_record(store, DID, POST, &format!("p{i}"), &record);
    }
    run(
        store,
        &["index", "add", POST, "createdAt", "--kind", "datetime"],
    );
    assert_eq!(
        run(
            store,
            &[
                "query",
                POST,
                "--histogram",
                "createdAt",
                "--interval",
                "1w"
            ]
        ),
        json!({"buckets": [
            {"start": "2024-01-01T00:00:00Z", "count": 3},
            {"start": "2024-01-08T00:00:00Z", "count": 0},
            {"start": "2024-01-15T00:00:00Z", "count": 0},
            {"start": "2024-01-22T00:00:00Z", "count": 1},
        ]})
    );
    assert_eq!(
        run(
            store,
            &[
                "query",
                POST,
                "--histogram",
                "createdAt",
                "--interval",
                "1mo",
                "--from",
                "2023-12-15T00:00:00Z",
                "--to",
                "2024-01-08T00:00:00Z",
            ]
        ),
        json!({"buckets": [
            {"start": "2023-12-01T00:00:00Z", "count": 0},
            {"start": "2024-01-01T00:00:00Z", "count": 3},
        ]})
    );
    let out = datarepo(
        &[
            "--store",
            store,
            "--repo",
            DID,
            "query",
            POST,
            "--histogram",
            "createdAt",
            "--interval",
            "1q",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("s, m, h, d, w"),
        "{out:?}"
    );
}
