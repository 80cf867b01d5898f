//! The Python AT Protocol SDK (pinned in `tests/python`) logs in to
//! `datarepo serve` with a handle and password, posts into its own
//! repository with `send_post`, reads its session, and is refused writing
//! another account's repository; the post is there, the refused write is
//! not.

use crate::common;

use std::process::Command;

use common::{http, start_server};
use serde_json::{Value, json};

const TOKEN: &str = "sdk-admin-token";

fn create_account(port: u16, handle: &str, password: &str) -> Value {
    let (status, body) = http(
        port,
        "POST",
        "/xrpc/com.atproto.server.createAccount",
        TOKEN,
        &json!({"handle": handle, "password": password}).to_string(),
    )
    .unwrap();
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

#[test]
fn the_python_sdk_logs_in_and_writes_only_its_repository() {
    let dir = testkit::tempdir("cli-python-login");
    let store = dir.path().join("store");
    let (server, port) = start_server(store.to_str().unwrap(), TOKEN);
    let alice = create_account(port, "alice.test", "alice-password");
    let bob = create_account(port, "bob.test", "bob-password");
    // `send_post` asks for validation: the repository needs the post's
    // Lexicon (a minimal one; datarepo ships no app.bsky Lexicons).
    let lexicon = json!({"lexicon": 1, "id": "app.bsky.feed.post", "defs": {"main": {
        "type": "record", "key": "tid", "record": {"type": "object",
        "required": ["text", "createdAt"], "properties": {
            "text": {"type": "string", "maxLength": 3000},
            "createdAt": {"type": "string", "format": "datetime"}}}}}});
    let (status, body) = http(
        port,
        "POST",
        "/xrpc/dev.datarepo.putLexicons",
        TOKEN,
        &json!({"repo": alice["did"], "lexicons": [lexicon]}).to_string(),
    )
    .unwrap();
    assert_eq!(status, 200, "{body}");
    let out = Command::new(testkit::python_sdk())
        .arg(testkit::python_dir().join("login_and_write.py"))
        .arg(format!("http://127.0.0.1:{port}"))
        .args(["alice.test", "alice-password"])
        .arg(bob["did"].as_str().unwrap())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(seen["did"], alice["did"]);
    assert_eq!(seen["handle"], "alice.test");
    assert_eq!(seen["profile"], alice["did"], "login fetched the profile");
    assert!(
        seen["refused"].is_string(),
        "the write into bob's repository was refused: {seen}"
    );
    // The post is in alice's repository; bob's has nothing.
    let uri = seen["uri"].as_str().unwrap();
    let rkey = uri.rsplit('/').next().unwrap();
    let (status, body) = http(
        port,
        "GET",
        &format!(
            "/xrpc/com.atproto.repo.getRecord?repo={}&collection=app.bsky.feed.post&rkey={rkey}",
            alice["did"].as_str().unwrap()
        ),
        "",
        "",
    )
    .unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("hello from the Python SDK"), "{body}");
    let (status, body) = http(
        port,
        "GET",
        &format!(
            "/xrpc/com.atproto.repo.listRecords?repo={}&collection=app.bsky.feed.post",
            bob["did"].as_str().unwrap()
        ),
        "",
        "",
    )
    .unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["records"],
        json!([])
    );
    drop(server);
}
