//! A known XRPC method asked with the wrong HTTP method answers as every
//! other error does, and as the reference PDS does: 400 `InvalidRequest`,
//! "Incorrect HTTP method", naming the method the endpoint takes. Error
//! messages sent over HTTP give no command-line advice.

use crate::common;

use common::{DID, TestServer};
use serde_json::json;

#[tokio::test]
async fn wrong_http_methods_get_a_json_error() {
    let server = TestServer::memory().await;
    // GET of a procedure.
    let (status, body) = server
        .get("com.atproto.repo.createRecord", &[("repo", DID)])
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "InvalidRequest");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.starts_with("Incorrect HTTP method") && message.contains("POST"),
        "{message}"
    );
    // POST of a query.
    let (status, body) = server
        .post("com.atproto.repo.getRecord", &json!({"repo": DID}))
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "InvalidRequest");
    assert!(body["message"].as_str().unwrap().contains("GET"), "{body}");
}

#[tokio::test]
async fn http_errors_give_no_command_line_advice() {
    let server = TestServer::memory().await;
    let (status, body) = server
        .get(
            "com.atproto.repo.getRecord",
            &[
                ("repo", "did:web:absent.example"),
                ("collection", "a.b.c"),
                ("rkey", "x"),
            ],
        )
        .await;
    assert!(status >= 400, "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(!message.contains("datarepo "), "{message}");
}
