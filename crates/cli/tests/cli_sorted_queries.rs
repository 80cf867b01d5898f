//! `query --sort PATH [--desc]`: records by their value at an indexed
//! path (several values: the smallest ascending, the largest descending),
//! ties by record key, records without a value last, in pages; a page's
//! cursor is refused, saying why, once a write has changed the head.

use crate::common;

use common::datarepo;
use serde_json::{Value, json};

const DID: &str = "did:web:sorted.example";
const POST: &str = "app.bsky.feed.post";

fn run(store: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec!["--store", store, "--repo", DID, "--json"];
    all.extend_from_slice(args);
    datarepo(&all, "")
}

fn put(store: &str, rkey: &str, record: &Value) {
    common::put_record(store, DID, POST, rkey, record);
}

#[test]
fn records_come_in_value_order_in_pages() {
    let tmp = testkit::tempdir("cli-sorted");
    let store = tmp.path().join("s");
    let store = store.to_str().unwrap();
    let likes: [(&str, Value); 7] = [
        ("a", json!(5)),
        ("b", json!([1, 9])),
        ("c", json!(null)),
        ("d", json!(5)),
        ("e", json!(-2)),
        ("f", json!([])),
        ("g", json!(7)),
    ];
    for (rkey, n) in &likes {
        put(
            store,
            rkey,
            &json!({"$type": POST, "text": rkey, "likes": n}),
        );
    }
    assert!(
        run(store, &["index", "add", POST, "likes", "--kind", "integer"])
            .status
            .success()
    );
    // The model: each record's largest integer, descending, ties by key,
    // the records without one last.
    let mut want: Vec<(Option<i64>, &str)> = likes
        .iter()
        .map(|(rkey, n)| {
            let values: Vec<i64> = match n {
                Value::Array(items) => items.iter().filter_map(Value::as_i64).collect(),
                other => other.as_i64().into_iter().collect(),
            };
            (values.into_iter().max(), *rkey)
        })
        .collect();
    want.sort_by(|a, b| match (a.0, b.0) {
        (Some(x), Some(y)) => y.cmp(&x).then(a.1.cmp(b.1)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.1.cmp(b.1),
    });
    let want: Vec<&str> = want.into_iter().map(|(_, k)| k).collect();

    let mut got: Vec<String> = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = vec!["query", POST, "--sort", "likes", "--desc", "--limit", "3"];
        if let Some(c) = &cursor {
            args.extend(["--cursor", c.as_str()]);
        }
        let out = run(store, &args);
        assert!(out.status.success(), "{out:?}");
        let page: Value = serde_json::from_slice(&out.stdout).unwrap();
        for r in page["records"].as_array().unwrap() {
            got.push(
                r["uri"]
                    .as_str()
                    .unwrap()
                    .rsplit('/')
                    .next()
                    .unwrap()
                    .to_owned(),
            );
        }
        match page["cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(got, want);

    // A write between pages: the old cursor is refused, not misread.
    let out = run(store, &["query", POST, "--sort", "likes", "--limit", "3"]);
    let page: Value = serde_json::from_slice(&out.stdout).unwrap();
    let stale = page["cursor"].as_str().unwrap().to_owned();
    put(store, "h", &json!({"$type": POST, "text": "h", "likes": 0}));
    let out = run(
        store,
        &[
            "query", POST, "--sort", "likes", "--limit", "3", "--cursor", &stale,
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("has changed since this sorted page"),
        "{out:?}"
    );
}
