//! App passwords over HTTP: made by a full session, shown once, logging
//! in to sessions that write records but cannot manage the account (nor
//! after a refresh), and ending those sessions when revoked.

use crate::common;

use common::{
    TOKEN, TestServer,
    sessions::{call, clock, sessions},
};
use serde_json::{Value, json};
use server::Config;
use store::MemoryKv;

const ALICE: &str = "did:web:alice.example.com";

fn token(v: &Value, name: &str) -> String {
    v[name].as_str().unwrap().to_owned()
}

async fn login(s: &TestServer, password: &str) -> (u16, Value) {
    call(
        s,
        "com.atproto.server.createSession",
        None,
        Some(json!({"identifier": "alice.example.com", "password": password})),
    )
    .await
}

#[tokio::test]
async fn an_app_password_writes_records_but_manages_nothing() {
    let config = Config {
        token: Some(TOKEN.into()),
        sessions: Some(sessions(&clock(), 60, Default::default())),
        ..Config::default()
    };
    let s = TestServer::start(MemoryKv::new(), config).await;
    let (status, out) = call(
        &s,
        "com.atproto.server.createAccount",
        Some(TOKEN),
        Some(json!({"handle": "alice.example.com", "password": "alice-pw"})),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let (_, full) = login(&s, "alice-pw").await;
    let full = token(&full, "accessJwt");

    let (status, made) = call(
        &s,
        "com.atproto.server.createAppPassword",
        Some(&full),
        Some(json!({"name": "my bot"})),
    )
    .await;
    assert_eq!(status, 200, "{made}");
    assert_eq!(made["name"], "my bot");
    let app_password = token(&made, "password");
    assert!(
        accounts::app_passwords::looks_like_app_password(&app_password),
        "{app_password}"
    );
    let (status, out) = call(
        &s,
        "com.atproto.server.createAppPassword",
        Some(&full),
        Some(json!({"name": "my bot"})),
    )
    .await;
    assert_eq!(status, 400, "a name is used once: {out}");

    let (status, app_session) = login(&s, &app_password).await;
    assert_eq!(status, 200, "{app_session}");
    assert_eq!(app_session["did"], ALICE);
    let app_access = token(&app_session, "accessJwt");
    let app_refresh = token(&app_session, "refreshJwt");
    let (status, out) = call(
        &s,
        "com.atproto.repo.createRecord",
        Some(&app_access),
        Some(json!({"repo": ALICE, "collection": "app.bsky.feed.post",
                    "record": {"text": "from the bot", "createdAt": "2026-11-27T00:00:00Z"}})),
    )
    .await;
    assert_eq!(status, 200, "{out}");

    // Managing the account: refused to the app password's session, before
    // and after a refresh; the full session lists names, never passwords.
    let (status, renewed) = call(
        &s,
        "com.atproto.server.refreshSession",
        Some(&app_refresh),
        Some(json!({})),
    )
    .await;
    assert_eq!(status, 200, "{renewed}");
    for access in [&app_access, &token(&renewed, "accessJwt")] {
        for (method, body) in [
            (
                "com.atproto.server.createAppPassword",
                Some(json!({"name": "x"})),
            ),
            ("com.atproto.server.listAppPasswords", None),
            (
                "com.atproto.server.revokeAppPassword",
                Some(json!({"name": "my bot"})),
            ),
        ] {
            let (status, out) = call(&s, method, Some(access), body).await;
            assert_eq!(
                (status, out["error"].as_str()),
                (400, Some("InvalidToken")),
                "{method}: {out}"
            );
        }
    }
    let (status, listed) = call(&s, "com.atproto.server.listAppPasswords", Some(&full), None).await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["passwords"][0]["name"], "my bot");
    assert!(!listed.to_string().contains(&app_password));

    // Revoked: the app password logs in no more, its sessions end.
    let (status, out) = call(
        &s,
        "com.atproto.server.revokeAppPassword",
        Some(&full),
        Some(json!({"name": "my bot"})),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let (status, _) = login(&s, &app_password).await;
    assert_eq!(status, 401);
    let (status, out) = call(
        &s,
        "com.atproto.server.refreshSession",
        Some(&token(&renewed, "refreshJwt")),
        Some(json!({})),
    )
    .await;
    assert_eq!(
        (status, out["error"].as_str()),
        (400, Some("ExpiredToken")),
        "{out}"
    );
    // The account's own password still works.
    assert_eq!(login(&s, "alice-pw").await.0, 200);
    s.stop().await;
}
