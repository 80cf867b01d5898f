//! `GET /subscribe`, the Jetstream-compatible stream: every record
//! operation as one JSON text frame in commit order (creates and updates
//! with the record and CID, deletes without), checked against the writes
//! made; a cursor replays what came after it, from the store and then
//! live; `wantedCollections` (NSIDs and `prefix.*`), `wantedDids` and
//! `maxMessageSizeBytes` filter on the server; an `options_update` replaces
//! the filters mid-stream; `requireHello` waits for one; bad parameters
//! are refused before the upgrade, and a bad message closes the stream
//! with its reason.

use crate::common;

use std::time::Duration;

use common::TestServer;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

const ALICE: &str = "did:web:alice.test";
const BOB: &str = "did:web:bob.test";

type Socket = common::Socket;

async fn connect(s: &TestServer, query: &str) -> Socket {
    let url = format!("ws://{}/subscribe{query}", s.addr());
    tokio_tungstenite::connect_async(url).await.unwrap().0
}

/// The next event (failing after 10 s), or `None` once the stream closed
/// (with its close reason, when it gave one).
async fn next(socket: &mut Socket) -> Result<Value, Option<String>> {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(10), socket.next())
            .await
            .expect("an event within 10 s");
        match message {
            Some(Ok(Message::Text(text))) => return Ok(serde_json::from_str(&text).unwrap()),
            Some(Ok(Message::Close(frame))) => return Err(frame.map(|f| f.reason.to_string())),
            None | Some(Err(_)) => return Err(None),
            Some(Ok(_)) => {}
        }
    }
}

/// Nothing arrives within half a second.
async fn quiet(socket: &mut Socket) {
    if let Ok(Some(Ok(Message::Text(text)))) =
        tokio::time::timeout(Duration::from_millis(500), socket.next()).await
    {
        panic!("unexpected event {text}");
    }
}

/// A write made, as the event it must become (without its time).
#[derive(Debug, Clone)]
struct Made {
    did: &'static str,
    operation: &'static str,
    collection: &'static str,
    rkey: String,
    record: Option<Value>,
    cid: Option<String>,
    rev: String,
}

impl Made {
    fn check(&self, event: &Value) {
        assert_eq!(event["did"], self.did, "{event}");
        assert_eq!(event["kind"], "commit", "{event}");
        let c = &event["commit"];
        assert_eq!(c["operation"], self.operation, "{event}");
        assert_eq!(c["collection"], self.collection, "{event}");
        assert_eq!(c["rkey"], self.rkey.as_str(), "{event}");
        assert_eq!(c["rev"], self.rev.as_str(), "{event}");
        assert_eq!(c.get("record"), self.record.as_ref(), "{event}");
        assert_eq!(
            c.get("cid").and_then(Value::as_str),
            self.cid.as_deref(),
            "{event}"
        );
    }
}

async fn create(s: &TestServer, did: &'static str, collection: &'static str, text: &str) -> Made {
    let record = json!({"$type": collection, "text": text});
    let (status, out) = s
        .post(
            "com.atproto.repo.createRecord",
            &json!({"repo": did, "collection": collection, "record": record}),
        )
        .await;
    assert_eq!(status, 200, "{out}");
    let uri = out["uri"].as_str().unwrap();
    Made {
        did,
        operation: "create",
        collection,
        rkey: uri.rsplit('/').next().unwrap().to_owned(),
        record: Some(record),
        cid: Some(out["cid"].as_str().unwrap().to_owned()),
        rev: out["commit"]["rev"].as_str().unwrap().to_owned(),
    }
}

