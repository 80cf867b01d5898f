//! Accounts and sessions: an account logs in, writes its own repository
//! and only it, refreshes an expired session, and logs out; the admin
//! token still writes anywhere. Every refusal writes nothing.

use crate::common;

use std::sync::atomic::Ordering;

use common::{
    TOKEN, TestServer,
    sessions::{call, clock, sessions},
};
use serde_json::{Value, json};
use server::Config;
use store::MemoryKv;

const ALICE: &str = "did:web:alice.example.com";
const BOB: &str = "did:web:bob.example.com";
const ACCESS_TTL: u64 = 60;

async fn records(s: &TestServer, repo: &str) -> usize {
    let (status, out) = call(
        s,
        &format!("com.atproto.repo.listRecords?repo={repo}&collection=app.bsky.feed.post"),
        None,
        None,
    )
    .await;
    assert_eq!(status, 200, "{out}");
    out["records"].as_array().unwrap().len()
}

fn post(repo: &str, text: &str) -> Value {
    json!({"repo": repo, "collection": "app.bsky.feed.post",
           "record": {"$type": "app.bsky.feed.post", "text": text, "createdAt": "2026-11-27T00:00:00Z"}})
}

#[tokio::test]
async fn an_account_writes_its_own_repository_only() {
    let clock = clock();
    let config = Config {
        token: Some(TOKEN.into()),
        sessions: Some(sessions(&clock, ACCESS_TTL, Default::default())),
        ..Config::default()
    };
    let s = TestServer::start(MemoryKv::new(), config).await;

    // Accounts are made with the admin token (this server takes no one
    // without an invite code).
    let alice = json!({"handle": "alice.example.com", "password": "alice-pw"});
    let (status, out) = call(
        &s,
        "com.atproto.server.createAccount",
        None,
        Some(alice.clone()),
    )
    .await;
    assert_eq!(
        (status, out["error"].as_str()),
        (400, Some("InvalidInviteCode")),
        "{out}"
    );
    let (status, out) = call(
        &s,
        "com.atproto.server.createAccount",
        Some("not-the-token"),
        Some(alice.clone()),
    )
    .await;
    assert_eq!(status, 401, "{out}");
    let (status, out) = call(
        &s,
        "com.atproto.server.createAccount",
        Some(TOKEN),
        Some(alice),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["did"], ALICE);
    let (status, out) = call(
        &s,
        "com.atproto.server.createAccount",
        Some(TOKEN),
        Some(json!({"handle": "bob.example.com", "password": "bob-pw"})),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let (status, out) = call(
        &s,
        "com.atproto.server.createAccount",
        Some(TOKEN),
        Some(json!({"handle": "ALICE.example.com", "password": "x"})),
    )
    .await;
    assert_eq!(
        (status, out["error"].as_str()),
        (400, Some("HandleNotAvailable")),
        "{out}"
    );

    // A wrong password and an unknown account get the same answer.
    for (identifier, password) in [
        ("alice.example.com", "wrong"),
        ("carol.example.com", "alice-pw"),
    ] {
        let (status, out) = call(
            &s,
            "com.atproto.server.createSession",
            None,
            Some(json!({"identifier": identifier, "password": password})),
        )
        .await;
        assert_eq!(status, 401, "{out}");
        assert_eq!(out["error"], "AuthenticationRequired");
        assert_eq!(out["message"], "Invalid identifier or password");
    }
    let (status, session) = call(
        &s,
        "com.atproto.server.createSession",
        None,
        Some(json!({"identifier": "Alice.Example.com", "password": "alice-pw"})),
    )
    .await;
    assert_eq!(status, 200, "{session}");
    assert_eq!(
        (session["did"].as_str(), session["active"].as_bool()),
        (Some(ALICE), Some(true))
    );
    let access = session["accessJwt"].as_str().unwrap().to_owned();
    let refresh = session["refreshJwt"].as_str().unwrap().to_owned();
    let (status, me) = call(&s, "com.atproto.server.getSession", Some(&access), None).await;
    assert_eq!(
        (status, me["handle"].as_str()),
        (200, Some("alice.example.com")),
        "{me}"
    );

    // Her own repository: yes. Bob's: no, and nothing is written there.
    let (status, out) = call(
        &s,
        "com.atproto.repo.createRecord",
        Some(&access),
        Some(post(ALICE, "mine")),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let (status, out) = call(
        &s,
        "com.atproto.repo.createRecord",
        Some(&access),
        Some(post(BOB, "not mine")),
    )
    .await;
    assert_eq!(
        (status, out["error"].as_str()),
        (401, Some("AuthRequired")),
        "{out}"
    );
    let (status, out) = call(
        &s,
        "com.atproto.repo.applyWrites",
        Some(&access),
        Some(json!({"repo": BOB, "writes": [{"$type": "com.atproto.repo.applyWrites#create",
                    "collection": "app.bsky.feed.post", "value": {"text": "x", "createdAt": "2026-11-27T00:00:00Z"}}]})),
    )
    .await;
    assert_eq!(status, 401, "{out}");
    // A token tampered with, or of no kind this server issued: refused.
    let mut tampered = access.clone().into_bytes();
    let i = tampered.len() - 5;
    tampered[i] = if tampered[i] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    let (status, out) = call(
        &s,
        "com.atproto.repo.createRecord",
        Some(&tampered),
        Some(post(ALICE, "forged")),
    )
    .await;
    assert!(status == 400 || status == 401, "{status} {out}");
    let (status, out) = call(
        &s,
        "com.atproto.repo.createRecord",
        Some(&refresh),
        Some(post(ALICE, "refresh token")),
    )
    .await;
    assert!(status == 400 || status == 401, "{status} {out}");
    assert_eq!(records(&s, ALICE).await, 1);
    assert_eq!(records(&s, BOB).await, 0);

    // Expired: 400 ExpiredToken (what the SDKs refresh on); the refresh
    // token gives a new pair that writes again.
    clock.fetch_add(ACCESS_TTL, Ordering::Relaxed);
    let (status, out) = call(
        &s,
        "com.atproto.repo.createRecord",
        Some(&access),
        Some(post(ALICE, "late")),
    )
    .await;
    assert_eq!(
        (status, out["error"].as_str()),
        (400, Some("ExpiredToken")),
        "{out}"
    );
    let (status, renewed) = call(
        &s,
        "com.atproto.server.refreshSession",
        Some(&refresh),
        Some(json!({})),
    )
    .await;
    assert_eq!(status, 200, "{renewed}");
    let access2 = renewed["accessJwt"].as_str().unwrap().to_owned();
    let refresh2 = renewed["refreshJwt"].as_str().unwrap().to_owned();
    let (status, out) = call(
        &s,
        "com.atproto.repo.createRecord",
        Some(&access2),
        Some(post(ALICE, "again")),
    )
    .await;
    assert_eq!(status, 200, "{out}");

    // Logging out ends the session: its refresh token no longer works.
    let (status, out) = call(
        &s,
        "com.atproto.server.deleteSession",
        Some(&refresh2),
        Some(json!({})),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let (status, out) = call(
        &s,
        "com.atproto.server.refreshSession",
        Some(&refresh2),
        Some(json!({})),
    )
    .await;
    assert_eq!(
        (status, out["error"].as_str()),
        (400, Some("ExpiredToken")),
        "{out}"
    );

    // The admin token still writes any repository.
    let (status, out) = call(
        &s,
        "com.atproto.repo.createRecord",
        Some(TOKEN),
        Some(post(BOB, "by the admin")),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(records(&s, ALICE).await, 2);
    assert_eq!(records(&s, BOB).await, 1);

    let (status, out) = call(&s, "com.atproto.server.describeServer", None, None).await;
    assert_eq!(
        (status, out["did"].as_str()),
        (200, Some("did:web:server.example")),
        "{out}"
    );
    s.stop().await;
}
