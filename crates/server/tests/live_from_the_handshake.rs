//! A subscriber without a cursor follows from "now", and now is when its
//! request came, not whenever the server's task for it gets to reading the
//! store: a commit made as soon as the WebSocket handshake completes is
//! always sent, on the firehose and on the Jetstream-compatible stream,
//! even when reading the store is slow (a loaded machine).

use crate::common;

use std::sync::{Arc, atomic::Ordering};

use common::{DID, SlowKv, TestServer};
use futures_util::StreamExt;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_right_after_the_handshake_is_sent() {
    let kv = SlowKv::new(std::time::Duration::from_millis(400), false);
    let slow = Arc::clone(&kv.slow);
    let srv = TestServer::start(kv, common::config()).await;
    let create = |i: i64| json!({"repo": DID, "collection": "app.x.post", "record": {"i": i}});
    let (s, _) = srv.post("com.atproto.repo.createRecord", &create(0)).await;
    assert_eq!(s, 200);

    // Scans (which reading the newest event is) now take 400 ms.
    slow.store(true, Ordering::Relaxed);
    let mut firehose = common::subscribe(srv.addr(), None).await;
    let (mut stream, _) =
        tokio_tungstenite::connect_async(format!("ws://{}/subscribe", srv.addr()))
            .await
            .unwrap();
    let (s, out) = srv.post("com.atproto.repo.createRecord", &create(1)).await;
    assert_eq!(s, 200, "{out}");
    let rkey = out["uri"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();

    let frame = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        common::next_frame(&mut firehose),
    )
    .await
    .expect("the firehose sends the commit made after its handshake");
    let Some(repo::Frame::Commit(event)) = frame else {
        panic!("{frame:?}");
    };
    assert!(
        event.ops.iter().any(|op| op.path.ends_with(&rkey)),
        "{event:?}"
    );

    let message = tokio::time::timeout(std::time::Duration::from_secs(20), stream.next())
        .await
        .expect("the stream sends the commit made after its handshake")
        .unwrap()
        .unwrap();
    let event: serde_json::Value = serde_json::from_str(message.to_text().unwrap()).unwrap();
    assert_eq!(event["commit"]["rkey"], rkey.as_str(), "{event}");
}
