//! describeRepo lists the collections that hold records, as the reference
//! does: one whose records were all deleted is no longer listed.

use crate::common;

use common::{DID, TestServer};
use serde_json::json;

#[tokio::test]
async fn emptied_collections_leave_describe_repo() {
    let srv = TestServer::memory().await;
    for (collection, rkey) in [
        ("app.bsky.feed.post", "p"),
        ("app.bsky.feed.like", "l1"),
        ("app.bsky.feed.like", "l2"),
    ] {
        let (s, body) = srv
            .post(
                "com.atproto.repo.createRecord",
                &json!({"repo": DID, "collection": collection, "rkey": rkey, "record": {"n": 1}}),
            )
            .await;
        assert_eq!(s, 200, "{body}");
    }
    let (_, d) = srv
        .get("com.atproto.repo.describeRepo", &[("repo", DID)])
        .await;
    assert_eq!(
        d["collections"],
        json!(["app.bsky.feed.like", "app.bsky.feed.post"])
    );
    for rkey in ["l1", "l2"] {
        let (s, _) = srv
            .post(
                "com.atproto.repo.deleteRecord",
                &json!({"repo": DID, "collection": "app.bsky.feed.like", "rkey": rkey}),
            )
            .await;
        assert_eq!(s, 200);
    }
    let (_, d) = srv
        .get("com.atproto.repo.describeRepo", &[("repo", DID)])
        .await;
    assert_eq!(d["collections"], json!(["app.bsky.feed.post"]));
    srv.stop().await;
}
