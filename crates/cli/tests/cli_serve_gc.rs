//! `datarepo serve --gc-interval-secs N --gc-keep-last K` collects garbage
//! while it serves: after the writes and a collection, the CLI's own `gc`
//! with the same retention finds nothing left to delete, and every record
//! reads back. The flags refuse what cannot work.

use crate::common;

use std::{process::Stdio, time::Duration};

const TOKEN: &str = "serve-gc-token";
const DID: &str = "did:web:example.com";
const POST: &str = "app.bsky.feed.post";

/// The value of the `skipped` sample of `datarepo_gc_runs_total`.
fn collections_skipped(port: u16) -> f64 {
    let (status, text) = common::http(port, "GET", "/metrics", TOKEN, "").unwrap();
    assert_eq!(status, 200);
    text.lines()
        .find_map(|l| l.strip_prefix(r#"datarepo_gc_runs_total{outcome="skipped"} "#))
        .unwrap_or_else(|| panic!("no gc runs in\n{text}"))
        .parse()
        .unwrap()
}

#[test]
fn a_serving_store_collects_its_garbage() {
    let tmp = testkit::tempdir("serve-gc");
    let store = tmp.path().join("data");
    let store = store.to_str().unwrap();
    let port = common::free_port();
    let mut server = common::ServerProcess(
        common::serve(store, port, TOKEN)
            .args(["--gc-interval-secs", "1", "--gc-keep-last", "1"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert!(common::wait_until_up(port), "the server did not start");

    // Each rewrite leaves the previous version of the record and its shards
    // reachable only from older commits.
    for round in 0..10 {
        for rkey in ["a", "b", "c"] {
            let body = serde_json::json!({
                "repo": DID, "collection": POST, "rkey": rkey,
                "record": {"text": format!("{rkey} {round}")}
            });
            let (status, reply) = common::http(
                port,
                "POST",
                "/xrpc/com.atproto.repo.putRecord",
                TOKEN,
                &body.to_string(),
            )
            .unwrap();
            assert_eq!(status, 200, "{reply}");
        }
    }
    // A collection is skipped only when no commit landed since the last
    // successful one started: that one saw every write.
    let after_writes = collections_skipped(port);
    let collected = (0..300).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        collections_skipped(port) > after_writes
    });
    assert!(collected, "no collection within 30 s");
    assert!(server.terminate(), "the server did not stop cleanly");

    let gc = common::datarepo(&["--store", store, "gc", "--keep-last", "1", "--json"], "");
    assert!(gc.status.success(), "{gc:?}");
    let report = &common::json_lines(&gc)[0];
    assert_eq!(report["deleted"], 0, "{report}");
    assert!(report["reachable"].as_u64().unwrap() > 0, "{report}");

    // The log holds the one commit kept, and it reads.
    let log = common::datarepo(&["--store", store, "--repo", DID, "log", "--json"], "");
    assert!(log.status.success(), "{log:?}");
    let commits = &common::json_lines(&log)[0]["commits"];
    assert_eq!(commits.as_array().unwrap().len(), 1, "{commits}");

    for rkey in ["a", "b", "c"] {
        let out = common::datarepo(
            &["--store", store, "--repo", DID, "get", POST, rkey, "--json"],
            "",
        );
        assert!(out.status.success(), "{out:?}");
        assert_eq!(
            common::json_lines(&out)[0]["value"]["text"],
            format!("{rkey} 9")
        );
    }
}

#[test]
fn gc_flags_refuse_what_cannot_work() {
    let tmp = testkit::tempdir("serve-gc-flags");
    let store = tmp.path().join("data");
    let store = store.to_str().unwrap();
    for (args, says) in [
        (&["--replica", "--gc-interval-secs", "5"][..], "--replica"),
        (&["--gc-keep-last", "3"][..], "--gc-interval-secs"),
        (&["--gc-interval-secs", "0"][..], "0"),
    ] {
        let out = common::serve(store, common::free_port(), TOKEN)
            .args(args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} was accepted");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}
