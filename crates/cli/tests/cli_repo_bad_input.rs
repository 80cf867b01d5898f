//! Bad input to the repository commands: each gives a clear error, a
//! non-zero exit code, and leaves the repository unchanged.

use crate::common;

use std::path::Path;

use serde_json::{Value, json};

const DID: &str = "did:web:bad.example";
/// A CID that is neither the head nor any record here.
const STALE: &str = "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm";

fn run(store: &Path, args: &[&str], stdin: &str) -> std::process::Output {
    let mut full = vec!["--store", store.to_str().unwrap(), "--repo", DID];
    full.extend_from_slice(args);
    common::datarepo(&full, stdin)
}

fn stats(store: &Path) -> Value {
    let out = run(store, &["stats", "--json"], "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn bad_input_changes_nothing() {
    let tmp = testkit::tempdir("repo-bad");
    let dir = tmp.path();
    let store = dir.join("data");
    assert!(run(&store, &["init"], "").status.success());
    assert!(
        run(
            &store,
            &["collection", "define", "com.example.t", "--key", "tid"],
            ""
        )
        .status
        .success()
    );
    assert!(
        run(&store, &["put", "com.example.a", "k1"], r#"{"n": 1}"#)
            .status
            .success()
    );
    let car = dir.join("good.car");
    assert!(
        run(&store, &["export", car.to_str().unwrap()], "")
            .status
            .success()
    );
    let good = std::fs::read(&car).unwrap();
    let before = stats(&store);

    let link = r#"{"l": {"$link": "bafynotacid"}}"#;
    let cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (vec!["put", "not_an.nsid!", "k"], "{}", "NSID"),
        (vec!["put", "com.example.a", "bad/key"], "{}", "record key"),
        (vec!["put", "com.example.a", ".."], "{}", "record key"),
        (
            vec!["put", "com.example.a", "k2"],
            r#"{"f": 1.5}"#,
            "integer",
        ),
        (vec!["put", "com.example.a", "k2"], link, "$link"),
        (
            vec!["put", "com.example.a", "k2"],
            r#"{"b": {"$bytes": "!!"}}"#,
            "base64",
        ),
        (
            vec!["put", "com.example.a", "k2"],
            r#"{"$type": "com.other.x"}"#,
            "$type",
        ),
        (vec!["put", "com.example.a", "k2"], "[1, 2]", "object"),
        (
            vec!["put", "com.example.a", "k2"],
            "{not json",
            "not valid JSON",
        ),
        (vec!["put", "com.example.t", "not-a-tid"], "{}", "tid"),
        (
            vec!["put", "com.example.a", "k1", "--create"],
            "{}",
            "already exists",
        ),
        // (rm of an absent record is a no-op, as deleteRecord: cli_writes_agree_with_the_server.rs)
        (
            vec![
                "collection",
                "define",
                "com.example.a",
                "--key",
                "literal:self",
            ],
            "",
            "k1",
        ),
        (
            vec![
                "collection",
                "define",
                "com.example.b",
                "--key",
                "sometimes",
            ],
            "",
            "key type",
        ),
        (vec!["diff", "notarev", "3n2ufkvybqce5"], "", "not a rev"),
        (
            vec!["get", "com.example.a", "k1", "--at", "2222222222222"],
            "",
            "no commit with rev",
        ),
        (
            vec!["rm", "com.example.a", "k1", "--swap-record", STALE],
            "",
            "as the write expected",
        ),
        (
            vec!["put", "com.example.a", "k1", "--swap-record", STALE],
            "{}",
            "as the write expected",
        ),
        (
            vec!["put", "com.example.a", "k1", "--swap-commit", STALE],
            "{}",
            "as the write expected",
        ),
        (
            vec!["rm", "com.example.a", "k1", "--swap-commit", "notacid"],
            "",
            "not a CID",
        ),
        (
            vec![
                "put",
                "com.example.a",
                "k9",
                "--create",
                "--swap-record",
                STALE,
            ],
            "{}",
            "contradict",
        ),
    ];
    for (args, stdin, needle) in &cases {
        let out = run(&store, args, stdin);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?} should fail: {err}");
        assert!(
            err.contains(needle),
            "{args:?}: {err:?} should mention {needle:?}"
        );
        assert_eq!(stats(&store), before, "{args:?} changed the repository");
    }

    // Truncated and tampered CAR files.
    let mut files = vec![("truncated", good[..good.len() - 7].to_vec())];
    for at in [good.len() / 2, good.len() - 2] {
        let mut t = good.clone();
        t[at] ^= 0x40;
        files.push(("tampered", t));
    }
    files.push(("garbage", b"not a car at all".to_vec()));
    for (what, bytes) in files {
        let path = dir.join(format!("{what}.car"));
        std::fs::write(&path, bytes).unwrap();
        for target in [&store, &dir.join("fresh")] {
            let out = run(target, &["import", path.to_str().unwrap()], "");
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{what}: {err}");
            assert!(err.contains("invalid CAR"), "{what}: {err}");
        }
        assert_eq!(stats(&store), before, "{what} changed the repository");
        let out = run(&dir.join("fresh"), &["stats"], "");
        assert!(String::from_utf8_lossy(&out.stderr).contains("does not exist"));
    }

    // Without --repo, the store's only repository; with two, an error that
    // says how to give one.
    let out = common::datarepo(&["--store", store.to_str().unwrap(), "stats"], "");
    assert!(out.status.success(), "{out:?}");
    let out = common::datarepo(
        &[
            "--store",
            store.to_str().unwrap(),
            "--repo",
            "did:web:second.example",
            "init",
        ],
        "",
    );
    assert!(out.status.success(), "{out:?}");
    let out = common::datarepo(&["--store", store.to_str().unwrap(), "stats"], "");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("DATAREPO_REPO"));
    let list = common::datarepo(
        &["--store", store.to_str().unwrap(), "repo", "list", "--json"],
        "",
    );
    assert!(list.status.success(), "{list:?}");
    let list: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    let dids: Vec<&str> = list["repos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["did"].as_str().unwrap())
        .collect();
    assert_eq!(dids.len(), 2, "{list}");
    assert!(dids.contains(&"did:web:second.example"), "{list}");
    assert_eq!(json!(before["records"]), json!(1));
}
