//! An incremental backup (`export --since`) carries the repository's
//! declarations as of its head, and importing it after the full backup
//! applies them: what was declared since is added, what changed is
//! changed, what was removed is removed. One round trip per kind of
//! declaration (field index, record Lexicon, definitions Lexicon,
//! collection key type, signing key), each compared with the source.
//!
//! Before increments carried them, a restore of full + increment silently
//! lacked everything declared after the full backup.

use crate::common;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

const DID: &str = "did:web:increments.example";
const POST: &str = "app.bsky.feed.post";

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn ok(store: &Path, args: &[&str], stdin: &str) -> Value {
    let mut all = vec!["--store", path(store), "--repo", DID];
    all.extend_from_slice(args);
    all.push("--json");
    let out = common::datarepo(&all, stdin);
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    common::json_lines(&out).pop().unwrap_or(Value::Null)
}

fn head_rev(store: &Path) -> String {
    ok(store, &["log"], "")["commits"][0]["rev"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn write_json(dir: &Path, name: &str, value: &Value) -> PathBuf {
    let file = dir.join(name);
    std::fs::write(&file, value.to_string()).unwrap();
    file
}

/// A source with a record, its full backup, and the full backup's rev.
struct Backup {
    dir: testkit::TempDir,
    src: PathBuf,
    full: PathBuf,
    rev: String,
}

fn source(name: &str, declare: impl FnOnce(&Path, &Path)) -> Backup {
    let dir = testkit::tempdir(name);
    let src = dir.path().join("src");
    ok(&src, &["init"], "");
    declare(&src, dir.path());
    ok(&src, &["put", POST, "a"], r#"{"text": "one", "n": 1}"#);
    let full = dir.path().join("full.car");
    ok(&src, &["export", "--history", path(&full)], "");
    let rev = head_rev(&src);
    Backup {
        dir,
        src,
        full,
        rev,
    }
}

impl Backup {
    /// Exports the increment since the full backup (after `commit` more
    /// writes), restores full + increment into a fresh store, and returns
    /// it.
    fn restore(&self, commit: bool) -> PathBuf {
        if commit {
            ok(&self.src, &["put", POST, "b"], r#"{"text": "two", "n": 2}"#);
        }
        let inc = self.dir.path().join("inc.car");
        let _ = std::fs::remove_file(&inc);
        ok(&self.src, &["export", "--since", &self.rev, path(&inc)], "");
        let dst = self.dir.path().join(format!("dst-{commit}"));
        for file in [&self.full, &inc] {
            let imported = ok(&dst, &["import", path(file)], "");
            assert_eq!(imported["declarations"], true, "{imported}");
        }
        ok(&dst, &["check", "--history"], "");
        dst
    }

    fn same(&self, dst: &Path, args: &[&str]) {
        assert_eq!(ok(dst, args, ""), ok(&self.src, args, ""), "{args:?}");
    }
}

#[test]
fn field_indexes_added_changed_and_dropped_after_the_full_backup() {
    let b = source("inc-decl-index", |src, _| {
        ok(
            src,
            &["index", "add", POST, "text", "--kind", "keyword"],
            "",
        );
        ok(src, &["index", "add", POST, "n", "--kind", "keyword"], "");
    });
    ok(&b.src, &["index", "drop", POST, "text"], "");
    ok(&b.src, &["index", "drop", POST, "n"], "");
    ok(
        &b.src,
        &["index", "add", POST, "n", "--kind", "integer"],
        "",
    );
    ok(
        &b.src,
        &["index", "add", POST, "langs", "--kind", "keyword"],
        "",
    );
    for commit in [false, true] {
        let dst = b.restore(commit);
        b.same(&dst, &["index", "list"]);
        let listed = ok(&dst, &["index", "list"], "");
        assert_eq!(listed["indexes"].as_array().unwrap().len(), 2, "{listed}");
        assert_eq!(
            ok(&dst, &["index", "ls"], ""),
            listed,
            "`index ls` is `index list`"
        );
        b.same(&dst, &["query", POST, "--where", "n >= 1", "--count"]);
    }
}

#[test]
fn lexicons_added_changed_and_removed_after_the_full_backup() {
    let profile = |max: u64| {
        json!({"lexicon": 1, "id": "app.bsky.actor.profile",
               "defs": {"main": {"type": "record", "key": "literal:self",
                                 "record": {"type": "object", "properties": {
                                     "displayName": {"type": "string", "maxLength": max}}}}}})
    };
    let b = source("inc-decl-lexicon", |src, dir| {
        let file = write_json(dir, "profile.json", &profile(64));
        ok(src, &["lexicon", "add", path(&file)], "");
        let defs = json!({"lexicon": 1, "id": "app.example.gone",
                          "defs": {"tag": {"type": "string"}}});
        let file = write_json(dir, "gone.json", &defs);
        ok(src, &["lexicon", "add", path(&file)], "");
    });
    let dir = b.dir.path().to_owned();
    // Changed: the record Lexicon; removed: one definitions document;
    // added: another, and a second record Lexicon.
    ok(
        &b.src,
        &[
            "lexicon",
            "add",
            path(&write_json(&dir, "p2.json", &profile(8))),
        ],
        "",
    );
    ok(&b.src, &["lexicon", "rm", "app.example.gone"], "");
    let defs = json!({"lexicon": 1, "id": "app.example.defs",
                      "defs": {"tag": {"type": "string", "maxLength": 4}}});
    ok(
        &b.src,
        &[
            "lexicon",
            "add",
            path(&write_json(&dir, "defs.json", &defs)),
        ],
        "",
    );
    let like = json!({"lexicon": 1, "id": "app.bsky.feed.like",
                      "defs": {"main": {"type": "record", "key": "tid",
                                        "record": {"type": "object"}}}});
    ok(
        &b.src,
        &[
            "lexicon",
            "add",
            path(&write_json(&dir, "like.json", &like)),
        ],
        "",
    );
    for commit in [false, true] {
        let dst = b.restore(commit);
        b.same(&dst, &["lexicon", "list"]);
        b.same(&dst, &["lexicon", "show", "app.bsky.actor.profile"]);
        b.same(&dst, &["lexicon", "show", "app.example.defs"]);
        b.same(&dst, &["collection", "list"]);
        // The changed Lexicon is the one records meet.
        let long = r#"{"displayName": "far longer than eight"}"#;
        let mut args = vec!["--store", path(&dst), "--repo", DID];
        args.extend(["put", "app.bsky.actor.profile", "self"]);
        let out = common::datarepo(&args, long);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
    }
}

#[test]
fn collection_key_types_declared_and_changed_after_the_full_backup() {
    let b = source("inc-decl-collection", |src, _| {
        ok(
            src,
            &["collection", "define", "app.example.thing", "--key", "any"],
            "",
        );
    });
    ok(
        &b.src,
        &[
            "collection",
            "define",
            "app.example.thing",
            "--key",
            "literal:self",
        ],
        "",
    );
    ok(
        &b.src,
        &["collection", "define", "app.bsky.feed.like", "--key", "tid"],
        "",
    );
    for commit in [false, true] {
        let dst = b.restore(commit);
        b.same(&dst, &["collection", "list"]);
        // The declared key types hold on the restored store.
        let mut args = vec!["--store", path(&dst), "--repo", DID];
        args.extend(["put", "app.bsky.feed.like", "not-a-tid"]);
        let out = common::datarepo(&args, "{}");
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        let mut args = vec!["--store", path(&dst), "--repo", DID];
        args.extend(["put", "app.example.thing", "other"]);
        let out = common::datarepo(&args, "{}");
        assert_eq!(out.status.code(), Some(1), "{out:?}");
    }
}

#[test]
fn a_signing_key_started_after_the_full_backup() {
    let b = source("inc-decl-key", |_, _| {});
    let key = b.dir.path().join("k.key");
    let out = common::datarepo(&["key", "generate", "--out", path(&key), "--json"], "");
    assert!(out.status.success(), "{out:?}");
    let did_key = common::json_lines(&out).pop().unwrap()["didKey"]
        .as_str()
        .unwrap()
        .to_owned();
    ok(&b.src, &["key", "rotate", "--signing-key", path(&key)], "");
    for commit in [false, true] {
        let dst = b.restore(commit);
        let shown = ok(&dst, &["key", "show"], "");
        assert_eq!(shown["knownKeys"], json!([did_key]), "{shown}");
        // Signed from here on: no private key, no write.
        let mut args = vec!["--store", path(&dst), "--repo", DID];
        args.extend(["put", POST, "c"]);
        let out = common::datarepo(&args, r#"{"text": "three"}"#);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        ok(&dst, &["key", "rotate", "--signing-key", path(&key)], "");
        ok(&dst, &["put", POST, "c"], r#"{"text": "three"}"#);
    }
}
