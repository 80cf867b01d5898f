//! `put --batch --json` prints, per commit, each write's result as
//! `applyWrites` answers it (`$type`, `uri`, `cid`, `validationStatus`), so
//! a script learns the record keys the commit assigned; locally and
//! through `--server` alike. The keys and CIDs are checked against what
//! `ls --json` lists afterwards.

use crate::common;

use std::{collections::BTreeMap, process::Command};

use common::{datarepo, datarepo_with, json_lines, start_server};
use serde_json::{Value, json};

const DID: &str = "did:web:batch-results.example";
const POST: &str = "app.bsky.feed.post";
const TOKEN: &str = "batch-token";

fn input() -> String {
    let mut lines: Vec<Value> = (0..5)
        .map(|i| {
            json!({"$type": "com.atproto.repo.applyWrites#create", "collection": POST,
                        "value": {"text": format!("post {i}")}})
        })
        .collect();
    lines.push(
        json!({"$type": "com.atproto.repo.applyWrites#create", "collection": POST,
                      "rkey": "fixed", "value": {"text": "fixed"}}),
    );
    lines.push(
        json!({"$type": "com.atproto.repo.applyWrites#update", "collection": POST,
                      "rkey": "fixed", "value": {"text": "changed"}}),
    );
    lines.push(
        json!({"$type": "com.atproto.repo.applyWrites#delete", "collection": POST,
                      "rkey": "fixed"}),
    );
    lines.iter().map(|l| l.to_string() + "\n").collect()
}

/// (uri → cid) of the records `ls --json` lists.
fn listed(store: &str) -> BTreeMap<String, String> {
    let ls = datarepo(&["--store", store, "--repo", DID, "ls", POST, "--json"], "");
    assert!(ls.status.success(), "{ls:?}");
    json_lines(&ls)[0]["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["uri"].as_str().unwrap().to_owned(),
                r["cid"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn check(commits: &[Value], store: &str) {
    // Commits of three writes: 3 + 3 + 2.
    let results: Vec<&Value> = commits
        .iter()
        .flat_map(|c| {
            let results = c["results"].as_array().expect("results");
            assert_eq!(results.len() as u64, c["writes"].as_u64().unwrap(), "{c}");
            results
        })
        .collect();
    assert_eq!(results.len(), 8);
    let types: Vec<&str> = results
        .iter()
        .map(|r| r["$type"].as_str().unwrap())
        .collect();
    let want_types: Vec<&str> = ["create"; 6]
        .into_iter()
        .chain(["update", "delete"])
        .map(|k| match k {
            "create" => "com.atproto.repo.applyWrites#createResult",
            "update" => "com.atproto.repo.applyWrites#updateResult",
            _ => "com.atproto.repo.applyWrites#deleteResult",
        })
        .collect();
    assert_eq!(types, want_types);
    // The five generated keys and their CIDs are exactly what is stored.
    let created: BTreeMap<String, String> = results[..5]
        .iter()
        .map(|r| {
            assert_eq!(r["validationStatus"], "unknown", "{r}");
            (
                r["uri"].as_str().unwrap().to_owned(),
                r["cid"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(created.len(), 5, "five distinct keys");
    assert_eq!(created, listed(store));
}

#[test]
fn each_write_is_printed_locally() {
    let tmp = testkit::tempdir("cli-batch-results");
    let store = tmp.path().join("data");
    let store = store.to_str().unwrap();
    let out = datarepo(
        &[
            "--store",
            store,
            "--repo",
            DID,
            "put",
            "--batch",
            "--commit-every",
            "3",
            "--json",
        ],
        &input(),
    );
    assert!(out.status.success(), "{out:?}");
    check(&json_lines(&out), store);
}

#[test]
fn each_write_is_printed_through_the_server() {
    let tmp = testkit::tempdir("cli-batch-results-remote");
    let store = tmp.path().join("data");
    let store = store.to_str().unwrap();
    let commits = {
        let (_server, port) = start_server(store, TOKEN);
        let out = datarepo_with(
            Command::new(env!("CARGO_BIN_EXE_datarepo"))
                .args([
                    "--server",
                    &format!("http://127.0.0.1:{port}"),
                    "--repo",
                    DID,
                ])
                .args(["put", "--batch", "--commit-every", "3", "--json"])
                .env("DATAREPO_TOKEN", TOKEN),
            &input(),
        );
        assert!(out.status.success(), "{out:?}");
        json_lines(&out)
    };
    check(&commits, store);
}
