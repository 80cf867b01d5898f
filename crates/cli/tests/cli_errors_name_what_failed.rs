//! With `--json` a failure is `{"error": NAME, "message": TEXT}` on stderr,
//! the API's shape, with the name the API gives the same failure (checked
//! against a running server's answers); a collection the repository never
//! had is said to be missing (exit 1) instead of listing nothing, and a
//! key its collection's key type refuses names the rule.

use crate::common;

use common::{datarepo, json_lines, start_server};
use serde_json::Value;

const DID: &str = "did:web:errors.example";
const POST: &str = "app.test.post";

fn cli(store: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec!["--store", store, "--repo", DID];
    all.extend_from_slice(args);
    datarepo(&all, "")
}

/// The JSON error a failing `--json` command printed.
fn json_error(out: &std::process::Output) -> Value {
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    serde_json::from_slice(&out.stderr).unwrap_or_else(|e| panic!("{e}: {out:?}"))
}

/// A store whose repository has a `tid` collection with one record.
fn seeded(tmp: &testkit::TempDir) -> String {
    let store = tmp.path().join("data").to_str().unwrap().to_owned();
    assert!(cli(&store, &["init"]).status.success());
    let defined = cli(&store, &["collection", "define", POST, "--key", "tid"]);
    assert!(defined.status.success(), "{defined:?}");
    let put = datarepo(
        &["--store", &store, "--repo", DID, "put", POST, "--create"],
        r#"{"text": "hello"}"#,
    );
    assert!(put.status.success(), "{put:?}");
    store
}

#[test]
fn failures_are_named_as_the_api_names_them() {
    let tmp = testkit::tempdir("cli-error-names");
    let store = seeded(&tmp);
    let store = store.as_str();
    let (_server, port) = start_server(store, "t");
    let api = |path: &str| -> Value {
        let (_, body) = common::http(port, "GET", path, "", "").expect("the server answers");
        serde_json::from_str(&body).unwrap()
    };

    // A record that is not there.
    let missing = json_error(&cli(store, &["get", POST, "3kaaaaaaaaaaa", "--json"]));
    let answer = api(&format!(
        "/xrpc/com.atproto.repo.getRecord?repo={DID}&collection={POST}&rkey=3kaaaaaaaaaaa"
    ));
    assert_eq!(missing["error"], answer["error"], "{missing} vs {answer}");
    assert_eq!(missing["error"], "RecordNotFound");
    assert!(
        missing["message"]
            .as_str()
            .unwrap()
            .contains("3kaaaaaaaaaaa")
    );

    // A query that does not parse.
    let bad = json_error(&cli(
        store,
        &["query", POST, "--where", "text =", "--count", "--json"],
    ));
    let answer = api(&format!(
        "/xrpc/dev.datarepo.countRecords?repo={DID}&collection={POST}&where=text%20%3D"
    ));
    assert_eq!(bad["error"], answer["error"], "{bad} vs {answer}");
    assert_eq!(bad["error"], "InvalidRequest");

    // A repository that is not there.
    let out = datarepo(
        &[
            "--store",
            store,
            "--repo",
            "did:web:none",
            "ls",
            POST,
            "--json",
        ],
        "",
    );
    assert_eq!(json_error(&out)["error"], "RepoNotFound");
}

#[test]
fn a_misspelled_collection_or_a_key_its_type_refuses_is_said() {
    let tmp = testkit::tempdir("cli-misspelled");
    let store = seeded(&tmp);
    let store = store.as_str();

    for args in [
        &["ls", "app.test.pots"][..],
        &["query", "app.test.pots", "--count"],
        &["get", "app.test.pots", "3kaaaaaaaaaaa"],
    ] {
        let out = cli(store, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("has no collection app.test.pots; it has: {POST}")),
            "{args:?}: {stderr}"
        );
        let mut with_json = args.to_vec();
        with_json.push("--json");
        assert_eq!(
            json_error(&cli(store, &with_json))["error"],
            "CollectionNotFound"
        );
    }

    // Not a TID, in a tid collection: the rule, not "not found".
    let out = cli(store, &["get", POST, "not-a-tid"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("not found"), "{stderr}");
    assert!(stderr.contains("tid"), "{stderr}");

    // listRepos' `active`; `keyType` as the API says it.
    let repos = json_lines(&cli(store, &["repo", "list", "--json"]));
    assert_eq!(repos[0]["repos"][0]["active"], true, "{repos:?}");
    let collections = json_lines(&cli(store, &["collection", "list", "--json"]));
    let row = &collections[0]["collections"][0];
    assert_eq!(row["keyType"], "tid", "{row}");
    assert_eq!(row["keyType"], row["key"]);
}
