//! The frames the firehose keeps in memory for subscribers are bounded by
//! bytes, not only by count: with large commits and a subscriber that
//! stopped reading, the server holds at most `firehose_buffer_bytes` of
//! recent frames (and one frame more), and the subscriber, once it reads
//! again, gets `ConsumerTooSlow` after far fewer than 4,096 events.

use crate::common;

use std::sync::Arc;

use common::{DID, TestServer};
use repo::Frame;
use serde_json::json;
use server::Limits;

const BUFFER: usize = 1 << 20;
/// About 24 MB of frames: more than the buffer and than the kernel's
/// socket buffers on loopback can take from a consumer that reads nothing.
const COMMITS: usize = 240;
const RECORD_BYTES: usize = 100_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_subscriber_costs_at_most_the_buffer() {
    let repos = Arc::new(repo::Repos::new(
        Arc::new(store::Store::new(store::MemoryKv::new())),
        common::env(),
    ));
    let mut config = common::config();
    config.limits = Limits {
        firehose_buffer_bytes: BUFFER,
        ..Limits::default()
    };
    let srv = TestServer::start_repos(Arc::clone(&repos), config).await;
    let (s, _) = srv
        .post(
            "com.atproto.repo.createRecord",
            &json!({"repo": DID, "collection": "app.x.post", "record": {"i": -1}}),
        )
        .await;
    assert_eq!(s, 200);
    let mut stalled = common::subscribe(srv.addr(), None).await;
    let repo = repos.open(DID).await.unwrap();
    let mut most_held = 0.0f64;
    for i in 0..COMMITS {
        // Each record distinct, so no frame is smaller than its record.
        let padding: String = (0..RECORD_BYTES)
            .map(|j| char::from(b'a' + ((i * 31 + j * 7) % 26) as u8))
            .collect();
        repo.apply_writes(
            vec![repo::Write::Create {
                collection: "app.x.post".into(),
                rkey: None,
                value: json!({"i": i, "padding": padding}),
            }],
            None,
        )
        .await
        .unwrap();
        if i % 20 == 19 {
            let held = common::sample(&srv.scrape().await, "datarepo_firehose_buffered_bytes", "")
                .expect("the metric is exported");
            most_held = most_held.max(held);
        }
    }
    // One frame is a record and the shards its commit wrote: under 200 KB.
    assert!(
        most_held <= (BUFFER + 200_000) as f64,
        "the firehose held {most_held} bytes of frames, past its {BUFFER}-byte buffer"
    );
    assert!(most_held > 0.0, "the publisher kept no frame");

    // Reading again: the frames up to where it fell behind, then the error.
    let mut events = 0;
    let error = loop {
        match common::next_frame(&mut stalled).await {
            Some(Frame::Commit(_)) => events += 1,
            Some(Frame::Error { error, .. }) => break error,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(error, "ConsumerTooSlow");
    assert!(events < COMMITS, "{events} events before the error");
}
