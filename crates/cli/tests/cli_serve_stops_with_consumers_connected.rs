//! SIGTERM stops a server that has stream consumers connected: each
//! firehose and `/subscribe` connection is closed with code 1001 (going
//! away), the server exits at once instead of waiting for them, and it
//! logs no warning on the way (its stream publishers stop before the store
//! closes under them).

use crate::common;

use std::{process::Stdio, time::Duration};

use futures_util::StreamExt;
use tokio_tungstenite::tungstenite::{Message, protocol::frame::coding::CloseCode};

#[test]
fn sigterm_closes_stream_connections_and_the_server_exits() {
    let tmp = testkit::tempdir("stop-consumers");
    let store = tmp.path().join("data");
    let log = tmp.path().join("serve.log");
    let port = common::free_port();
    let mut server = common::ServerProcess(
        common::serve(store.to_str().unwrap(), port, "stop-token")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    assert!(common::wait_until_up(port), "the server did not start");
    let rt = common::rt();
    let mut sockets = rt.block_on(async {
        let mut sockets = Vec::new();
        for path in [
            "/xrpc/com.atproto.sync.subscribeRepos",
            "/xrpc/com.atproto.sync.subscribeRepos?cursor=0",
            "/subscribe",
            "/subscribe?wantedCollections=app.bsky.feed.post",
        ] {
            let url = format!("ws://127.0.0.1:{port}{path}");
            sockets.push(tokio_tungstenite::connect_async(url).await.unwrap().0);
        }
        sockets
    });
    // Events for the publishers to read, and a memtable for the close to
    // flush.
    for i in 0..50 {
        common::create_record(
            port,
            "stop-token",
            &serde_json::json!({
                "repo": "did:plc:stopping",
                "collection": "app.bsky.feed.post",
                "record": {"text": format!("post {i}"), "createdAt": "2026-11-28T00:00:00Z"},
            }),
        );
    }
    let term = std::process::Command::new("kill")
        .args(["-TERM", &server.0.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let exited = (0..200).find_map(|_| {
        std::thread::sleep(Duration::from_millis(100));
        server.0.try_wait().unwrap()
    });
    let status = exited.expect("the server did not stop within 20 s of SIGTERM");
    assert!(status.success(), "{status}");
    let logged = std::fs::read_to_string(&log).unwrap();
    let warnings: Vec<&str> = logged
        .lines()
        .filter(|l| l.contains(" WARN ") || l.contains(" ERROR "))
        .collect();
    assert!(
        warnings.is_empty(),
        "warnings while stopping:\n{}",
        warnings.join("\n")
    );
    rt.block_on(async {
        for socket in &mut sockets {
            let closed = loop {
                match tokio::time::timeout(Duration::from_secs(10), socket.next()).await {
                    Ok(Some(Ok(Message::Close(frame)))) => break frame,
                    Ok(Some(Ok(_))) => {}
                    other => panic!("no close frame: {other:?}"),
                }
            };
            let frame = closed.expect("a close frame with a code");
            assert_eq!(frame.code, CloseCode::Away);
            assert!(frame.reason.contains("cursor"), "{}", frame.reason);
        }
    });
}
