//! A second `datarepo serve` on a store whose server holds the port fails
//! to start and leaves the running server writing: it must not open the
//! store (which would fence the running writer) before it can listen.

use crate::common;

const TOKEN: &str = "port-taken-token";
const DID: &str = "did:web:example.com";
const POST: &str = "app.bsky.feed.post";

fn create(port: u16, rkey: &str) -> Option<u16> {
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
    .map(|(status, _)| status)
}

#[test]
fn a_second_server_that_cannot_listen_leaves_the_first_writing() {
    let tmp = testkit::tempdir("serve-port-taken");
    let store = tmp.path().join("data");
    let store = store.to_str().unwrap();
    let (mut first, port) = common::start_server(store, TOKEN);
    assert_eq!(create(port, "before"), Some(200));

    let second = common::serve(store, port, TOKEN).output().unwrap();
    assert!(!second.status.success());
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(stderr.contains("cannot listen"), "{stderr}");

    // The first server still writes, and stops cleanly on SIGTERM.
    assert_eq!(create(port, "after"), Some(200));
    assert!(first.terminate(), "the first server did not stop cleanly");

    let out = common::datarepo(&["--store", store, "--repo", DID, "ls", POST, "--json"], "");
    assert!(out.status.success(), "{out:?}");
    let page = &common::json_lines(&out)[0];
    let rkeys: Vec<&str> = page["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap().rsplit('/').next().unwrap())
        .collect();
    assert_eq!(rkeys, ["after", "before"]);
}
