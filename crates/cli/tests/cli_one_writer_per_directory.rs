//! A local store has one writing datarepo process at a time: while a server
//! writes it, writing commands and a second server fail at once with an
//! error that says why, and the server keeps writing (they would otherwise
//! fence it). The lock goes with the process, even one killed with SIGKILL.

use crate::common;

use std::process::Stdio;

const TOKEN: &str = "one-writer-token";
const DID: &str = "did:web:example.com";
const POST: &str = "app.bsky.feed.post";

fn create(port: u16, rkey: &str) -> u16 {
    let body = serde_json::json!({
        "repo": DID, "collection": POST, "rkey": rkey, "record": {"text": rkey}
    });
    common::http(
        port,
        "POST",
        "/xrpc/com.atproto.repo.createRecord",
        TOKEN,
        &body.to_string(),
    )
    .unwrap()
    .0
}

fn put(store: &str, rkey: &str) -> std::process::Output {
    common::datarepo(
        &["--store", store, "--repo", DID, "put", POST, rkey],
        r#"{"text": "from the CLI"}"#,
    )
}

/// A second server on another port; killed, and its output returned, if it
/// is still running after about 30 s (it would then be serving).
fn second_server(store: &str) -> std::process::Output {
    let mut child = common::serve(store, common::free_port(), TOKEN)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    for _ in 0..1500 {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.kill();
    child.wait_with_output().unwrap()
}

#[test]
fn writers_wait_their_turn_and_the_server_keeps_writing() {
    let tmp = testkit::tempdir("one-writer");
    let store = tmp.path().join("data");
    let store = store.to_str().unwrap();
    let (mut server, port) = common::start_server(store, TOKEN);
    assert_eq!(create(port, "before"), 200);

    let refused = [
        put(store, "cli"),
        common::datarepo(&["--store", store, "gc"], ""),
        second_server(store),
    ];
    for out in refused {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains("being written by another datarepo process"),
            "{stderr}"
        );
    }
    assert_eq!(create(port, "after"), 200, "the server was fenced");

    // Killed without a chance to clean up, the server leaves no stale lock.
    server.0.kill().unwrap();
    server.0.wait().unwrap();
    let out = put(store, "cli");
    assert!(out.status.success(), "{out:?}");
    let rkeys = common::listed_rkeys(store, DID, POST);
    assert_eq!(rkeys, ["after", "before", "cli"]);
}
