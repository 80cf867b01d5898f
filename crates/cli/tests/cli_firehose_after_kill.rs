//! kill -9 of `datarepo serve` during a write load: after a restart, a
//! consumer that resumes from its last cursor sees every acknowledged
//! commit exactly once, in sequence, with no gap.

use crate::common;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use common::{http, start_server};
use serde_json::{Value, json};

const DID: &str = "did:plc:killed";

#[test]
fn every_acknowledged_commit_is_delivered_once_after_kill_9() {
    let dir = testkit::tempdir("cli-firehose-kill");
    let store = dir.path().join("store");
    let store = store.to_str().unwrap().to_owned();
    let (mut server, port) = start_server(&store, "tok");
    let acked = Arc::new(Mutex::new(Vec::<String>::new()));
    let writer = {
        let acked = Arc::clone(&acked);
        std::thread::spawn(move || {
            for i in 0.. {
                let body = json!({"repo": DID, "collection": "app.x.post", "record": {"i": i}});
                match http(
                    port,
                    "POST",
                    "/xrpc/com.atproto.repo.createRecord",
                    "tok",
                    &body.to_string(),
                ) {
                    Some((200, out)) => {
                        let out: Value = serde_json::from_str(&out).unwrap();
                        let cid = out["commit"]["cid"].as_str().unwrap().to_owned();
                        acked.lock().unwrap().push(cid);
                    }
                    _ => return,
                }
            }
        })
    };
    // A consumer follows the first events before the crash.
    while acked.lock().unwrap().len() < 20 {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let before = common::follow(port, 0, 10);
    let cursor = before.last().unwrap()["seq"].as_u64().unwrap();
    while acked.lock().unwrap().len() < 200 {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    server.0.kill().unwrap();
    server.0.wait().unwrap();
    writer.join().unwrap();
    let acked = acked.lock().unwrap().clone();

    let (_server, port) = start_server(&store, "tok");
    // Every commit in the log has an event: the consumer reads that many.
    let log = common::datarepo(
        &[
            "--store", &store, "--repo", DID, "log", "--limit", "1000000", "--json",
        ],
        "",
    );
    assert!(log.status.success(), "{log:?}");
    let commits = common::json_lines(&log)[0]["commits"]
        .as_array()
        .unwrap()
        .len();
    let after = common::follow(port, cursor, commits - usize::try_from(cursor).unwrap());
    let events: Vec<&Value> = before.iter().chain(&after).collect();
    for (i, event) in events.iter().enumerate() {
        assert_eq!(event["seq"].as_u64(), Some(i as u64 + 1), "{event}");
    }
    let mut delivered: HashMap<&str, usize> = HashMap::new();
    for event in &events {
        *delivered
            .entry(event["commit"].as_str().unwrap())
            .or_default() += 1;
    }
    for cid in &acked {
        assert_eq!(
            delivered.get(cid.as_str()),
            Some(&1),
            "acknowledged commit {cid}"
        );
    }
}
