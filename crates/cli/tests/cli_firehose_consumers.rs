//! The firehose read by consumers nobody here wrote: the Python AT Protocol
//! SDK's firehose client (and `datarepo follow`) decode every commit of a
//! `datarepo serve` process, its ops and its CAR blocks, equal to the
//! writes made (creates, updates, deletes, applyWrites batches), in order;
//! after a restart, a cursor resumes exactly after it.

use crate::common;

use std::process::Command;

use common::{http, start_server};
use serde_json::{Value, json};

const DID: &str = "did:plc:firehosetest";
const POST: &str = "app.bsky.feed.post";

/// The Python SDK's decoded commits after `cursor`, `count` of them.
fn python_consumer(port: u16, cursor: u64, count: usize) -> Vec<Value> {
    let out = Command::new(testkit::python_sdk())
        .arg(testkit::python_dir().join("firehose_consumer.py"))
        .arg(format!("ws://127.0.0.1:{port}/xrpc"))
        .arg(cursor.to_string())
        .arg(count.to_string())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// One write through the API; its response.
fn write(port: u16, method: &str, body: &Value) -> Value {
    let (status, out) = http(
        port,
        "POST",
        &format!("/xrpc/com.atproto.repo.{method}"),
        "tok",
        &body.to_string(),
    )
    .unwrap();
    assert_eq!(status, 200, "{method}: {out}");
    serde_json::from_str(&out).unwrap()
}

/// What each commit should carry: (action, path, record or null).
type Expected = Vec<(String, String, Value)>;

fn writes(port: u16, round: usize) -> Vec<(Value, Expected)> {
    let rkey = |i: usize| format!("r{round}-{i}");
    let record =
        |text: &str| json!({"$type": POST, "text": text, "createdAt": "2026-11-25T00:00:00.000Z"});
    let mut made = Vec::new();
    for i in 0..3 {
        let value = record(&format!("post {i}"));
        let out = write(
            port,
            "createRecord",
            &json!({"repo": DID, "collection": POST, "rkey": rkey(i), "record": value}),
        );
        made.push((
            out,
            vec![("create".into(), format!("{POST}/{}", rkey(i)), value)],
        ));
    }
    let edited = record("post 0, edited");
    let out = write(
        port,
        "putRecord",
        &json!({"repo": DID, "collection": POST, "rkey": rkey(0), "record": edited}),
    );
    made.push((
        out,
        vec![("update".into(), format!("{POST}/{}", rkey(0)), edited)],
    ));
    let out = write(
        port,
        "deleteRecord",
        &json!({"repo": DID, "collection": POST, "rkey": rkey(1)}),
    );
    made.push((
        out,
        vec![("delete".into(), format!("{POST}/{}", rkey(1)), Value::Null)],
    ));
    let batch_value = record("from a batch");
    let out = write(
        port,
        "applyWrites",
        &json!({"repo": DID, "writes": [
            {"$type": "com.atproto.repo.applyWrites#create", "collection": POST, "rkey": rkey(7), "value": batch_value},
            {"$type": "com.atproto.repo.applyWrites#delete", "collection": POST, "rkey": rkey(2)},
        ]}),
    );
    made.push((
        out,
        vec![
            ("create".into(), format!("{POST}/{}", rkey(7)), batch_value),
            ("delete".into(), format!("{POST}/{}", rkey(2)), Value::Null),
        ],
    ));
    made
}

/// The consumed commits are the writes made, in order.
fn check(consumed: &[Value], made: &[(Value, Expected)], with_records: bool) {
    assert_eq!(consumed.len(), made.len());
    for (event, (ack, expected)) in consumed.iter().zip(made) {
        assert_eq!(event["repo"], DID);
        assert_eq!(event["commit"], ack["commit"]["cid"], "{event}");
        assert_eq!(event["rev"], ack["commit"]["rev"]);
        let ops = event["ops"].as_array().unwrap();
        assert_eq!(ops.len(), expected.len(), "{event}");
        for (op, (action, path, record)) in ops.iter().zip(expected) {
            assert_eq!(op["action"], action.as_str());
            assert_eq!(op["path"], path.as_str());
            assert_eq!(op["cid"].is_null(), record.is_null());
            if with_records {
                assert_eq!(&op["record"], record, "{event}");
            }
        }
    }
    for pair in consumed.windows(2) {
        assert_eq!(
            pair[1]["seq"].as_u64(),
            Some(pair[0]["seq"].as_u64().unwrap() + 1)
        );
        assert_eq!(pair[1]["since"], pair[0]["rev"]);
    }
}

#[test]
fn the_python_sdk_and_follow_read_every_commit_across_a_restart() {
    let dir = testkit::tempdir("cli-firehose");
    let store = dir.path().join("store");
    let store = store.to_str().unwrap();
    let (mut server, port) = start_server(store, "tok");
    let made = writes(port, 0);
    // The repository's creation by the first write is event 1.
    let python = python_consumer(port, 1, made.len());
    check(&python, &made, true);
    let ours = common::follow(port, 1, made.len());
    check(&ours, &made, false);
    let last = python.last().unwrap()["seq"].as_u64().unwrap();

    // A restart: the sequence goes on, and a cursor resumes after it.
    assert!(server.terminate());
    let (_server, port) = start_server(store, "tok");
    let more = writes(port, 1);
    let resumed = python_consumer(port, last, more.len());
    check(&resumed, &more, true);
    assert_eq!(resumed[0]["seq"].as_u64(), Some(last + 1));
}
