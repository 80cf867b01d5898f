//! A consumer that stops reading never slows writers: once it is more
//! than the buffer behind, it gets `ConsumerTooSlow` and is closed, and it
//! resumes from its cursor without missing an event.

use crate::common;

use std::sync::Arc;

use common::{DID, TestServer};
use repo::Frame;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_consumer_is_cut_off_and_resumes_from_its_cursor() {
    let repos = Arc::new(repo::Repos::new(
        Arc::new(store::Store::new(store::MemoryKv::new())),
        common::env(),
    ));
    let srv = TestServer::start_repos(Arc::clone(&repos), common::config()).await;
    let (s, _) = srv
        .post(
            "com.atproto.repo.createRecord",
            &json!({"repo": DID, "collection": "app.x.post", "record": {"i": -1}}),
        )
        .await;
    assert_eq!(s, 200);
    // Connected and following live (it receives the next commit), then
    // never read while the writes go on.
    let mut stalled = common::subscribe(srv.addr(), None).await;
    let (s, _) = srv
        .post(
            "com.atproto.repo.createRecord",
            &json!({"repo": DID, "collection": "app.x.post", "record": {"i": 0}}),
        )
        .await;
    assert_eq!(s, 200);
    let Some(Frame::Commit(first)) = common::next_frame(&mut stalled).await else {
        panic!("no first frame");
    };
    assert_eq!(first.seq, 3);
    let repo = repos.open(DID).await.unwrap();
    let writes = 12_000;
    for i in 0..writes {
        repo.apply_writes(
            vec![repo::Write::Create {
                collection: "app.x.post".into(),
                rkey: None,
                value: json!({"i": i, "padding": "x".repeat(200)}),
            }],
            None,
        )
        .await
        .unwrap();
    }
    // The creation, two writes through the API, the rest.
    let total = 3 + writes;
    let mut last = first.seq;

    // Reading now: commits up to where it was cut off, then the error.
    let error = loop {
        match common::next_frame(&mut stalled).await {
            Some(Frame::Commit(event)) => {
                assert_eq!(event.seq, last + 1);
                last = event.seq;
            }
            Some(Frame::Error { error, message }) => break (error, message),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(error.0, "ConsumerTooSlow");
    assert!(error.1.unwrap().contains(&format!("cursor={last}")));
    assert!(last < total);

    // Resumed from its cursor: every later event, in order.
    let mut resumed = common::subscribe(srv.addr(), Some(last)).await;
    while last < total {
        match common::next_frame(&mut resumed).await {
            Some(Frame::Commit(event)) => {
                assert_eq!(event.seq, last + 1);
                last = event.seq;
            }
            other => panic!("{other:?}"),
        }
    }
}
