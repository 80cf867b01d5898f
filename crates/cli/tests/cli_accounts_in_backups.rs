//! An account travels with its repository's backups: `export --history`
//! carries it (its password only as its Argon2id hash), `import` into a
//! fresh store restores it (the same password logs in to a server on the
//! restored store), an increment carries a password changed since, and a
//! handle taken by another account in the target store is refused with
//! the cause named, the records imported regardless.

use crate::common;

use std::path::Path;

use common::{datarepo, http, json_lines, start_server};
use serde_json::{Value, json};

const DID: &str = "did:web:erin.test";

fn run(store: &Path, args: &[&str], stdin: &str) -> std::process::Output {
    let mut all = vec!["--store", store.to_str().unwrap(), "--json"];
    all.extend_from_slice(args);
    datarepo(&all, stdin)
}

fn ok(store: &Path, args: &[&str], stdin: &str) -> Value {
    let out = run(store, args, stdin);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    json_lines(&out).pop().unwrap_or(Value::Null)
}

fn logs_in(store: &Path, password: &str) -> bool {
    let (_server, port) = start_server(store.to_str().unwrap(), "backup-admin");
    let (status, _) = http(
        port,
        "POST",
        "/xrpc/com.atproto.server.createSession",
        "",
        &json!({"identifier": "erin.test", "password": password}).to_string(),
    )
    .unwrap();
    status == 200
}

#[test]
fn an_account_is_restored_with_its_repository() {
    let dir = testkit::tempdir("cli-accounts-backups");
    let src = dir.path().join("src");
    ok(
        &src,
        &[
            "account",
            "create",
            "--handle",
            "erin.test",
            "--password-stdin",
        ],
        "erin's first password\n",
    );
    ok(
        &src,
        &["--repo", DID, "put", "app.bsky.feed.post", "3kaaaaaaaaa22"],
        r#"{"text": "kept", "createdAt": "2026-11-27T00:00:00Z"}"#,
    );
    let full = dir.path().join("full.car");
    ok(
        &src,
        &["--repo", DID, "export", "--history", full.to_str().unwrap()],
        "",
    );
    let bytes = std::fs::read(&full).unwrap();
    assert!(
        !bytes.windows(7).any(|w| w == b"erin's "),
        "no password in clear"
    );
    assert!(
        bytes.windows(9).any(|w| w == b"$argon2id"),
        "its hash is there"
    );
    let rev = ok(&src, &["--repo", DID, "log"], "")["commits"][0]["rev"]
        .as_str()
        .unwrap()
        .to_owned();

    let dst = dir.path().join("dst");
    let imported = ok(&dst, &["import", full.to_str().unwrap()], "");
    assert_eq!(imported["account"], "created", "{imported}");
    let shown = ok(&dst, &["account", "show", "erin.test"], "");
    assert_eq!(
        (shown["did"].as_str(), shown["status"].as_str()),
        (Some(DID), Some("active"))
    );
    assert!(logs_in(&dst, "erin's first password"));
    // Importing the same file again changes nothing.
    let again = ok(&dst, &["import", full.to_str().unwrap()], "");
    assert_eq!(again["account"], "unchanged", "{again}");

    // A password changed after the full backup travels in the increment.
    ok(
        &src,
        &["account", "set-password", "erin.test", "--password-stdin"],
        "erin's second password\n",
    );
    ok(
        &src,
        &["--repo", DID, "put", "app.bsky.feed.post", "3kaaaaaaaaa23"],
        r#"{"text": "later", "createdAt": "2026-11-27T00:00:00Z"}"#,
    );
    let inc = dir.path().join("inc.car");
    ok(
        &src,
        &[
            "--repo",
            DID,
            "export",
            "--since",
            &rev,
            inc.to_str().unwrap(),
        ],
        "",
    );
    let updated = ok(&dst, &["import", inc.to_str().unwrap()], "");
    assert_eq!(updated["account"], "updated", "{updated}");
    assert!(logs_in(&dst, "erin's second password"));
    assert!(!logs_in(&dst, "erin's first password"));

    // A store where someone else has the handle: the records come in, the
    // account does not, and the error says why.
    let other = dir.path().join("other");
    ok(
        &other,
        &[
            "account",
            "create",
            "--handle",
            "erin.test",
            "--did",
            "did:web:someone.test",
            "--password-stdin",
        ],
        "x\n",
    );
    let out = run(&other, &["import", full.to_str().unwrap()], "");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("erin.test") && err.contains("taken"), "{err}");
    let listed = ok(&other, &["--repo", DID, "ls", "app.bsky.feed.post"], "");
    assert_eq!(
        listed["records"].as_array().map(Vec::len),
        Some(1),
        "{listed}"
    );
}
