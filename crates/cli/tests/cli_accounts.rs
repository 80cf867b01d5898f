//! `datarepo account …` on the store: accounts made, listed and changed
//! from the command line are the ones `datarepo serve` logs in and
//! authorizes (a deactivated account logs in but cannot write; a new
//! password replaces the old).

use crate::common;

use common::{datarepo, http, json_lines, start_server};
use serde_json::{Value, json};

const TOKEN: &str = "account-admin-token";
const DID: &str = "did:web:alice.test";

fn login(port: u16, password: &str) -> (u16, Value) {
    let (status, body) = http(
        port,
        "POST",
        "/xrpc/com.atproto.server.createSession",
        "",
        &json!({"identifier": "alice.test", "password": password}).to_string(),
    )
    .unwrap();
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

fn post(port: u16, access: &str) -> (u16, Value) {
    let (status, body) = http(
        port,
        "POST",
        "/xrpc/com.atproto.repo.createRecord",
        access,
        &json!({"repo": DID, "collection": "app.bsky.feed.post",
                "record": {"text": "hi", "createdAt": "2026-11-27T00:00:00Z"}})
        .to_string(),
    )
    .unwrap();
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

#[test]
fn accounts_made_on_the_command_line_log_in_to_the_server() {
    let dir = testkit::tempdir("cli-accounts");
    let store = dir.path().join("store");
    let store = store.to_str().unwrap();
    let account = |args: &[&str], stdin: &str| {
        let mut all = vec!["--store", store, "--json", "account"];
        all.extend_from_slice(args);
        datarepo(&all, stdin)
    };

    let made = account(
        &["create", "--handle", "Alice.test", "--password-stdin"],
        "first pw\n",
    );
    assert!(made.status.success(), "{made:?}");
    let made = &json_lines(&made)[0];
    assert_eq!(
        (made["did"].as_str(), made["handle"].as_str()),
        (Some(DID), Some("alice.test"))
    );
    assert!(
        !made.to_string().contains("argon2"),
        "no password hash printed: {made}"
    );
    let again = account(
        &["create", "--handle", "ALICE.TEST", "--password-stdin"],
        "x\n",
    );
    assert_eq!(again.status.code(), Some(1), "{again:?}");
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("HandleNotAvailable"),
        "{again:?}"
    );
    let listed = account(&["list"], "");
    assert_eq!(
        json_lines(&listed)[0]["accounts"].as_array().unwrap().len(),
        1
    );
    let shown = account(&["show", DID], "");
    assert_eq!(json_lines(&shown)[0]["status"], "active");

    // The server logs the account in; its session writes its repository.
    let (server, port) = start_server(store, TOKEN);
    let (status, session) = login(port, "first pw");
    assert_eq!(status, 200, "{session}");
    let (status, out) = post(port, session["accessJwt"].as_str().unwrap());
    assert_eq!(status, 200, "{out}");
    drop(server);

    // Deactivated: still logs in, cannot write.
    assert!(account(&["deactivate", "alice.test"], "").status.success());
    let pw_file = dir.path().join("pw");
    std::fs::write(&pw_file, "second pw\n").unwrap();
    let set = account(
        &[
            "set-password",
            "alice.test",
            "--password-file",
            pw_file.to_str().unwrap(),
        ],
        "",
    );
    assert!(set.status.success(), "{set:?}");
    let (server, port) = start_server(store, TOKEN);
    assert_eq!(
        login(port, "first pw").0,
        401,
        "the old password no longer works"
    );
    let (status, session) = login(port, "second pw");
    assert_eq!(
        (status, session["active"].as_bool()),
        (200, Some(false)),
        "{session}"
    );
    let (status, out) = post(port, session["accessJwt"].as_str().unwrap());
    assert_eq!(
        (status, out["error"].as_str()),
        (401, Some("AccountDeactivated")),
        "{out}"
    );
    drop(server);

    // Deleted: its handle is free again; its repository stays.
    assert!(
        account(&["delete", "alice.test", "--keep-repository"], "")
            .status
            .success()
    );
    assert_eq!(
        json_lines(&account(&["list"], ""))[0]["accounts"],
        json!([])
    );
    let repos = datarepo(&["--store", store, "--json", "repo", "list"], "");
    assert!(
        String::from_utf8_lossy(&repos.stdout).contains(DID),
        "{repos:?}"
    );

    // Deleting an account asks what becomes of its repository; with
    // --delete-repository it goes too.
    let made = account(
        &["create", "--handle", "bob.test", "--password-stdin"],
        "bob pw\n",
    );
    assert!(made.status.success(), "{made:?}");
    let undecided = account(&["delete", "bob.test"], "");
    assert!(!undecided.status.success());
    assert!(
        String::from_utf8_lossy(&undecided.stderr).contains("--keep-repository"),
        "{undecided:?}"
    );
    let gone = account(&["delete", "bob.test", "--delete-repository"], "");
    assert!(gone.status.success(), "{gone:?}");
    assert_eq!(json_lines(&gone)[0]["repository"], "deleted");
    let repos = datarepo(&["--store", store, "--json", "repo", "list"], "");
    let listed = String::from_utf8_lossy(&repos.stdout);
    assert!(
        !listed.contains("did:web:bob.test") && listed.contains(DID),
        "{listed}"
    );
    // A repository alone: `repo delete` needs --yes.
    let unconfirmed = datarepo(&["--store", store, "repo", "delete", DID], "");
    assert!(!unconfirmed.status.success());
    let deleted = datarepo(
        &["--store", store, "--json", "repo", "delete", DID, "--yes"],
        "",
    );
    assert!(deleted.status.success(), "{deleted:?}");
    let repos = datarepo(&["--store", store, "--json", "repo", "list"], "");
    assert_eq!(json_lines(&repos)[0]["repos"], json!([]));
}
