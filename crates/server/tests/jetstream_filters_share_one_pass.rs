//! `/subscribe` connections with the same filters share one filtering
//! pass over the stream, and each still receives every event its filters
//! let through exactly once, in commit order: connections join while
//! records are written (each from cursor 0: the store first, then the
//! stream in memory, then the shared pass), the stream's memory is small
//! enough that events leave it while they join, and two different filters
//! run side by side. Checked against the writes made.

use crate::common;

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use common::TestServer;
use futures_util::StreamExt;
use serde_json::{Value, json};
use store::MemoryKv;
use tokio_tungstenite::tungstenite::Message;

const ALICE: &str = "did:web:alice.test";
const BOB: &str = "did:web:bob.test";
const POST: &str = "app.bsky.feed.post";
const RARE: &str = "app.example.rare";

/// A record written: its DID, collection and CID.
type Written = (String, String, String);

async fn create(s: &TestServer, did: &str, collection: &str, i: usize) -> Written {
    let record = json!({"$type": collection, "text": format!("record {i}")});
    let (status, out) = s
        .post(
            "com.atproto.repo.createRecord",
            &json!({"repo": did, "collection": collection, "record": record}),
        )
        .await;
    assert_eq!(status, 200, "{out}");
    (
        did.to_owned(),
        collection.to_owned(),
        out["cid"].as_str().unwrap().to_owned(),
    )
}

/// A connection reading into `events` until the test ends.
fn follow(addr: &str, query: &str, events: Arc<Mutex<Vec<Value>>>) -> tokio::task::JoinHandle<()> {
    let url = format!("ws://{addr}/subscribe?{query}");
    tokio::spawn(async move {
        let mut socket = tokio_tungstenite::connect_async(url).await.unwrap().0;
        while let Some(Ok(message)) = socket.next().await {
            if let Message::Text(text) = message {
                events
                    .lock()
                    .unwrap()
                    .push(serde_json::from_str(&text).unwrap());
            }
        }
    })
}

fn seen(event: &Value) -> Written {
    let commit = &event["commit"];
    (
        event["did"].as_str().unwrap().to_owned(),
        commit["collection"].as_str().unwrap().to_owned(),
        commit["cid"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_sharing_filters_get_each_event_once() {
    let mut config = common::config();
    // About 30 events: they leave memory while connections join.
    config.limits.firehose_buffer_bytes = 16 * 1024;
    let s = TestServer::start(MemoryKv::new(), config).await;
    let filters = [
        format!("cursor=0&wantedCollections={RARE}"),
        format!("cursor=0&wantedCollections={POST}&wantedDids={ALICE}"),
    ];
    let wanted = [
        |w: &Written| w.1 == RARE,
        |w: &Written| w.1 == POST && w.0 == ALICE,
    ];
    let mut written = Vec::new();
    let mut connections = Vec::new();
    for i in 0..400 {
        let did = if i % 2 == 0 { ALICE } else { BOB };
        let collection = if i % 5 == 0 { RARE } else { POST };
        written.push(create(&s, did, collection, i).await);
        // Three connections per filter, joining at different points.
        if i % 60 == 30 {
            let which = connections.len() % 2;
            let events = Arc::new(Mutex::new(Vec::new()));
            let task = follow(s.addr(), &filters[which], Arc::clone(&events));
            connections.push((which, events, task));
        }
    }
    assert_eq!(connections.len(), 7);
    for (which, events, _) in &connections {
        let expected: Vec<Written> = written
            .iter()
            .filter(|w| wanted[*which](w))
            .cloned()
            .collect();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while events.lock().unwrap().len() < expected.len() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "filter {which}: {} of {} events",
                events.lock().unwrap().len(),
                expected.len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Nothing more comes.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let events = events.lock().unwrap();
        let got: Vec<Written> = events.iter().map(seen).collect();
        assert_eq!(got, expected, "filter {which}");
        let times: Vec<u64> = events
            .iter()
            .map(|e| e["time_us"].as_u64().unwrap())
            .collect();
        assert!(times.windows(2).all(|w| w[0] < w[1]), "times increase");
    }
    for (_, _, task) in connections {
        task.abort();
    }
}
