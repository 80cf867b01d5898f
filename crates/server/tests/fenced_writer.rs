//! A server whose store was opened by another writer (SlateDB then closes
//! the fenced database) answers with `ServiceUnavailable` naming the cause,
//! not an internal error, and loses nothing it acknowledged.

use crate::common;

use common::{DID, TestServer};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fenced_server_refuses_writes_clearly_and_keeps_what_it_acknowledged() {
    let tmp = testkit::tempdir("fenced");
    let kv = common::slate(tmp.path()).await;
    let srv = TestServer::start(kv.clone(), common::config()).await;
    let create = |rkey: &str| json!({"repo": DID, "collection": "app.bsky.feed.post", "rkey": rkey, "record": {}});
    let (s, _) = srv
        .post("com.atproto.repo.createRecord", &create("a"))
        .await;
    assert_eq!(s, 200);

    // Another writer opens the same store: this server is fenced.
    let other = common::slate(tmp.path()).await;
    let (s, err) = srv
        .post("com.atproto.repo.createRecord", &create("b"))
        .await;
    assert_eq!(
        (s, err["error"].as_str()),
        (503, Some("ServiceUnavailable")),
        "{err}"
    );
    assert!(err["message"].as_str().unwrap().contains("fenced"), "{err}");

    let (s, got) = srv
        .get(
            "com.atproto.repo.getRecord",
            &[
                ("repo", DID),
                ("collection", "app.bsky.feed.post"),
                ("rkey", "a"),
            ],
        )
        .await;
    assert_eq!(
        (s, got["error"].as_str()),
        (503, Some("ServiceUnavailable")),
        "{got}"
    );

    // What was acknowledged is there, through the new writer.
    let repos = repo::Repos::new(
        std::sync::Arc::new(store::Store::new(other.clone())),
        common::env(),
    );
    let repo = repos.open(DID).await.unwrap();
    assert!(
        repo.get_record("app.bsky.feed.post", "a")
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        repo.get_record("app.bsky.feed.post", "b")
            .await
            .unwrap()
            .is_none()
    );
    srv.stop().await;
    other.close().await.unwrap();
}
