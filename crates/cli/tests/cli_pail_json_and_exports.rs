//! The `pail` commands read a repository export (its root commit leads to
//! its tree) and honour `--json`: `get` (an error as JSON on stderr),
//! `tree` (nested objects), `diff` and `diff -k`.

use crate::common;

use common::datarepo;
use serde_json::{Value, json};

const DID: &str = "did:web:pail-json.example";
const POST: &str = "app.bsky.feed.post";

fn ok(args: &[&str]) -> Value {
    let out = datarepo(args, "");
    assert!(out.status.success(), "{args:?}: {out:?}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {out:?}"))
}

#[test]
fn pail_commands_read_repository_exports_and_print_json() {
    let tmp = testkit::tempdir("cli-pail-json");
    let store = tmp.path().join("data");
    let store = store.to_str().unwrap();
    let car = |n: &str| tmp.path().join(n).to_str().unwrap().to_owned();
    let base = ["--store", store, "--repo", DID];
    let put = |rkey: &str| {
        let mut args = base.to_vec();
        args.extend(["put", POST, rkey]);
        assert!(datarepo(&args, r#"{"text": "x"}"#).status.success());
    };
    put("a");
    put("b");
    let export = |file: &str| {
        let mut args = base.to_vec();
        args.extend(["export", file]);
        assert!(datarepo(&args, "").status.success());
    };
    export(&car("one.car"));
    put("c");
    export(&car("two.car"));

    let got = ok(&[
        "pail",
        "get",
        "--path",
        &car("one.car"),
        "app.bsky.feed.post/a",
        "--json",
    ]);
    assert_eq!(got["key"], "app.bsky.feed.post/a");
    let listed = ok(&["--store", store, "--repo", DID, "get", POST, "a", "--json"]);
    assert_eq!(got["value"], listed["cid"]);
    let out = datarepo(
        &["pail", "get", "--path", &car("one.car"), "nope", "--json"],
        "",
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let e: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert!(e["error"].as_str().unwrap().contains("nope"));

    let tree = ok(&["pail", "tree", "--path", &car("two.car"), "--json"]);
    assert!(tree["cid"].is_string() && tree["bytes"].as_u64().unwrap() > 0);
    let keys: Vec<&str> = tree["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["key"].as_str().unwrap())
        .collect();
    assert!(!keys.is_empty(), "{tree}");

    let ls = datarepo(&["pail", "ls", "--path", &car("two.car"), "--json"], "");
    assert!(ls.status.success(), "{ls:?}");
    let ls_keys: Vec<String> = common::json_lines(&ls)
        .iter()
        .map(|l| l["key"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        ls_keys,
        ["a", "b", "c"].map(|k| format!("{POST}/{k}")).to_vec()
    );

    let diff = ok(&[
        "pail",
        "diff",
        "--path",
        &car("one.car"),
        &car("two.car"),
        "-k",
        "--json",
    ]);
    assert_eq!(diff["keys"].as_array().unwrap().len(), 1, "{diff}");
    assert_eq!(diff["keys"][0]["key"], json!(format!("{POST}/c")));
    assert_eq!(diff["keys"][0]["old"], Value::Null);
    let shards = ok(&[
        "pail",
        "diff",
        "--path",
        &car("one.car"),
        &car("two.car"),
        "--json",
    ]);
    assert!(
        !shards["additions"].as_array().unwrap().is_empty(),
        "{shards}"
    );
}