#[tokio::test]
async fn the_stream_follows_the_writes_with_filters_and_cursors() {
    let s = TestServer::memory().await;
    let mut made = vec![
        create(&s, ALICE, "app.bsky.feed.post", "one").await,
        create(&s, BOB, "app.bsky.feed.like", "two").await,
    ];
    // A batch: an update and a delete in one commit.
    let target = made[0].clone();
    let edited = json!({"$type": "app.bsky.feed.post", "text": "one, edited"});
    let (status, out) = s
        .post(
            "com.atproto.repo.applyWrites",
            &json!({"repo": ALICE, "writes": [
                {"$type": "com.atproto.repo.applyWrites#update", "collection": "app.bsky.feed.post",
                 "rkey": target.rkey, "value": edited},
                {"$type": "com.atproto.repo.applyWrites#create", "collection": "app.example.note",
                 "rkey": "n1", "value": {"$type": "app.example.note", "text": "three"}},
            ]}),
        )
        .await;
    assert_eq!(status, 200, "{out}");
    let rev = out["commit"]["rev"].as_str().unwrap().to_owned();
    made.push(Made {
        operation: "update",
        record: Some(edited),
        cid: Some(out["results"][0]["cid"].as_str().unwrap().to_owned()),
        rev: rev.clone(),
        ..target.clone()
    });
    made.push(Made {
        did: ALICE,
        operation: "create",
        collection: "app.example.note",
        rkey: "n1".into(),
        record: Some(json!({"$type": "app.example.note", "text": "three"})),
        cid: Some(out["results"][1]["cid"].as_str().unwrap().to_owned()),
        rev,
    });
    let (status, out) = s
        .post(
            "com.atproto.repo.deleteRecord",
            &json!({"repo": BOB, "collection": "app.bsky.feed.like", "rkey": made[1].rkey}),
        )
        .await;
    assert_eq!(status, 200, "{out}");
    made.push(Made {
        operation: "delete",
        record: None,
        cid: None,
        rev: out["commit"]["rev"].as_str().unwrap().to_owned(),
        ..made[1].clone()
    });

    // From the start: every event, in order, times increasing.
    let mut all = connect(&s, "?cursor=0").await;
    let mut times = Vec::new();
    for m in &made {
        let event = next(&mut all).await.unwrap();
        m.check(&event);
        times.push(event["time_us"].as_u64().unwrap());
    }
    assert!(times.windows(2).all(|w| w[0] < w[1]), "{times:?}");
    // Live: a write made now arrives on the open connection.
    let live = create(&s, BOB, "app.bsky.feed.post", "four").await;
    live.check(&next(&mut all).await.unwrap());
    made.push(live);

    // From a cursor: what came after it.
    let mut after = connect(&s, &format!("?cursor={}", times[2])).await;
    for m in &made[3..] {
        m.check(&next(&mut after).await.unwrap());
    }
    // Without a cursor: from now on.
    let mut now = connect(&s, "").await;
    quiet(&mut now).await;

    // Filters: a collection, a prefix, a DID, a size.
    let mut posts = connect(&s, "?cursor=0&wantedCollections=app.bsky.feed.post").await;
    for m in made.iter().filter(|m| m.collection == "app.bsky.feed.post") {
        m.check(&next(&mut posts).await.unwrap());
    }
    quiet(&mut posts).await;
    let mut bsky = connect(
        &s,
        "?cursor=0&wantedCollections=app.bsky.*&wantedDids=did:web:bob.test",
    )
    .await;
    for m in made
        .iter()
        .filter(|m| m.collection.starts_with("app.bsky.") && m.did == BOB)
    {
        m.check(&next(&mut bsky).await.unwrap());
    }
    quiet(&mut bsky).await;
    let mut small = connect(&s, "?cursor=0&maxMessageSizeBytes=200").await;
    let deleted = made.iter().find(|m| m.operation == "delete").unwrap();
    deleted.check(&next(&mut small).await.unwrap());
    quiet(&mut small).await;

    // An options_update replaces the filters mid-stream.
    posts
        .send(Message::text(
            json!({"type": "options_update", "payload": {"wantedCollections": ["app.example.note"]}})
                .to_string(),
        ))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    create(&s, ALICE, "app.bsky.feed.post", "five").await;
    let note = create(&s, ALICE, "app.example.note", "six").await;
    note.check(&next(&mut posts).await.unwrap());

    // requireHello: nothing until the first options_update.
    let mut hello = connect(&s, "?cursor=0&requireHello=true").await;
    quiet(&mut hello).await;
    hello
        .send(Message::text(
            json!({"type": "options_update", "payload": {"wantedDids": [ALICE]}}).to_string(),
        ))
        .await
        .unwrap();
    made[0].check(&next(&mut hello).await.unwrap());

    // A message that is not an options_update ends the stream, saying why.
    hello.send(Message::text("hello?")).await.unwrap();
    loop {
        match next(&mut hello).await {
            Ok(_) => {}
            Err(reason) => {
                assert!(reason.unwrap_or_default().contains("options_update"));
                break;
            }
        }
    }

    // Bad parameters are refused before the upgrade, as XRPC errors.
    for (query, words) in [
        ("?wantedCollections=not%20an%20nsid", "wantedCollections"),
        ("?wantedDids=alice", "not a DID"),
        ("?cursor=yesterday", "cursor"),
        ("?compress=maybe", "compress"),
    ] {
        let (status, body) = s.get_path(&format!("/subscribe{query}")).await;
        assert_eq!(status, 400, "{query}: {body}");
        assert!(
            body["message"].as_str().unwrap().contains(words),
            "{query}: {body}"
        );
    }
    for socket in [all, after, now, posts, bsky, small] {
        drop(socket);
    }
    s.stop().await;
}

