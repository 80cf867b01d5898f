//! A `text` index and `--where 'path matches "words"'`: every word asked
//! must be among the record's words (cut at Unicode word boundaries,
//! NFKC, lowercase), `w*` asks for any word with that prefix, `matches`
//! combines with other conditions, and `--top` of a text index gives the
//! most frequent words. A text index kept by later commits answers as
//! the build did; asking `matches` of another kind of index, or `=` of a
//! text index, is refused with the way out.

use crate::common;

use common::datarepo;
use serde_json::{Value, json};

const DID: &str = "did:web:text-search.example";
const POST: &str = "app.bsky.feed.post";

fn run(store: &str, args: &[&str]) -> Value {
    let mut all = vec!["--store", store, "--repo", DID, "--json"];
    all.extend_from_slice(args);
    let out = datarepo(&all, "");
    assert!(out.status.success(), "{args:?}: {out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn count(store: &str, expr: &str) -> Value {
    run(store, &["query", POST, "--where", expr, "--count"])["count"].clone()
}

#[test]
fn words_prefixes_and_top_words() {
    let tmp = testkit::tempdir("cli-text-search");
    let store = tmp.path().join("s");
    let store = store.to_str().unwrap();
    let texts = [
        ("p0", "Fast storage, written in Rust.", "en"),
        ("p1", "RUST: a store that keeps its promises", "en"),
        ("p2", "Stockage rapide — écrit en Ｒｕｓｔ", "fr"),
        ("p3", "Nothing about it here", "en"),
    ];
    for (rkey, text, lang) in texts {
        let record = json!({"$type": POST, "text": text, "lang": lang,
                            "createdAt": "2024-01-01T00:00:00Z"});
        common::put_record(store, DID, POST, rkey, &record);
    }
    run(store, &["index", "add", POST, "text", "--kind", "text"]);
    run(store, &["index", "add", POST, "lang", "--kind", "keyword"]);
    // "rust" is in p0, p1 and p2 (full-width letters fold); "stor*" is
    // storage (p0) and store (p1).
    assert_eq!(count(store, r#"text matches "rust""#), json!(3));
    assert_eq!(count(store, r#"text matches "Rust stor*""#), json!(2));
    assert_eq!(
        count(store, r#"text matches "rust" and lang = "fr""#),
        json!(1)
    );
    assert_eq!(count(store, r#"not text matches "rust""#), json!(1));
    assert_eq!(count(store, r#"text matches "rust go""#), json!(0));
    assert_eq!(count(store, r#"text matches "écrit""#), json!(1));
    assert_eq!(count(store, r#"text matches "ecrit""#), json!(0));
    let page = run(store, &["query", POST, "--where", r#"text matches "st*""#]);
    let rkeys: Vec<&str> = page["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap().rsplit('/').next().unwrap())
        .collect();
    assert_eq!(rkeys, ["p0", "p1", "p2"]);
    // Words by how many records have them: rust (3), then en/écrit/... are
    // single; ties by the word.
    assert_eq!(
        run(
            store,
            &[
                "query",
                POST,
                "--where",
                "lang = \"en\"",
                "--top",
                "text",
                "--limit",
                "2"
            ]
        ),
        json!({"top": [{"value": "rust", "count": 2}, {"value": "a", "count": 1}]})
    );
    // A later commit is indexed as the build indexed the first ones.
    let record = json!({"$type": POST, "text": "Storage engines in rust", "lang": "en",
                        "createdAt": "2024-01-01T00:00:00Z"});
    common::put_record(store, DID, POST, "p4", &record);
    assert_eq!(count(store, r#"text matches "rust stor*""#), json!(3));
    assert_eq!(count(store, r#"text matches "engine*""#), json!(1));
}

#[test]
fn the_wrong_index_kind_is_refused_with_the_way_out() {
    let tmp = testkit::tempdir("cli-text-search-refusals");
    let store = tmp.path().join("s");
    let store = store.to_str().unwrap();
    let record = json!({"$type": POST, "text": "hello", "lang": "en",
                        "createdAt": "2024-01-01T00:00:00Z"});
    common::put_record(store, DID, POST, "p0", &record);
    run(store, &["index", "add", POST, "text", "--kind", "text"]);
    run(store, &["index", "add", POST, "lang", "--kind", "keyword"]);
    for (expr, says) in [
        (r#"lang matches "en""#, "--kind text"),
        (r#"text = "hello""#, "answers matches and exists"),
        (
            r#"text matches "*""#,
            "a * follows the first letters of a word",
        ),
        (r#"text matches "!!""#, "no words to match"),
        (r#"title matches "x""#, "--kind text"),
    ] {
        let out = datarepo(
            &[
                "--store", store, "--repo", DID, "query", POST, "--where", expr, "--count",
            ],
            "",
        );
        assert!(!out.status.success(), "{expr}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{expr}: {err}");
    }
}
