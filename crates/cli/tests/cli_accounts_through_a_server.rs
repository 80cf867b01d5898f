//! `datarepo account … --server URL` beside a running server (whose store
//! the CLI cannot open as writer): create, take down, activate and reset a
//! password through the admin API, each taking effect at once, and `show`
//! reading the store beside it; the new account's signing key is in the
//! store's signing-keys directory.

use crate::common;

use std::process::Command;

use common::{datarepo_with, http, start_server};
use serde_json::{Value, json};

const TOKEN: &str = "cli-admin-token";
const DID: &str = "did:web:dana.test";

fn login(port: u16, password: &str) -> u16 {
    http(
        port,
        "POST",
        "/xrpc/com.atproto.server.createSession",
        "",
        &json!({"identifier": "dana.test", "password": password}).to_string(),
    )
    .unwrap()
    .0
}

#[test]
fn accounts_are_managed_through_the_server() {
    let dir = testkit::tempdir("cli-accounts-server");
    let store = dir.path().join("store");
    let (_server, port) = start_server(store.to_str().unwrap(), TOKEN);
    let url = format!("http://127.0.0.1:{port}");
    let account = |args: &[&str], stdin: &str| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_datarepo"));
        cmd.args([
            "--store",
            store.to_str().unwrap(),
            "--json",
            "--server",
            &url,
            "account",
        ])
        .args(args)
        .env("DATAREPO_TOKEN", TOKEN);
        let out = datarepo_with(&mut cmd, stdin);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let made = account(
        &["create", "--handle", "dana.test", "--password-stdin"],
        "first password\n",
    );
    assert_eq!(made["did"], DID);
    assert!(
        store
            .join("signing-keys")
            .join(format!("{DID}.key"))
            .exists(),
        "the account's key is kept where the server keeps keys"
    );
    assert_eq!(login(port, "first password"), 200);

    let shown = account(&["show", "dana.test"], "");
    assert_eq!(
        (shown["did"].as_str(), shown["status"].as_str()),
        (Some(DID), Some("active"))
    );
    assert!(!shown.to_string().contains("argon2"));

    account(&["takedown", "dana.test"], "");
    assert_eq!(login(port, "first password"), 401);
    assert_eq!(account(&["show", DID], "")["status"], "takendown");
    account(&["activate", "dana.test"], "");
    assert_eq!(login(port, "first password"), 200);

    account(
        &["set-password", "dana.test", "--password-stdin"],
        "second password\n",
    );
    assert_eq!(login(port, "first password"), 401);
    assert_eq!(login(port, "second password"), 200);

    // Without the admin token: refused, with the cause named.
    let out = datarepo_with(
        Command::new(env!("CARGO_BIN_EXE_datarepo"))
            .args(["--server", &url, "account", "takedown", "dana.test"])
            .env_remove("DATAREPO_TOKEN"),
        "",
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("DATAREPO_TOKEN"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(login(port, "second password"), 200);
}
