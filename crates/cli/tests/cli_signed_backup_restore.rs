//! A signed repository restored from a backup stays signed: the backup
//! carries its public keys, so a store that restores it without being given
//! any key (`import` without `--key`) knows them, refuses writes until it
//! has the private key (`key rotate --signing-key`, or `import
//! --signing-key`), and then signs them; the whole history verifies with
//! the keys the original had.
//!
//! Before backups carried keys, such a restore knew no key, took the next
//! `put` as an unsigned commit between signed ones, and the repository's
//! history could never verify again ("the commit is not signed").

use crate::common;

use std::path::Path;

use common::datarepo;
use serde_json::Value;

const DID: &str = "did:web:signed-backup.example";

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn run(store: &Path, args: &[&str], stdin: &str) -> std::process::Output {
    let mut all = vec!["--store", path(store), "--repo", DID];
    all.extend_from_slice(args);
    datarepo(&all, stdin)
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
    common::json_lines(&out).pop().unwrap_or(Value::Null)
}

fn fails(store: &Path, args: &[&str], stdin: &str) -> String {
    let out = run(store, args, stdin);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
    String::from_utf8(out.stderr).unwrap()
}

fn generate(key: &Path) -> String {
    let out = datarepo(&["key", "generate", "--out", path(key), "--json"], "");
    assert!(out.status.success(), "{out:?}");
    common::json_lines(&out).pop().unwrap()["didKey"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A signed source with two commits and its full backup.
fn signed_source(dir: &Path) -> (std::path::PathBuf, String, std::path::PathBuf) {
    let key = dir.join("a.key");
    let did_key = generate(&key);
    let src = dir.join("src");
    ok(&src, &["init", "--signing-key", path(&key)], "");
    ok(&src, &["put", "app.x.post", "one"], r#"{"text": "one"}"#);
    ok(&src, &["put", "app.x.post", "two"], r#"{"text": "two"}"#);
    let backup = dir.join("full.car");
    ok(&src, &["export", "--history", path(&backup)], "");
    (key, did_key, backup)
}

#[test]
fn a_signed_backup_restored_without_a_key_refuses_writes_until_it_can_sign_them() {
    let tmp = testkit::tempdir("cli-signed-backup");
    let d = tmp.path();
    let (key, did_key, backup) = signed_source(d);

    let dst = d.join("dst");
    let imported = ok(&dst, &["import", path(&backup)], "");
    assert_eq!(imported["signed"], true, "{imported}");
    assert_eq!(imported["signingKeyMissing"], true, "{imported}");
    // The backup's public key is known, but no private key is here.
    let shown = ok(&dst, &["key", "show"], "");
    assert_eq!(shown["knownKeys"], serde_json::json!([did_key]), "{shown}");
    assert_eq!(shown["signingKey"], Value::Null, "{shown}");

    // Writes are refused, saying how to give the key; nothing is written.
    let log_before = ok(&dst, &["log"], "");
    let err = fails(&dst, &["put", "app.x.post", "three"], r#"{"text": "3"}"#);
    assert!(err.contains("key rotate --signing-key"), "{err}");
    assert_eq!(ok(&dst, &["log"], ""), log_before);

    // With the key: the write is signed, and the history verifies with the
    // original's key alone.
    ok(&dst, &["key", "rotate", "--signing-key", path(&key)], "");
    ok(&dst, &["put", "app.x.post", "three"], r#"{"text": "3"}"#);
    let after = d.join("after.car");
    ok(&dst, &["export", "--history", path(&after)], "");
    let verified = ok(
        &dst,
        &["verify", path(&after), "--key", did_key.as_str()],
        "",
    );
    assert_eq!(verified["commits"].as_array().unwrap().len(), 4);
    ok(&dst, &["check", "--history"], "");
}

#[test]
fn import_signing_key_restores_a_writable_signed_repository_in_one_step() {
    let tmp = testkit::tempdir("cli-signed-backup-key");
    let d = tmp.path();
    let (key, did_key, backup) = signed_source(d);

    let dst = d.join("dst");
    let imported = ok(
        &dst,
        &["import", path(&backup), "--signing-key", path(&key)],
        "",
    );
    // The given key's public key verified the file's commits.
    assert_eq!(imported["verified"], 3, "{imported}");
    assert_eq!(imported["signingKeyMissing"], false, "{imported}");
    ok(&dst, &["put", "app.x.post", "three"], r#"{"text": "3"}"#);
    let after = d.join("after.car");
    ok(&dst, &["export", "--history", path(&after)], "");
    ok(
        &dst,
        &["verify", path(&after), "--key", did_key.as_str()],
        "",
    );
}
