//! `put --batch`: JSON Lines of applyWrites-shaped writes, one commit per
//! `--commit-every` writes; a bad line stops the batch there, naming it,
//! with the commits before it kept.

use crate::common;

use common::{datarepo, json_lines};
use serde_json::json;

const DID: &str = "did:web:batch.example";
const POST: &str = "app.bsky.feed.post";

fn create(rkey: &str) -> String {
    json!({"$type": "com.atproto.repo.applyWrites#create", "collection": POST,
           "rkey": rkey, "value": {"text": rkey}})
    .to_string()
}

#[test]
fn batches_commit_every_n_writes_and_stop_at_a_bad_line() {
    let tmp = testkit::tempdir("cli-put-batch");
    let store = tmp.path().join("data");
    let store = store.to_str().unwrap();
    let mut input: Vec<String> = (0..450).map(|i| create(&format!("r{i:03}"))).collect();
    input.push(
        json!({"$type": "com.atproto.repo.applyWrites#update", "collection": POST,
               "rkey": "r001", "value": {"text": "updated"}})
        .to_string(),
    );
    input.push(
        json!({"$type": "com.atproto.repo.applyWrites#delete", "collection": POST, "rkey": "r000"})
            .to_string(),
    );
    let out = datarepo(
        &[
            "--store",
            store,
            "--repo",
            DID,
            "put",
            "--batch",
            "--commit-every",
            "200",
            "--json",
        ],
        &(input.join("\n") + "\n"),
    );
    assert!(out.status.success(), "{out:?}");
    let commits = json_lines(&out);
    let sizes: Vec<u64> = commits
        .iter()
        .map(|c| c["writes"].as_u64().unwrap())
        .collect();
    assert_eq!(sizes, [200, 200, 52]);
    let get = datarepo(
        &[
            "--store", store, "--repo", DID, "get", POST, "r001", "--json",
        ],
        "",
    );
    assert!(
        String::from_utf8_lossy(&get.stdout).contains("updated"),
        "{get:?}"
    );
    let gone = datarepo(&["--store", store, "--repo", DID, "get", POST, "r000"], "");
    assert_eq!(gone.status.code(), Some(1));

    // A bad third line: the first two commits stay, nothing after.
    let bad = [
        create("s1"),
        create("s2"),
        "{\"$type\": \"nope\"}".to_owned(),
        create("s4"),
    ];
    let out = datarepo(
        &[
            "--store",
            store,
            "--repo",
            DID,
            "put",
            "--batch",
            "--commit-every",
            "1",
        ],
        &bad.join("\n"),
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 3") && err.contains("2 writes"), "{err}");
    for (rkey, present) in [("s1", true), ("s2", true), ("s4", false)] {
        let out = datarepo(&["--store", store, "--repo", DID, "get", POST, rkey], "");
        assert_eq!(out.status.success(), present, "{rkey}: {out:?}");
    }
}
