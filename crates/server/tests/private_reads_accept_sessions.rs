//! With `--private-reads`, an account's valid session reads as the admin
//! token does; no token, or a foreign one, reads nothing.

use crate::common;

use std::sync::Arc;

use common::{TOKEN, TestServer};
use serde_json::{Value, json};
use server::{Config, Sessions};
use store::MemoryKv;

#[tokio::test]
async fn a_session_reads_a_private_server() {
    let sessions = Sessions {
        tokens: accounts::tokens::Tokens::new(&[3; 32], "did:web:server.example"),
        clock: Arc::new(|| 1_790_000_000),
        random: Arc::new(|bytes: &mut [u8; 32]| bytes.fill(5)),
        policy: Default::default(),
    };
    let config = Config {
        token: Some(TOKEN.into()),
        private_reads: true,
        sessions: Some(sessions),
        ..Config::default()
    };
    let s = TestServer::start(MemoryKv::new(), config).await;
    let created: Value = s
        .client
        .post(format!("{}/xrpc/com.atproto.server.createAccount", s.url))
        .bearer_auth(TOKEN)
        .json(&json!({"handle": "alice.example.com", "password": "pw"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let access = created["accessJwt"].as_str().unwrap().to_owned();
    let list = format!(
        "{}/xrpc/com.atproto.repo.listRecords?repo=did:web:alice.example.com&collection=app.bsky.feed.post",
        s.url
    );
    let foreign = accounts::tokens::Tokens::new(&[4; 32], "did:web:server.example")
        .issue(
            "did:web:alice.example.com",
            accounts::tokens::ACCESS_SCOPE,
            "j",
            1_790_000_000,
        )
        .unwrap()
        .access;
    for (bearer, expected) in [
        (Some(access.as_str()), 200),
        (Some(TOKEN), 200),
        (None, 401),
        (Some(foreign.as_str()), 400),
    ] {
        let mut req = s.client.get(&list);
        if let Some(t) = bearer {
            req = req.bearer_auth(t);
        }
        let status = req.send().await.unwrap().status().as_u16();
        assert_eq!(status, expected, "{bearer:?}");
    }
    s.stop().await;
}
