//! A store opened without stream events (`serve --stream off`): writes
//! and account changes succeed and store no stream event, and
//! `/subscribe` answers `501 StreamOff` saying how the server was started.

use crate::common;

use std::sync::Arc;

use common::{
    TOKEN, TestServer,
    sessions::{call, clock, sessions},
};
use repo::Repos;
use serde_json::json;
use server::Config;
use store::{MemoryKv, Store};

#[tokio::test]
async fn writes_keep_no_stream_events() {
    let store = Arc::new(Store::new(MemoryKv::new()).without_stream_events());
    let repos = Arc::new(Repos::new(Arc::clone(&store), common::env()));
    let config = Config {
        token: Some(TOKEN.into()),
        sessions: Some(sessions(&clock(), 600, Default::default())),
        ..Config::default()
    };
    let s = TestServer::start_repos(repos, config).await;
    let (code, out) = call(
        &s,
        "com.atproto.server.createAccount",
        Some(TOKEN),
        Some(json!({"handle": "alice.example.com", "password": "pw"})),
    )
    .await;
    assert_eq!(code, 200, "{out}");
    let (status, out) = s
        .post(
            "com.atproto.repo.createRecord",
            &json!({"repo": "did:web:alice.example.com", "collection": "app.bsky.feed.post",
                    "record": {"text": "hi", "createdAt": "2026-11-27T00:00:00Z"}}),
        )
        .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(store.newest_stream_time().await.unwrap(), None);
    // The firehose still has the commit.
    assert!(store.newest_event().await.unwrap().is_some());

    let (status, body) = s.get_path("/subscribe").await;
    assert_eq!(status, 501, "{body}");
    assert_eq!(body["error"], "StreamOff", "{body}");
    assert!(body["message"].as_str().unwrap().contains("--stream off"));
    s.stop().await;
}
