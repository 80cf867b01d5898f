//! `--fields a,b.c` on `get`, `ls` and `query`: each record's value keeps
//! only those paths (the JSON shapes otherwise unchanged); a bad path is
//! refused naming it. `query --stats` gives the mean (`avg`).

use crate::common;

use common::datarepo;
use serde_json::{Value, json};

const DID: &str = "did:web:fields.example";
const POST: &str = "app.bsky.feed.post";

fn run(store: &str, args: &[&str]) -> Value {
    let mut all = vec!["--store", store, "--repo", DID, "--json"];
    all.extend_from_slice(args);
    let out = datarepo(&all, "");
    assert!(out.status.success(), "{args:?}: {out:?}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {out:?}"))
}

/// `record` with only its top-level `keys` (the model of a list of
/// one-segment paths).
fn only(record: &Value, keys: &[&str]) -> Value {
    Value::Object(
        record
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| keys.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )
}

#[test]
fn fields_keep_only_the_paths_asked() {
    let tmp = testkit::tempdir("cli-fields");
    let store = tmp.path().join("s");
    let store = store.to_str().unwrap();
    let mut records = Vec::new();
    for i in 0..5 {
        let record = json!({"$type": POST, "text": format!("post {i}"), "likes": i * 3,
            "createdAt": "2026-11-27T00:00:00Z",
            "embed": {"images": [{"alt": format!("a{i}"), "size": i}, {"size": 0}]}});
        common::put_record(store, DID, POST, &format!("p{i}"), &record);
        records.push(record);
    }
    let got = run(store, &["get", POST, "p1", "--fields", "text,likes"]);
    assert_eq!(got["value"], only(&records[1], &["text", "likes"]));
    assert!(got["cid"].is_string() && got["uri"].is_string());

    let page = run(store, &["ls", POST, "--fields", "likes"]);
    let values: Vec<&Value> = page["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["value"])
        .collect();
    let want: Vec<Value> = records.iter().map(|r| only(r, &["likes"])).collect();
    assert_eq!(values, want.iter().collect::<Vec<_>>());

    run(store, &["index", "add", POST, "likes", "--kind", "integer"]);
    let page = run(
        store,
        &[
            "query",
            POST,
            "--where",
            "likes >= 6",
            "--fields",
            "embed.images.alt",
        ],
    );
    let values: Vec<&Value> = page["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["value"])
        .collect();
    // p2..p4; the second image of each has no alt: its place is null.
    let want: Vec<Value> = (2..5)
        .map(|i| json!({"embed": {"images": [{"alt": format!("a{i}")}, null]}}))
        .collect();
    assert_eq!(values, want.iter().collect::<Vec<_>>());

    // The mean of 0, 3, 6, 9, 12 over the records with likes >= 3.
    let likes: Vec<i64> = (1..5).map(|i| i * 3).collect();
    let stats = run(
        store,
        &["query", POST, "--where", "likes >= 3", "--stats", "likes"],
    );
    assert_eq!(
        stats["avg"].as_f64().unwrap(),
        likes.iter().sum::<i64>() as f64 / likes.len() as f64
    );

    let out = datarepo(
        &[
            "--store", store, "--repo", DID, "ls", POST, "--fields", "a..b",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--fields: fields: \"a..b\""));
}
