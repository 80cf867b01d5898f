//! `/metrics` is a read: under `private_reads` it needs the token like the
//! others, and without it stays public.

use crate::common;

use common::{TOKEN, TestServer, config};
use server::Config;
use store::MemoryKv;

#[tokio::test]
async fn metrics_need_the_token_under_private_reads() {
    let server = TestServer::start(
        MemoryKv::new(),
        Config {
            private_reads: true,
            ..config()
        },
    )
    .await;
    let url = format!("{}/metrics", server.url);
    let anonymous = server.client.get(&url).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
    let wrong = server
        .client
        .get(&url)
        .bearer_auth("nope")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let authorized = server
        .client
        .get(&url)
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(authorized.status(), 200);
    assert!(authorized.text().await.unwrap().contains("datarepo_"));
}

#[tokio::test]
async fn metrics_are_public_when_reads_are() {
    let server = TestServer::start(MemoryKv::new(), config()).await;
    let response = server
        .client
        .get(format!("{}/metrics", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}
