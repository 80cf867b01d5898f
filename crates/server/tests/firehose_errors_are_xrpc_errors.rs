//! `subscribeRepos` answers its errors as XRPC does: a request that is not
//! a WebSocket upgrade, or whose parameters do not parse, gets the JSON
//! error body every endpoint answers (not axum's plain text); a cursor
//! ahead of the stream gets an error frame on the socket.

use crate::common;

use common::TestServer;
use repo::Frame;

#[tokio::test]
async fn errors_are_json_before_the_upgrade_and_frames_after() {
    let server = TestServer::memory().await;
    for query in [vec![], vec![("cursor", "soon")]] {
        let (status, body) = server
            .get_bytes("com.atproto.sync.subscribeRepos", &query)
            .await;
        assert_eq!(status, 400, "{}", String::from_utf8_lossy(&body));
        let body: serde_json::Value = serde_json::from_slice(&body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&body)));
        assert_eq!(body["error"], "InvalidRequest", "{body}");
        assert!(body["message"].as_str().is_some_and(|m| !m.is_empty()));
    }
    let (status, body) = server
        .get_bytes("com.atproto.sync.subscribeRepos", &[])
        .await;
    assert_eq!(status, 400);
    let message = serde_json::from_slice::<serde_json::Value>(&body).unwrap()["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(message.contains("WebSocket"), "{message}");

    let mut ahead = common::subscribe(server.addr(), Some(1_000)).await;
    match common::next_frame(&mut ahead).await {
        Some(Frame::Error { error, .. }) => assert_eq!(error, "FutureCursor"),
        other => panic!("{other:?}"),
    }
}
