//! One address cannot hold every connection: past
//! `max_connections_per_ip` a new connection from it is answered `503
//! TooManyConnections` and closed at once (it holds no slot), and once one
//! of its connections closes it is served again.

use crate::common;

use std::time::Duration;

use common::{TestServer, config};
use server::ConnectionLimits;
use store::MemoryKv;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

#[tokio::test]
async fn past_the_per_ip_limit_connections_are_refused_at_once() {
    let router = server::router(
        std::sync::Arc::new(repo::Repos::new(
            std::sync::Arc::new(store::Store::new(MemoryKv::new())),
            common::env(),
        )),
        config(),
    );
    let server = TestServer::start_router_with(
        router,
        ConnectionLimits {
            max_connections: 16,
            max_connections_per_ip: 3,
            ..ConnectionLimits::default()
        },
    )
    .await;
    // Three idle connections: the address's share.
    let mut idle = Vec::new();
    for _ in 0..3 {
        idle.push(TcpStream::connect(server.addr()).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(100)).await;

    // A fourth is answered and closed without a request being read.
    let mut fourth = TcpStream::connect(server.addr()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), fourth.read_to_end(&mut answer))
        .await
        .expect("closed at once")
        .unwrap();
    let answer = String::from_utf8(answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    let body: serde_json::Value =
        serde_json::from_str(answer.split_once("\r\n\r\n").unwrap().1).unwrap();
    assert_eq!(body["error"], "TooManyConnections");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("--max-connections-per-ip")
    );

    // One idle connection closes: a request is served again.
    let mut closing = idle.pop().unwrap();
    closing.shutdown().await.unwrap();
    drop(closing);
    let mut served = false;
    for _ in 0..50 {
        let response = reqwest::Client::new()
            .get(server.xrpc("_health"))
            .send()
            .await;
        if response.is_ok_and(|r| r.status() == 200) {
            served = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(served, "no request served after a connection closed");
}
