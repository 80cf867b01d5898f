//! A write is authorized from its headers, and its body's bytes reserved
//! from the server's budget, before a byte of the body is read: a client
//! without the token, or past the budget, is answered at once and never
//! makes the server buffer its body.

use crate::common;

use std::time::Duration;

use common::{TOKEN, TestServer, config};
use server::{Config, Limits};
use store::MemoryKv;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

/// Sends a createRecord request's headers declaring a `len`-byte body, and
/// none of the body.
async fn headers_only(server: &TestServer, token: Option<&str>, len: usize) -> TcpStream {
    let mut stream = TcpStream::connect(server.addr()).await.unwrap();
    let auth = token.map_or(String::new(), |t| format!("authorization: Bearer {t}\r\n"));
    let head = format!(
        "POST /xrpc/com.atproto.repo.createRecord HTTP/1.1\r\nhost: {}\r\n{auth}\
         content-type: application/json\r\ncontent-length: {len}\r\n\r\n",
        server.addr()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream
}

/// The response's status line and body, read until the server closes or
/// the response is complete; panics if none comes within 5 s.
async fn response(stream: &mut TcpStream) -> String {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let read = async {
        loop {
            let n = stream.read(&mut chunk).await.unwrap_or(0);
            buf.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&buf);
            if n == 0 || (text.contains("\r\n\r\n") && text.trim_end().ends_with('}')) {
                break;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(5), read)
        .await
        .expect("the server must answer without waiting for the body");
    String::from_utf8_lossy(&buf).into_owned()
}

#[tokio::test]
async fn a_write_without_the_token_is_refused_before_its_body() {
    let server = TestServer::start(MemoryKv::new(), config()).await;
    for token in [None, Some("wrong-token")] {
        let mut stream = headers_only(&server, token, 4 << 20).await;
        let answer = response(&mut stream).await;
        assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
        assert!(answer.contains("AuthRequired"), "{answer}");
    }
}

#[tokio::test]
async fn a_declared_body_over_the_limit_is_refused_before_it_is_read() {
    let server = TestServer::start(MemoryKv::new(), config()).await;
    let mut stream = headers_only(&server, Some(TOKEN), 5 << 20).await;
    let answer = response(&mut stream).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
}

#[tokio::test]
async fn bodies_past_the_budget_get_503_with_retry_after() {
    let budget = 64 << 10;
    let config = Config {
        limits: Limits {
            max_body_bytes: budget,
            max_inflight_body_bytes: budget,
            ..Limits::default()
        },
        ..config()
    };
    let server = TestServer::start(MemoryKv::new(), config).await;
    // One write whose body is still coming holds most of the budget.
    let body =
        br#"{"repo":"did:web:a.example","collection":"app.bsky.feed.post","record":{"text":"x"}}"#;
    let padded = {
        let mut b = body.to_vec();
        b.resize(budget - 1024, b' ');
        b
    };
    let mut holder = headers_only(&server, Some(TOKEN), padded.len()).await;
    holder.write_all(&padded[..100]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;

    // A second one does not fit: refused at once, its body unread.
    let mut second = headers_only(&server, Some(TOKEN), 2048).await;
    let answer = response(&mut second).await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("retry-after: 1"),
        "{answer}"
    );
    assert!(answer.contains("ServerBusy"), "{answer}");

    // The first completes normally and gives its share back.
    holder.write_all(&padded[100..]).await.unwrap();
    let answer = response(&mut holder).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let (status, _) = server
        .post(
            "com.atproto.repo.createRecord",
            &serde_json::json!({"repo": "did:web:a.example", "collection": "app.bsky.feed.post", "record": {"text": "y"}}),
        )
        .await;
    assert_eq!(status, 200);
}
