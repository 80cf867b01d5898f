//! `applyWrites` with no writes changes nothing and makes no commit (the
//! head stays, the log does not grow); its `swapCommit` is still checked.

use crate::common;

use common::{DID, TestServer};
use serde_json::json;

#[tokio::test]
async fn no_writes_no_commit() {
    let server = TestServer::memory().await;
    let (status, created) = server
        .post(
            "com.atproto.repo.createRecord",
            &json!({"repo": DID, "collection": "app.bsky.feed.post", "record": {"text": "x"}}),
        )
        .await;
    assert_eq!(status, 200);
    let head = created["commit"]["cid"].as_str().unwrap().to_owned();

    let (status, body) = server
        .post(
            "com.atproto.repo.applyWrites",
            &json!({"repo": DID, "writes": []}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, json!({"results": []}));
    let (_, latest) = server
        .get("com.atproto.sync.getLatestCommit", &[("did", DID)])
        .await;
    assert_eq!(
        latest["cid"],
        head.as_str(),
        "an empty applyWrites made a commit"
    );

    let (status, body) = server
        .post(
            "com.atproto.repo.applyWrites",
            &json!({"repo": DID, "writes": [], "swapCommit": head}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let stale = "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm";
    let (status, body) = server
        .post(
            "com.atproto.repo.applyWrites",
            &json!({"repo": DID, "writes": [], "swapCommit": stale}),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"], "InvalidSwap");

    let (status, body) = server
        .post(
            "com.atproto.repo.applyWrites",
            &json!({"repo": "did:web:nobody.example", "writes": []}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "RepoNotFound");
}
