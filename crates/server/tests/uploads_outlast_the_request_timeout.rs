//! An upload's body takes the time it takes: `uploadBlob` of a body that
//! trickles in for longer than the request timeout is stored whole, while
//! another request that takes as long is cut off by the timeout.

use crate::common;

use std::time::Duration;

use common::{TOKEN, TestServer};
use serde_json::json;
use server::{Config, Limits};
use store::MemoryKv;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const DID: &str = "did:web:slow-upload.test";

/// Sends `head` then `chunks` of the body one every 300 ms over a raw
/// connection: the response's status and body.
async fn trickle(addr: &str, head: String, chunks: &[Vec<u8>]) -> (u16, String) {
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    socket.write_all(head.as_bytes()).await.unwrap();
    for chunk in chunks {
        tokio::time::sleep(Duration::from_millis(300)).await;
        if socket.write_all(chunk).await.is_err() {
            break;
        }
    }
    let mut answer = Vec::new();
    let _ = socket.read_to_end(&mut answer).await;
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, text)
}

#[tokio::test]
async fn a_slow_upload_is_not_cut_off_by_the_request_timeout() {
    let config = Config {
        token: Some(TOKEN.into()),
        limits: Limits {
            request_timeout: Duration::from_secs(1),
            ..Limits::default()
        },
        ..Config::default()
    };
    let s = TestServer::start(MemoryKv::new(), config).await;
    let (status, body) = s
        .post(
            "com.atproto.repo.createRecord",
            &json!({"repo": DID, "collection": "app.test.note", "record": {"text": "hi"}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");

    // Ten chunks, 3 s in all: three times the timeout.
    let chunks: Vec<Vec<u8>> = (0..10u8).map(|i| vec![i; 10_000]).collect();
    let whole: Vec<u8> = chunks.concat();
    let head = format!(
        "POST /xrpc/com.atproto.repo.uploadBlob?repo={DID} HTTP/1.1\r\nhost: x\r\n\
         authorization: Bearer {TOKEN}\r\ncontent-type: application/octet-stream\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        whole.len()
    );
    let (status, answer) = trickle(s.addr(), head, &chunks).await;
    assert_eq!(status, 200, "{answer}");
    assert!(
        answer.contains(&store::blob_cid(&whole).to_string()),
        "{answer}"
    );

    // A write whose body trickles as long is cut off by the timeout.
    let record =
        json!({"repo": DID, "collection": "app.test.note", "record": {"text": "x".repeat(9_000)}})
            .to_string()
            .into_bytes();
    let chunks: Vec<Vec<u8>> = record.chunks(1_000).map(<[u8]>::to_vec).collect();
    let head = format!(
        "POST /xrpc/com.atproto.repo.createRecord HTTP/1.1\r\nhost: x\r\n\
         authorization: Bearer {TOKEN}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        record.len()
    );
    let (status, answer) = trickle(s.addr(), head, &chunks).await;
    assert_eq!(status, 503, "{answer}");
    assert!(answer.contains("RequestTimeout"), "{answer}");
    s.stop().await;
}
