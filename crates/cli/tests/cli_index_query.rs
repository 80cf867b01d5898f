//! `datarepo index add|list|drop` and `datarepo query`: the JSON shapes
//! scripts depend on, exit codes and messages on bad queries, an index
//! kept through an export and an import into a store that declares it, and
//! `check` finding a damaged bitmap.

use crate::common;

use common::datarepo;
use serde_json::{Value, json};
use store::{Kv, SlateKv, WriteOp};

const DID: &str = "did:web:search.example";
const POST: &str = "app.bsky.feed.post";

fn run(store: &str, args: &[&str]) -> Value {
    let mut all = vec!["--store", store, "--repo", DID, "--json"];
    all.extend_from_slice(args);
    let out = datarepo(&all, "");
    assert!(out.status.success(), "{args:?}: {out:?}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {out:?}"))
}

fn put(store: &str, rkey: &str, record: &Value) {
    let out = datarepo(
        &["--store", store, "--repo", DID, "put", POST, rkey],
        &record.to_string(),
    );
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn indexes_and_queries_from_the_command_line() {
    let tmp = testkit::tempdir("cli-index");
    let store = tmp.path().join("a");
    let store = store.to_str().unwrap();
    assert!(
        datarepo(&["--store", store, "--repo", DID, "init"], "")
            .status
            .success()
    );
    // A second store declares an index before the first's history begins
    // (an import moves a repository forward only).
    let other = tmp.path().join("b");
    let other = other.to_str().unwrap();
    assert!(
        datarepo(&["--store", other, "--repo", DID, "init"], "")
            .status
            .success()
    );
    run(other, &["index", "add", POST, "langs", "--kind", "keyword"]);
    // p1..p4: langs en/fr, likes 1..4.
    for (rkey, langs, likes) in [
        ("p1", json!(["en"]), 1),
        ("p2", json!(["fr", "en"]), 2),
        ("p3", json!("fr"), 3),
        ("p4", json!([]), 4),
    ] {
        put(
            store,
            rkey,
            &json!({"langs": langs, "likes": likes, "createdAt": format!("2024-01-0{likes}T00:00:00Z")}),
        );
    }
    assert_eq!(
        run(store, &["index", "add", POST, "langs", "--kind", "keyword"]),
        json!({"collection": POST, "path": "langs", "kind": "keyword", "records": 4})
    );
    assert_eq!(
        run(store, &["index", "add", POST, "likes", "--kind", "integer"]),
        json!({"collection": POST, "path": "likes", "kind": "integer", "records": 4})
    );
    run(
        store,
        &["index", "add", POST, "createdAt", "--kind", "datetime"],
    );
    assert_eq!(
        run(store, &["index", "list"]),
        json!({"indexes": [
            {"collection": POST, "path": "createdAt", "kind": "datetime"},
            {"collection": POST, "path": "langs", "kind": "keyword"},
            {"collection": POST, "path": "likes", "kind": "integer"},
        ]})
    );
    // A later write is indexed too.
    put(store, "p5", &json!({"langs": "en", "likes": -10}));
    // Rebuilt from the records (what an interrupted import needs): the
    // queries below answer the same.
    assert_eq!(
        run(store, &["index", "rebuild"]),
        json!({"rebuilt": true, "records": 5})
    );

    let page = run(
        store,
        &["query", POST, "--where", r#"langs = "en""#, "--limit", "2"],
    );
    let uris: Vec<&str> = page["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(
        uris,
        [
            format!("at://{DID}/{POST}/p1"),
            format!("at://{DID}/{POST}/p2")
        ]
    );
    assert_eq!(page["records"][0]["value"]["likes"], 1);
    assert_eq!(page["cursor"], "p2");
    let page = run(
        store,
        &[
            "query",
            POST,
            "--where",
            r#"langs = "en""#,
            "--limit",
            "2",
            "--cursor",
            "p2",
        ],
    );
    assert_eq!(page["records"].as_array().unwrap().len(), 1);
    assert_eq!(page["records"][0]["uri"], format!("at://{DID}/{POST}/p5"));
    assert!(page.get("cursor").is_none(), "{page}");

    assert_eq!(run(store, &["query", POST, "--count"]), json!({"count": 5}));
    assert_eq!(
        run(
            store,
            &["query", POST, "--where", "not langs exists", "--count"]
        ),
        json!({"count": 1})
    );
    // p2..p4 are from January 2 on; of them p3 (fr) and p4 (no langs:
    // `!=` includes records without a value) are not in English.
    assert_eq!(
        run(
            store,
            &[
                "query",
                POST,
                "--where",
                r#"createdAt >= "2024-01-02T00:00:00Z" and langs != "en""#,
                "--count"
            ]
        ),
        json!({"count": 2})
    );
    assert_eq!(
        run(store, &["query", POST, "--top", "langs"]),
        json!({"top": [{"value": "en", "count": 3}, {"value": "fr", "count": 2}]})
    );
    assert_eq!(
        run(
            store,
            &["query", POST, "--where", "likes > 1", "--stats", "likes"]
        ),
        json!({"count": 3, "sum": 9, "min": 2, "max": 4, "avg": 3.0})
    );
    assert_eq!(
        run(
            store,
            &["query", POST, "--where", "likes > 100", "--stats", "likes"]
        ),
        json!({"count": 0, "sum": 0})
    );
    // --group-by one path counts as --top does (another code path), in
    // pages of one group.
    let top = run(store, &["query", POST, "--top", "langs"]);
    let mut groups = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = vec!["query", POST, "--group-by", "langs", "--limit", "1"];
        if let Some(c) = &cursor {
            args.extend(["--cursor", c.as_str()]);
        }
        let page = run(store, &args);
        groups.extend(page["groups"].as_array().unwrap().iter().cloned());
        match page["cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    let from_top: Vec<Value> = top["top"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| json!({"key": [t["value"]], "count": t["count"]}))
        .collect();
    assert_eq!(groups, from_top);

    // Bad queries: exit 1, the message on stderr names what to do.
    for (args, says) in [
        (
            vec!["query", POST, "--where", "lang = \"en\""],
            "datarepo index add app.bsky.feed.post lang",
        ),
        (vec!["query", POST, "--where", "langs = "], "at position 8"),
        (vec!["query", POST, "--where", "likes = \"x\""], "integer"),
        (vec!["query", POST, "--top", "likes"], "keyword"),
        (
            vec!["index", "add", POST, "langs", "--kind", "keyword"],
            "already has an index",
        ),
        (
            vec!["index", "drop", POST, "nothing"],
            "no index on nothing",
        ),
    ] {
        let mut all = vec!["--store", store, "--repo", DID];
        all.extend_from_slice(&args);
        let out = datarepo(&all, "");
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }

    // An export imported into a store that declares the indexes: rebuilt.
    let car = tmp.path().join("repo.car");
    run(store, &["export", car.to_str().unwrap()]);
    run(other, &["import", car.to_str().unwrap()]);
    for filter in [r#"langs = "en""#, r#"langs = "fr""#, "not langs exists"] {
        assert_eq!(
            run(other, &["query", POST, "--where", filter, "--count"]),
            run(store, &["query", POST, "--where", filter, "--count"]),
            "{filter}"
        );
    }
    assert_eq!(
        run(other, &["query", POST, "--top", "langs"]),
        run(store, &["query", POST, "--top", "langs"])
    );

    // Dropping an index deletes its containers; the others still answer.
    assert_eq!(
        run(store, &["index", "drop", POST, "likes"]),
        json!({"collection": POST, "path": "likes", "dropped": true})
    );
    assert_eq!(
        run(
            store,
            &["query", POST, "--where", r#"langs = "fr""#, "--count"]
        ),
        json!({"count": 2})
    );

    // A bit cleared behind datarepo's back: check says which row.
    let out = datarepo(&["--store", store, "check"], "");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    common::rt().block_on(async {
        let kv = SlateKv::open_local(std::path::Path::new(store))
            .await
            .unwrap();
        let containers = kv
            .scan(&keycodec::RecordType::Bitmap.range(), false, usize::MAX)
            .await
            .unwrap();
        let (key, _) = containers
            .iter()
            .find(|(k, _)| k.windows(15).any(|w| w == b"langs;standard:"))
            .unwrap();
        kv.write(vec![WriteOp::Delete(key.to_vec())]).await.unwrap();
        kv.close().await.unwrap();
    });
    let out = datarepo(&["--store", store, "check"], "");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("field index of app.bsky.feed.post"), "{text}");
}
