//! Closing a server's streams (the first step of its shutdown, before its
//! store closes) stops the firehose and `/subscribe` publishers: they read
//! no more events, so a store closing under them sees no reads to fail.

use crate::common;

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};
use std::time::Duration;

use common::{DID, TestServer};
use futures_util::StreamExt;
use serde_json::json;
use store::{Kv, MemoryKv};

/// The in-memory store, counting reads of event keys (record type `0xE`:
/// firehose and stream events).
#[derive(Clone, Default)]
struct EventReads {
    inner: MemoryKv,
    reads: Arc<AtomicU64>,
}

impl EventReads {
    fn count(&self, key: &[u8]) {
        if key.get(1).is_some_and(|tag| tag >> 4 == 0xE) {
            self.reads.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Kv for EventReads {
    fn blobs(&self) -> store::Blobs {
        self.inner.blobs()
    }

    async fn get(&self, key: &[u8]) -> Result<Option<bytes::Bytes>, store::Error> {
        self.count(key);
        self.inner.get(key).await
    }

    async fn apply(&self, ops: Vec<store::WriteOp>) -> Result<store::Durability, store::Error> {
        self.inner.apply(ops).await
    }

    async fn scan(
        &self,
        range: &keycodec::KeyRange,
        reverse: bool,
        limit: usize,
    ) -> Result<Vec<(bytes::Bytes, bytes::Bytes)>, store::Error> {
        self.count(&range.start);
        self.inner.scan(range, reverse, limit).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publishers_stop_reading_when_the_streams_close() {
    let kv = EventReads::default();
    let repos = Arc::new(repo::Repos::new(
        Arc::new(store::Store::new(kv.clone())),
        common::env(),
    ));
    let server = server::Server::new(repos, common::config());
    let srv = TestServer::start_router(server.router()).await;
    let mut firehose = common::subscribe(srv.addr(), None).await;
    let url = format!("ws://{}/subscribe", srv.addr());
    let mut stream = tokio_tungstenite::connect_async(url).await.unwrap().0;
    let (status, body) = srv
        .post(
            "com.atproto.repo.createRecord",
            &json!({"repo": DID, "collection": "app.test.post", "record": {"text": "hi"}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    // Both publishers are running: each delivered the write.
    assert!(common::next_frame(&mut firehose).await.is_some());
    let event = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("a stream event within 10 s");
    assert!(matches!(event, Some(Ok(_))), "{event:?}");
    // While running, a publisher looks for events at least every 100 ms.
    let before = kv.reads.load(Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        kv.reads.load(Ordering::Relaxed) > before,
        "no publisher polled"
    );

    server.close_streams();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let closed = kv.reads.load(Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        kv.reads.load(Ordering::Relaxed),
        closed,
        "events were read after the streams closed"
    );
    srv.stop().await;
}
