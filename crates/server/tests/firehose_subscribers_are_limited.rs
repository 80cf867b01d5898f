//! Firehose subscribers count: past `max_subscribers` a subscription is
//! refused with `503 TooManySubscribers` (and accepted again once one
//! leaves), and each subscriber holds one of the connections
//! `max_connections` allows for as long as its socket is open, so that
//! WebSockets cannot take every file descriptor while the limit looks
//! unreached. Past `max_subscribers_per_ip` from one address (firehose and
//! `/subscribe` stream counted together) a subscription is refused with
//! `429 TooManySubscribers`, until one leaves.

use crate::common;

use std::{sync::Arc, time::Duration};

use common::{TestServer, config};
use futures_util::SinkExt;
use server::{ConnectionLimits, Limits};
use store::MemoryKv;
use tokio_tungstenite::tungstenite::{self, Message};

async fn server(max_connections: usize, max_subscribers: usize) -> TestServer {
    server_per_ip(max_connections, max_subscribers, usize::MAX).await
}

async fn server_per_ip(
    max_connections: usize,
    max_subscribers: usize,
    max_subscribers_per_ip: usize,
) -> TestServer {
    let mut config = config();
    config.limits = Limits {
        max_subscribers,
        max_subscribers_per_ip,
        ..Limits::default()
    };
    let router = server::router(
        Arc::new(repo::Repos::new(
            Arc::new(store::Store::new(MemoryKv::new())),
            common::env(),
        )),
        config,
    );
    TestServer::start_router_with(
        router,
        ConnectionLimits {
            max_connections,
            ..ConnectionLimits::default()
        },
    )
    .await
}

fn url(server: &TestServer) -> String {
    format!(
        "ws://{}/xrpc/com.atproto.sync.subscribeRepos",
        server.addr()
    )
}

#[tokio::test]
async fn past_max_subscribers_a_subscription_is_refused_until_one_leaves() {
    let server = server(16, 2).await;
    let mut first = common::subscribe(server.addr(), None).await;
    let _second = common::subscribe(server.addr(), None).await;
    let refused = tokio_tungstenite::connect_async(url(&server)).await;
    let Err(tungstenite::Error::Http(response)) = refused else {
        panic!("a third subscriber was accepted: {refused:?}");
    };
    assert_eq!(response.status(), 503);
    let body: serde_json::Value =
        serde_json::from_slice(response.body().as_deref().unwrap_or_default()).unwrap();
    assert_eq!(body["error"], "TooManySubscribers", "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("--max-subscribers"),
        "{body}"
    );
    assert!(
        common::sample(&server.scrape().await, "datarepo_firehose_subscribers", "") == Some(2.0)
    );

    first.send(Message::Close(None)).await.unwrap();
    drop(first);
    // The slot is free once the server has seen the close.
    let mut accepted = None;
    for _ in 0..50 {
        if let Ok((socket, _)) = tokio_tungstenite::connect_async(url(&server)).await {
            accepted = Some(socket);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(accepted.is_some(), "no subscriber accepted after one left");
}

#[tokio::test]
async fn a_subscriber_holds_its_connection_until_it_closes() {
    // Two connections: one subscriber, then one request at a time.
    let server = server(2, 1).await;
    let mut subscriber = common::subscribe(server.addr(), None).await;
    let health = || async {
        reqwest::Client::new()
            .get(server.xrpc("_health"))
            .send()
            .await
            .map(|r| r.status().as_u16())
    };
    assert_eq!(health().await.unwrap(), 200);
    // A second connection held open (idle): both slots are taken, so a
    // third waits, though only one plain HTTP connection is open.
    let _held = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let waiting = tokio::time::timeout(Duration::from_secs(1), health()).await;
    assert!(
        waiting.is_err(),
        "a connection was served past max_connections: {waiting:?}"
    );
    // The subscriber leaves: its slot serves the waiting request.
    subscriber.send(Message::Close(None)).await.unwrap();
    drop(subscriber);
    let served = tokio::time::timeout(Duration::from_secs(5), health()).await;
    assert_eq!(
        served.expect("served once the subscriber left").unwrap(),
        200
    );
}

#[tokio::test]
async fn past_max_subscribers_per_ip_one_address_is_refused_until_one_leaves() {
    let server = server_per_ip(16, 8, 2).await;
    let stream_url = format!("ws://{}/subscribe", server.addr());
    let mut firehose = common::subscribe(server.addr(), None).await;
    let stream = tokio_tungstenite::connect_async(&stream_url).await.unwrap();
    for refused in [
        tokio_tungstenite::connect_async(url(&server)).await,
        tokio_tungstenite::connect_async(&stream_url).await,
    ] {
        let Err(tungstenite::Error::Http(response)) = refused else {
            panic!("a third subscriber from one address was accepted: {refused:?}");
        };
        assert_eq!(response.status(), 429);
        let body: serde_json::Value =
            serde_json::from_slice(response.body().as_deref().unwrap_or_default()).unwrap();
        assert_eq!(body["error"], "TooManySubscribers", "{body}");
        assert!(
            body["message"]
                .as_str()
                .unwrap()
                .contains("--max-subscribers-per-ip"),
            "{body}"
        );
    }
    firehose.send(Message::Close(None)).await.unwrap();
    drop(firehose);
    let mut accepted = None;
    for _ in 0..50 {
        if let Ok((socket, _)) = tokio_tungstenite::connect_async(&stream_url).await {
            accepted = Some(socket);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(accepted.is_some(), "the address's slot was never freed");
    // Sockets close before the server stops (it waits for them).
    drop((accepted, stream));
    server.stop().await;
}
