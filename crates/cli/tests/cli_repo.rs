//! The repository commands end to end on a temporary data directory:
//! define, write, read back, list both ways with pagination, delete,
//! history, diff, export and re-import with the same head and records.

use crate::common;

use std::{path::Path, process::Output};

use serde_json::{Value, json};

const DID: &str = "did:web:cli.example";
const POST: &str = "app.bsky.feed.post";

fn run(store: &Path, args: &[&str], stdin: &str) -> Output {
    let mut full = vec!["--store", store.to_str().unwrap(), "--repo", DID];
    full.extend_from_slice(args);
    common::datarepo(&full, stdin)
}

/// Runs a command that must succeed and print one JSON value.
fn ok_json(store: &Path, args: &[&str], stdin: &str) -> Value {
    let mut args = args.to_vec();
    args.push("--json");
    let out = run(store, &args, stdin);
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn all_records(store: &Path) -> Vec<Value> {
    let mut out = Vec::new();
    for c in ok_json(store, &["collection", "list"], "")["collections"]
        .as_array()
        .unwrap()
    {
        let page = ok_json(
            store,
            &["ls", c["collection"].as_str().unwrap(), "--limit", "10000"],
            "",
        );
        out.extend(page["records"].as_array().unwrap().iter().cloned());
    }
    out
}

#[test]
fn records_round_trip_through_the_cli() {
    let tmp = testkit::tempdir("repo");
    let dir = tmp.path();
    let store = dir.join("data");
    let init = ok_json(&store, &["init"], "");
    assert_eq!(init["repo"], DID);
    ok_json(&store, &["collection", "define", POST, "--key", "tid"], "");
    let lexicon = dir.join("profile.json");
    std::fs::write(
        &lexicon,
        json!({"lexicon": 1, "id": "app.bsky.actor.profile",
               "defs": {"main": {"type": "record", "key": "literal:self", "record": {"type": "object"}}}})
        .to_string(),
    )
    .unwrap();
    ok_json(&store, &["lexicon", "add", lexicon.to_str().unwrap()], "");

    // createRecord's shape; the rkey is a fresh TID.
    let mut uris = Vec::new();
    for i in 0..7 {
        let put = ok_json(
            &store,
            &["put", POST],
            &json!({"text": format!("post {i}")}).to_string(),
        );
        assert_eq!(
            put.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["uri", "cid", "commit", "validationStatus"]
        );
        // No Lexicon declares the collection: stored unvalidated.
        assert_eq!(put["validationStatus"], "unknown");
        assert!(put["commit"]["cid"].is_string() && put["commit"]["rev"].is_string());
        uris.push(put["uri"].as_str().unwrap().to_owned());
    }
    let profile = dir.join("self.json");
    std::fs::write(
        &profile,
        r#"{"displayName": "Alice", "avatar": {"$bytes": "aGk"}}"#,
    )
    .unwrap();
    ok_json(
        &store,
        &[
            "put",
            "app.bsky.actor.profile",
            "self",
            "--file",
            profile.to_str().unwrap(),
        ],
        "",
    );

    // getRecord's shape, $type filled in.
    let rkey0 = uris[0].rsplit('/').next().unwrap();
    let got = ok_json(&store, &["get", POST, rkey0], "");
    assert_eq!(got["uri"], uris[0].as_str());
    assert_eq!(got["value"], json!({"$type": POST, "text": "post 0"}));

    // listRecords' shape, paginated both ways; no cursor on the last page.
    for reverse in [false, true] {
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut args = vec!["ls", POST, "--limit", "3"];
            if reverse {
                args.push("--reverse");
            }
            let c;
            if let Some(cur) = &cursor {
                c = cur.clone();
                args.extend(["--cursor", &c]);
            }
            let page = ok_json(&store, &args, "");
            for r in page["records"].as_array().unwrap() {
                seen.push(r["uri"].as_str().unwrap().to_owned());
            }
            match page.get("cursor") {
                Some(c) => cursor = Some(c.as_str().unwrap().to_owned()),
                None => break,
            }
        }
        let mut expected = uris.clone();
        if reverse {
            expected.reverse();
        }
        assert_eq!(seen, expected, "reverse={reverse}");
    }

    // Compare-and-swap: the right record CID and head commit succeed.
    let head = ok_json(&store, &["log", "--limit", "1"], "")["commits"][0]["cid"]
        .as_str()
        .unwrap()
        .to_owned();
    let current = ok_json(&store, &["get", POST, rkey0], "")["cid"]
        .as_str()
        .unwrap()
        .to_owned();
    ok_json(
        &store,
        &[
            "put",
            POST,
            rkey0,
            "--swap-record",
            &current,
            "--swap-commit",
            &head,
        ],
        &json!({"text": "post 0"}).to_string(),
    );

    // Delete, history, diff.
    let log_before = ok_json(&store, &["log"], "")["commits"]
        .as_array()
        .unwrap()
        .clone();
    let old_rev = log_before[0]["rev"].as_str().unwrap().to_owned();
    ok_json(&store, &["rm", POST, rkey0], "");
    let out = run(&store, &["get", POST, rkey0], "");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not found"));
    let old = ok_json(&store, &["get", POST, rkey0, "--at", &old_rev], "");
    assert_eq!(old["value"]["text"], "post 0");
    let log = ok_json(&store, &["log"], "")["commits"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(log.len(), log_before.len() + 1);
    assert_eq!(log[0]["prev"], log[1]["cid"]);
    let new_rev = log[0]["rev"].as_str().unwrap();
    let diff = ok_json(&store, &["diff", &old_rev, new_rev], "");
    assert_eq!(diff["deleted"][0]["uri"], uris[0].as_str());
    assert_eq!(diff["created"], json!([]));
    let first_rev = log.last().unwrap()["rev"].as_str().unwrap();
    let diff = ok_json(&store, &["diff", first_rev, new_rev], "");
    assert_eq!(diff["created"].as_array().unwrap().len(), 7);

    // Export, then import into a fresh directory: same head, same records.
    let car = dir.join("repo.car");
    ok_json(&store, &["export", car.to_str().unwrap()], "");
    let fresh = dir.join("fresh");
    let imported = ok_json(&fresh, &["import", car.to_str().unwrap()], "");
    assert_eq!(imported["records"], 7);
    let (a, b) = (
        ok_json(&store, &["stats"], ""),
        ok_json(&fresh, &["stats"], ""),
    );
    assert_eq!(a["head"], b["head"]);
    assert_eq!(a["records"], b["records"]);
    assert_eq!(all_records(&store), all_records(&fresh));
}
