//! Backups that restore everything: a full export then incremental
//! `export --since` files imported in order continue the history commit by
//! commit (`check` finds it intact, also after two increments; one imported
//! twice is a no-op; one out of order is refused and changes nothing); and
//! `export --history` restores the declarations (key types, Lexicons, field
//! indexes) and every retained commit, so `log`, `get --at` and `diff`
//! answer on the restored store as on the original.

use crate::common;

use std::path::Path;

use serde_json::{Value, json};

const DID: &str = "did:web:backup.example";
const POST: &str = "app.bsky.feed.post";

fn run(store: &Path, args: &[&str], stdin: &str) -> std::process::Output {
    let mut all = vec!["--store", store.to_str().unwrap(), "--repo", DID];
    all.extend_from_slice(args);
    common::datarepo(&all, stdin)
}

fn ok(store: &Path, args: &[&str], stdin: &str) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = run(store, &all, stdin);
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn head_rev(store: &Path) -> String {
    ok(store, &["log"], "")["commits"][0]["rev"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn put(store: &Path, rkey: &str, text: &str) {
    ok(
        store,
        &["put", POST, rkey],
        &json!({"text": text}).to_string(),
    );
}

fn import(store: &Path, car: &Path) -> std::process::Output {
    common::datarepo(
        &[
            "--store",
            store.to_str().unwrap(),
            "import",
            car.to_str().unwrap(),
        ],
        "",
    )
}

fn export(store: &Path, car: &Path, extra: &[&str]) {
    let mut args = vec!["export", car.to_str().unwrap()];
    args.extend_from_slice(extra);
    ok(store, &args, "");
}

fn check(store: &Path, history: bool) {
    let mut args = vec!["--store", store.to_str().unwrap(), "check"];
    if history {
        args.push("--history");
    }
    let out = common::datarepo(&args, "");
    assert!(
        out.status.success(),
        "check: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn full_then_incremental_restores_continue_the_history() {
    let tmp = testkit::tempdir("cli-backup-incremental");
    let (src, car) = (tmp.path().join("src"), |n: &str| tmp.path().join(n));
    ok(&src, &["init"], "");
    put(&src, "a", "one");
    put(&src, "b", "two");
    export(&src, &car("full.car"), &[]);
    let full_rev = head_rev(&src);
    // Several commits per increment: creates, an update, a delete.
    put(&src, "c", "three");
    put(&src, "a", "one, edited");
    ok(&src, &["rm", POST, "b"], "");
    export(&src, &car("inc1.car"), &["--since", &full_rev]);
    let inc1_rev = head_rev(&src);
    put(&src, "d", "four");
    put(&src, "e", "five");
    export(&src, &car("inc2.car"), &["--since", &inc1_rev]);

    let dst = tmp.path().join("dst");
    for file in ["full.car", "inc1.car"] {
        let out = import(&dst, &car(file));
        assert!(out.status.success(), "{file}: {out:?}");
    }
    check(&dst, true);
    // The same increment again: nothing to do.
    let again = import(&dst, &car("inc1.car"));
    assert!(again.status.success(), "{again:?}");
    let out = import(&dst, &car("inc2.car"));
    assert!(out.status.success(), "{out:?}");
    check(&dst, true);
    // The log from the full export's commit on (a plain export holds only
    // its head commit).
    let src_log = ok(&src, &["log"], "")["commits"]
        .as_array()
        .unwrap()
        .clone();
    let since_full: Vec<Value> = src_log
        .iter()
        .take_while(|c| c["rev"].as_str() >= Some(full_rev.as_str()))
        .cloned()
        .collect();
    assert_eq!(since_full.len(), 6);
    assert_eq!(ok(&dst, &["log"], "")["commits"], json!(since_full));
    assert_eq!(ok(&dst, &["ls", POST], ""), ok(&src, &["ls", POST], ""));

    // Out of order: refused, and the store is as it was.
    let other = tmp.path().join("other");
    assert!(import(&other, &car("full.car")).status.success());
    let before = ok(&other, &["log"], "");
    let out = import(&other, &car("inc2.car"));
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not continue"), "{err}");
    assert_eq!(ok(&other, &["log"], ""), before);
    check(&other, true);
}

#[test]
fn a_history_export_restores_declarations_and_history() {
    let tmp = testkit::tempdir("cli-backup-history");
    let src = tmp.path().join("src");
    ok(&src, &["init"], "");
    ok(&src, &["collection", "define", POST, "--key", "any"], "");
    let lexicon = tmp.path().join("profile.json");
    std::fs::write(
        &lexicon,
        json!({"lexicon": 1, "id": "app.bsky.actor.profile",
               "defs": {"main": {"type": "record", "key": "literal:self",
                                 "record": {"type": "object"}}}})
        .to_string(),
    )
    .unwrap();
    ok(&src, &["lexicon", "add", lexicon.to_str().unwrap()], "");
    // A definitions document (no collection) travels in the declarations too.
    let defs = tmp.path().join("defs.json");
    std::fs::write(
        &defs,
        json!({"lexicon": 1, "id": "app.example.defs",
               "defs": {"tag": {"type": "string", "maxLength": 4}}})
        .to_string(),
    )
    .unwrap();
    ok(&src, &["lexicon", "add", defs.to_str().unwrap()], "");
    ok(
        &src,
        &["put", "app.bsky.actor.profile", "self"],
        &json!({"displayName": "Backup"}).to_string(),
    );
    put(&src, "a", "one");
    let first = head_rev(&src);
    ok(
        &src,
        &["index", "add", POST, "text", "--kind", "keyword"],
        "",
    );
    put(&src, "b", "two");
    put(&src, "a", "one, edited");
    ok(&src, &["rm", POST, "b"], "");
    let last = head_rev(&src);
    let car = tmp.path().join("backup.car");
    export(&src, &car, &["--history"]);
    // An existing file is not overwritten without --force.
    let out = run(&src, &["export", car.to_str().unwrap(), "--history"], "");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--force"));
    export(&src, &car, &["--history", "--force"]);

    let dst = tmp.path().join("dst");
    let out = import(&dst, &car);
    assert!(out.status.success(), "{out:?}");
    check(&dst, true);
    for args in [
        &["log"][..],
        &["collection", "list"],
        &["lexicon", "list"],
        &["lexicon", "show", "app.example.defs"],
        &["index", "list"],
        &["ls", POST],
        &["get", POST, "a", "--at", &first],
        &["get", "app.bsky.actor.profile", "self"],
        &["diff", &first, &last],
        &[
            "query",
            POST,
            "--where",
            r#"text = "one, edited""#,
            "--count",
        ],
    ] {
        assert_eq!(ok(&dst, args, ""), ok(&src, args, ""), "{args:?}");
    }
    // The Lexicon's key type holds on the restored store.
    let out = run(
        &dst,
        &["put", "app.bsky.actor.profile", "other"],
        r#"{"displayName":"x"}"#,
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
}
