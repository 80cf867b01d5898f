//! Signed repositories from the command line: `key generate`, `init
//! --signing-key`, `key show`, `key rotate`, `verify` (with the store's keys
//! or `--key`, catching tampering), and `import` refusing a file signed by
//! a key it was not given.

use crate::common;

use std::path::Path;

use common::{datarepo, json_lines};
use serde_json::Value;

fn join(base: &[&str], rest: &[&str]) -> Vec<String> {
    base.iter().chain(rest).map(|s| (*s).to_owned()).collect()
}

fn ok<S: AsRef<str>>(args: &[S], stdin: &str) -> Value {
    let args: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
    let out = datarepo(&args, stdin);
    assert!(out.status.success(), "{args:?}: {out:?}");
    if !args.contains(&"--json") {
        return Value::Null;
    }
    json_lines(&out).pop().unwrap()
}

fn fails<S: AsRef<str>>(args: &[S]) -> String {
    let args: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
    let out = datarepo(&args, "{}");
    assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
    String::from_utf8(out.stderr).unwrap()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn keys_sign_verify_rotate_and_import() {
    let dir = testkit::tempdir("cli-signed");
    let d = dir.path();
    let (a_key, b_key) = (d.join("a.key"), d.join("b.key"));
    let store = d.join("store");
    let store = path(&store);

    let a = ok(&["key", "generate", "--out", path(&a_key), "--json"], "");
    let a_did = a["didKey"].as_str().unwrap().to_owned();
    assert!(a_did.starts_with("did:key:zQ3s"), "{a}");
    assert_eq!(a["type"], "k256");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&a_key).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let before = std::fs::read(&a_key).unwrap();
    let err = fails(&["key", "generate", "--out", path(&a_key)]);
    assert!(err.contains("never overwritten"), "{err}");
    assert_eq!(std::fs::read(&a_key).unwrap(), before);

    let repo = ["--store", store, "--repo", "did:web:a"];
    let init = ok(
        &join(&repo, &["init", "--signing-key", path(&a_key), "--json"]),
        "",
    );
    assert_eq!(init["signingKey"], a_did.as_str());
    for i in 0..3 {
        ok(
            &join(&repo, &["put", "app.x.post", &format!("r{i}")]),
            &format!(r#"{{"text": "hello {i}"}}"#),
        );
    }
    let shown = ok(&join(&repo, &["key", "show", "--json"]), "");
    assert_eq!(shown["signingKey"], a_did.as_str());
    assert_eq!(shown["knownKeys"], serde_json::json!([a_did]));
    // The private key is nowhere but its file.
    let secret = std::fs::read_to_string(&a_key).unwrap();
    let secret_line = secret.lines().nth(1).unwrap().to_owned();
    assert!(!shown.to_string().contains(&secret_line));

    let full = d.join("full.car");
    ok(&join(&repo, &["export", path(&full)]), "");
    let mid_rev = ok(&join(&repo, &["log", "--json", "--limit", "1"]), "")["commits"][0]["rev"]
        .as_str()
        .unwrap()
        .to_owned();
    let verified = ok(&join(&repo, &["verify", path(&full), "--json"]), "");
    assert_eq!(verified["records"], 3);
    assert_eq!(verified["commits"][0]["key"], a_did.as_str());
    // With --key, no store is needed at all.
    ok(&["verify", path(&full), "--key", &a_did], "");

    // One flipped byte of a record: refused, the block named.
    let mut car = std::fs::read(&full).unwrap();
    let at = car.windows(7).position(|w| w == b"hello 1").unwrap();
    car[at] ^= 0x20;
    let tampered = d.join("tampered.car");
    std::fs::write(&tampered, &car).unwrap();
    let err = fails(&["verify", path(&tampered), "--key", &a_did]);
    assert!(err.contains("does not hash to its CID"), "{err}");

    // Rotation: later commits signed by b; the history needs both keys.
    let b = ok(
        &[
            "key",
            "generate",
            "--type",
            "p256",
            "--out",
            path(&b_key),
            "--json",
        ],
        "",
    );
    let b_did = b["didKey"].as_str().unwrap().to_owned();
    assert!(b_did.starts_with("did:key:zDn"), "{b}");
    let rotated = ok(
        &join(
            &repo,
            &["key", "rotate", "--signing-key", path(&b_key), "--json"],
        ),
        "",
    );
    assert_eq!(rotated["signingKey"], b_did.as_str());
    assert_eq!(rotated["knownKeys"], serde_json::json!([a_did, b_did]));
    ok(
        &join(&repo, &["put", "app.x.post", "r9"]),
        r#"{"text": "after"}"#,
    );
    let history = d.join("history.car");
    ok(&join(&repo, &["export", "--history", path(&history)]), "");
    ok(&join(&repo, &["verify", path(&history)]), "");
    let err = fails(&["verify", path(&history), "--key", &a_did]);
    assert!(err.contains("is not by"), "{err}");
    ok(
        &["verify", path(&history), "--key", &a_did, "--key", &b_did],
        "",
    );

    // Import into another store that knows only a: the increment signed
    // by b is refused until b is given.
    let copy = d.join("copy");
    let copy = path(&copy);
    let other = ["--store", copy, "--repo", "did:web:a"];
    let imported = ok(
        &join(&other, &["import", path(&full), "--key", &a_did, "--json"]),
        "",
    );
    assert_eq!(imported["verified"], 1);
    let increment = d.join("inc.car");
    ok(
        &join(&repo, &["export", "--since", &mid_rev, path(&increment)]),
        "",
    );
    let err = fails(&join(&other, &["import", path(&increment)]));
    assert!(err.contains("--trust-new-key"), "{err}");
    ok(
        &join(&other, &["import", path(&increment), "--key", &b_did]),
        "",
    );
    // The copy's history is signed but it has no key file: writes wait
    // for one.
    let err = fails(&join(&other, &["put", "app.x.post", "late"]));
    assert!(err.contains("key rotate"), "{err}");
    ok(
        &join(&other, &["key", "rotate", "--signing-key", path(&b_key)]),
        "",
    );
    ok(&join(&other, &["put", "app.x.post", "late"]), "{}");
}
