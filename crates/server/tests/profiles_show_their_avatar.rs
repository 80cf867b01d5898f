//! `app.bsky.actor.getProfile` for a hosted account: its handle, and the
//! display name, description and avatar of its `app.bsky.actor.profile/self`
//! record, the avatar as the `getBlob` URL that serves the uploaded image.

use crate::common;

use common::{
    TOKEN, TestServer,
    sessions::{call, clock, sessions},
};
use serde_json::json;
use server::{AccountPolicy, Config};
use store::MemoryKv;

const PUBLIC_URL: &str = "https://pds.example.com";

#[tokio::test]
async fn a_profile_names_its_avatar_url() {
    let policy = AccountPolicy {
        public_url: Some(PUBLIC_URL.into()),
        ..AccountPolicy::default()
    };
    let config = Config {
        token: Some(TOKEN.into()),
        sessions: Some(sessions(&clock(), 600, policy)),
        ..Config::default()
    };
    let s = TestServer::start(MemoryKv::new(), config).await;
    let (status, alice) = call(
        &s,
        "com.atproto.server.createAccount",
        Some(TOKEN),
        Some(json!({"handle": "alice.example.com", "password": "pw"})),
    )
    .await;
    assert_eq!(status, 200, "{alice}");
    let did = alice["did"].as_str().unwrap().to_owned();
    let access = alice["accessJwt"].as_str().unwrap().to_owned();
    let mut png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    png.extend(0..=255u8);
    let uploaded: serde_json::Value = s
        .client
        .post(format!("{}/xrpc/com.atproto.repo.uploadBlob", s.url))
        .bearer_auth(&access)
        .body(png.clone())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let (status, out) = call(
        &s,
        "com.atproto.repo.putRecord",
        Some(&access),
        Some(
            json!({"repo": did, "collection": "app.bsky.actor.profile", "rkey": "self",
                    "record": {"displayName": "Alice", "description": "hello",
                               "avatar": uploaded["blob"]}}),
        ),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let (status, profile) = s
        .get(
            "app.bsky.actor.getProfile",
            &[("actor", "alice.example.com")],
        )
        .await;
    assert_eq!(status, 200, "{profile}");
    assert_eq!(profile["displayName"], "Alice");
    assert_eq!(profile["description"], "hello");
    let avatar = profile["avatar"].as_str().unwrap();
    let path = avatar.strip_prefix(PUBLIC_URL).unwrap();
    assert!(
        path.starts_with("/xrpc/com.atproto.sync.getBlob?"),
        "{avatar}"
    );
    let served = s
        .client
        .get(format!("{}{path}", s.url))
        .send()
        .await
        .unwrap();
    assert_eq!(served.status(), 200);
    assert_eq!(served.bytes().await.unwrap().as_ref(), &png[..]);
    s.stop().await;
}
