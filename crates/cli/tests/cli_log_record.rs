//! `log --record` lists the commits that created, updated or deleted one
//! record, newest first, in pages (`--limit`, `--before`); each version's
//! CID is what `get --at` reads at that rev.

use crate::common;

use common::datarepo;
use serde_json::Value;

const DID: &str = "did:web:log-record.example";
const POST: &str = "app.bsky.feed.post";

fn run(store: &str, args: &[&str], stdin: &str) -> Value {
    let mut all = vec!["--store", store, "--repo", DID];
    all.extend_from_slice(args);
    all.push("--json");
    let out = datarepo(&all, stdin);
    assert!(out.status.success(), "{args:?}: {out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn log_record_lists_a_records_versions() {
    let tmp = testkit::tempdir("cli-log-record");
    let store = tmp.path().join("data");
    let store = store.to_str().unwrap();
    // (rev, action, CID after) of each write to POST/a, oldest first.
    let mut expected: Vec<(String, &str, Option<String>)> = Vec::new();
    let put = |text: &str| {
        run(
            store,
            &["put", POST, "a"],
            &format!(r#"{{"text": "{text}"}}"#),
        )
    };
    let v = put("one");
    expected.push((
        v["commit"]["rev"].as_str().unwrap().into(),
        "create",
        v["cid"].as_str().map(Into::into),
    ));
    let v = put("two");
    expected.push((
        v["commit"]["rev"].as_str().unwrap().into(),
        "update",
        v["cid"].as_str().map(Into::into),
    ));
    run(store, &["put", POST, "b"], r#"{"text": "another record"}"#);
    let v = run(store, &["rm", POST, "a"], "");
    expected.push((v["commit"]["rev"].as_str().unwrap().into(), "delete", None));
    let v = put("three");
    expected.push((
        v["commit"]["rev"].as_str().unwrap().into(),
        "create",
        v["cid"].as_str().map(Into::into),
    ));
    expected.reverse();

    let summarize = |versions: &Value| -> Vec<(String, &'static str, Option<String>)> {
        versions
            .as_array()
            .unwrap()
            .iter()
            .map(|v| {
                let action = match v["action"].as_str().unwrap() {
                    "create" => "create",
                    "update" => "update",
                    "delete" => "delete",
                    other => panic!("action {other}"),
                };
                (
                    v["commit"]["rev"].as_str().unwrap().to_owned(),
                    action,
                    v["cid"].as_str().map(Into::into),
                )
            })
            .collect()
    };
    let all = run(store, &["log", "--record", &format!("{POST}/a")], "");
    assert_eq!(summarize(&all["versions"]), expected);
    assert!(all.get("cursor").is_none());
    // The same by AT URI.
    let by_uri = run(
        store,
        &["log", "--record", &format!("at://{DID}/{POST}/a")],
        "",
    );
    assert_eq!(by_uri, all);

    // Each version's CID is the record's at that rev.
    for (rev, _, cid) in &expected {
        let out = datarepo(
            &[
                "--store", store, "--repo", DID, "get", POST, "a", "--at", rev, "--json",
            ],
            "",
        );
        match cid {
            Some(cid) => {
                assert!(out.status.success(), "{out:?}");
                let got: Value = serde_json::from_slice(&out.stdout).unwrap();
                assert_eq!(got["cid"].as_str(), Some(cid.as_str()));
            }
            None => assert_eq!(out.status.code(), Some(1), "{out:?}"),
        }
    }

    // Pages of 3 then the rest.
    let first = run(
        store,
        &["log", "--record", &format!("{POST}/a"), "--limit", "3"],
        "",
    );
    let cursor = first["cursor"].as_str().expect("a cursor").to_owned();
    let rest = run(
        store,
        &["log", "--record", &format!("{POST}/a"), "--before", &cursor],
        "",
    );
    let mut paged = summarize(&first["versions"]);
    paged.extend(summarize(&rest["versions"]));
    assert_eq!(paged, expected);

    // Without --json: one line per version.
    let out = datarepo(
        &[
            "--store",
            store,
            "--repo",
            DID,
            "log",
            "--record",
            &format!("{POST}/a"),
        ],
        "",
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 4, "{text}");
    assert!(text.lines().next().unwrap().contains("created"), "{text}");

    // A misspelled collection is named.
    let out = datarepo(
        &[
            "--store",
            store,
            "--repo",
            DID,
            "log",
            "--record",
            "app.bsky.feed.pots/a",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no collection app.bsky.feed.pots"),
        "{out:?}"
    );
}