#[tokio::test]
async fn a_cursor_resumes_after_a_restart() {
    let dir = testkit::tempdir("stream-restart");
    let kv = common::slate(dir.path()).await;
    let s = TestServer::start(kv, common::config()).await;
    let first = create(&s, ALICE, "app.bsky.feed.post", "before").await;
    let mut socket = connect(&s, "?cursor=0").await;
    let event = next(&mut socket).await.unwrap();
    first.check(&event);
    let cursor = event["time_us"].as_u64().unwrap();
    drop(socket);
    s.stop().await;
    drop(s);

    let kv = common::slate(dir.path()).await;
    let s = TestServer::start(kv, common::config()).await;
    let second = create(&s, ALICE, "app.bsky.feed.post", "after").await;
    let mut socket = connect(&s, &format!("?cursor={cursor}")).await;
    let event = next(&mut socket).await.unwrap();
    second.check(&event);
    assert!(event["time_us"].as_u64().unwrap() > cursor);
    drop(socket);
    s.stop().await;
}

/// `@skyware/jetstream` (pinned in `tests/oracles`), a client written for
/// Bluesky's Jetstream, connects with `wantedCollections`, `wantedDids`
/// and a cursor and decodes the events the writes made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jetstream_client_reads_the_stream() {
    let s = TestServer::memory().await;
    let mut made = Vec::new();
    for i in 0..6 {
        let (did, collection) = match i % 3 {
            0 => (ALICE, "app.bsky.feed.post"),
            1 => (BOB, "app.bsky.feed.post"),
            _ => (ALICE, "app.bsky.feed.like"),
        };
        made.push(create(&s, did, collection, &format!("event {i}")).await);
    }
    let wanted: Vec<&Made> = made
        .iter()
        .filter(|m| m.collection == "app.bsky.feed.post" && m.did == ALICE)
        .collect();
    let input = json!({"endpoint": format!("ws://{}/subscribe", s.addr()),
                       "wantedCollections": ["app.bsky.feed.post"], "wantedDids": [ALICE],
                       "cursor": 1, "count": wanted.len()})
    .to_string();
    let lines =
        tokio::task::spawn_blocking(move || testkit::run_node("jetstream-client.mjs", &input))
            .await
            .unwrap();
    assert_eq!(lines.len(), wanted.len());
    for (line, m) in lines.iter().zip(wanted) {
        m.check(&serde_json::from_str(line).unwrap());
    }
    s.stop().await;
}

/// The compressed mode, read by Python's `websockets` and `zstandard`
/// (pinned in `tests/python`) with the dictionary the server serves:
/// each binary message is one zstd frame naming it, and decompresses to
/// the event the plain mode sends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compressed_events_decompress_with_the_served_dictionary() {
    let s = TestServer::memory().await;
    let mut made = Vec::new();
    for i in 0..4 {
        let collection = if i % 2 == 0 {
            "app.bsky.feed.post"
        } else {
            "app.bsky.feed.like"
        };
        made.push(create(&s, ALICE, collection, &format!("compressed {i}")).await);
    }
    let wanted: Vec<Made> = made
        .iter()
        .filter(|m| m.collection == "app.bsky.feed.post")
        .cloned()
        .collect();
    let (url, count) = (s.url.clone(), wanted.len());
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(testkit::python_sdk())
            .arg(testkit::python_dir().join("jetstream_compressed.py"))
            .args([url, count.to_string(), "app.bsky.feed.post".to_owned()])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), wanted.len());
    // The same events as the plain mode sends.
    let mut plain = connect(&s, "?cursor=1&wantedCollections=app.bsky.feed.post").await;
    for (event, m) in lines.iter().zip(&wanted) {
        m.check(event);
        assert_eq!(&next(&mut plain).await.unwrap(), event);
    }
    drop(plain);
    s.stop().await;
}
