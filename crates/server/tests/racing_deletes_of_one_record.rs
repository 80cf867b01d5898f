//! Deletes of the same record racing each other: one commits, every other
//! gets the documented answer for an absent record, `{}` (200), never
//! `RecordNotFound`.

use crate::common;

use common::{DID, TestServer};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_deletes_all_succeed_and_one_commits() {
    let server = std::sync::Arc::new(TestServer::memory().await);
    const RECORDS: usize = 40;
    const RACERS: usize = 8;
    for i in 0..RECORDS {
        let (status, _) = server
            .post(
                "com.atproto.repo.createRecord",
                &json!({"repo": DID, "collection": "app.bsky.feed.post", "rkey": format!("r{i}"), "record": {"text": "x"}}),
            )
            .await;
        assert_eq!(status, 200);
    }
    for i in 0..RECORDS {
        let racers: Vec<_> = (0..RACERS)
            .map(|_| {
                let server = std::sync::Arc::clone(&server);
                tokio::spawn(async move {
                    server
                        .post(
                            "com.atproto.repo.deleteRecord",
                            &json!({"repo": DID, "collection": "app.bsky.feed.post", "rkey": format!("r{i}")}),
                        )
                        .await
                })
            })
            .collect();
        let mut commits = 0;
        for racer in racers {
            let (status, body) = racer.await.unwrap();
            assert_eq!(status, 200, "record r{i}: {body}");
            if body.get("commit").is_some() {
                commits += 1;
            } else {
                assert_eq!(body, json!({}), "record r{i}");
            }
        }
        assert_eq!(commits, 1, "record r{i}: one delete commits");
    }
    let (status, body) = server
        .get(
            "com.atproto.repo.listRecords",
            &[("repo", DID), ("collection", "app.bsky.feed.post")],
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(body["records"].as_array().unwrap().len(), 0);
}
