//! Account changes reach the Jetstream-compatible stream as Jetstream
//! shapes them: a new account is an `identity` event (its handle) and an
//! `account` event (active); a takedown, a reactivation and a deactivation
//! by the owner are `account` events with `active` and `status`; each is
//! written in the same write as the change, in order with the commits
//! around it. They pass collection filters and obey DID filters.

use crate::common;

use std::time::Duration;

use common::{
    TOKEN, TestServer,
    sessions::{call, clock, sessions},
};
use futures_util::StreamExt;
use serde_json::{Value, json};
use server::Config;
use store::MemoryKv;
use tokio_tungstenite::tungstenite::Message;

const ALICE: &str = "did:web:alice.example.com";
const BOB: &str = "did:web:bob.example.com";

async fn drain(s: &TestServer, query: &str) -> Vec<Value> {
    let url = format!("ws://{}/subscribe?cursor=0{query}", s.addr());
    let mut socket = tokio_tungstenite::connect_async(url).await.unwrap().0;
    let mut events = Vec::new();
    while let Ok(Some(Ok(message))) =
        tokio::time::timeout(Duration::from_millis(500), socket.next()).await
    {
        if let Message::Text(text) = message {
            events.push(serde_json::from_str(&text).unwrap());
        }
    }
    events
}

/// An event without its times: kind, DID and what it says.
fn shape(e: &Value) -> (String, String, Value) {
    let kind = e["kind"].as_str().unwrap().to_owned();
    let mut body = e[&kind].clone();
    match kind.as_str() {
        "commit" => body = json!(body["collection"]),
        _ => {
            assert!(
                body["time"].as_str().is_some_and(|t| t.ends_with('Z')),
                "{e}"
            );
            body.as_object_mut().unwrap().remove("time");
        }
    }
    (kind, e["did"].as_str().unwrap().to_owned(), body)
}

#[tokio::test]
async fn account_changes_are_stream_events() {
    let config = Config {
        token: Some(TOKEN.into()),
        sessions: Some(sessions(&clock(), 600, Default::default())),
        ..Config::default()
    };
    let s = TestServer::start(MemoryKv::new(), config).await;
    for handle in ["alice.example.com", "bob.example.com"] {
        let (code, out) = call(
            &s,
            "com.atproto.server.createAccount",
            Some(TOKEN),
            Some(json!({"handle": handle, "password": "pw"})),
        )
        .await;
        assert_eq!(code, 200, "{out}");
    }
    let (code, session) = call(
        &s,
        "com.atproto.server.createSession",
        None,
        Some(json!({"identifier": "alice.example.com", "password": "pw"})),
    )
    .await;
    assert_eq!(code, 200, "{session}");
    let access = session["accessJwt"].as_str().unwrap().to_owned();
    let (code, out) = call(
        &s,
        "com.atproto.repo.createRecord",
        Some(&access),
        Some(json!({"repo": ALICE, "collection": "app.bsky.feed.post",
                    "record": {"text": "hi", "createdAt": "2026-11-27T00:00:00Z"}})),
    )
    .await;
    assert_eq!(code, 200, "{out}");
    let takedown = |applied: bool| {
        json!({"subject": {"$type": "com.atproto.admin.defs#repoRef", "did": BOB},
               "takedown": {"applied": applied}})
    };
    for applied in [true, false] {
        let (code, out) = call(
            &s,
            "com.atproto.admin.updateSubjectStatus",
            Some(TOKEN),
            Some(takedown(applied)),
        )
        .await;
        assert_eq!(code, 200, "{out}");
    }
    let (code, out) = call(
        &s,
        "com.atproto.server.deactivateAccount",
        Some(&access),
        Some(json!({})),
    )
    .await;
    assert_eq!(code, 200, "{out}");

    let active = |did: &str| json!({"active": true, "did": did});
    let expected = vec![
        (
            "identity".to_owned(),
            ALICE.to_owned(),
            json!({"did": ALICE, "handle": "alice.example.com"}),
        ),
        ("account".to_owned(), ALICE.to_owned(), active(ALICE)),
        (
            "identity".to_owned(),
            BOB.to_owned(),
            json!({"did": BOB, "handle": "bob.example.com"}),
        ),
        ("account".to_owned(), BOB.to_owned(), active(BOB)),
        (
            "commit".to_owned(),
            ALICE.to_owned(),
            json!("app.bsky.feed.post"),
        ),
        (
            "account".to_owned(),
            BOB.to_owned(),
            json!({"active": false, "did": BOB, "status": "takendown"}),
        ),
        ("account".to_owned(), BOB.to_owned(), active(BOB)),
        (
            "account".to_owned(),
            ALICE.to_owned(),
            json!({"active": false, "did": ALICE, "status": "deactivated"}),
        ),
    ];
    let events = drain(&s, "").await;
    let times: Vec<u64> = events
        .iter()
        .map(|e| e["time_us"].as_u64().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] < w[1]), "{times:?}");
    // Account creation may sign a first commit: only the post's commit is
    // kept of the commits, to compare in order.
    let got: Vec<_> = events
        .iter()
        .map(shape)
        .filter(|(kind, _, body)| kind != "commit" || body == "app.bsky.feed.post")
        .collect();
    assert_eq!(got, expected);

    // A collection filter lets every account event through; a DID filter
    // keeps that account's.
    let filtered: Vec<_> = drain(
        &s,
        "&wantedCollections=app.example.none&wantedDids=did:web:bob.example.com",
    )
    .await
    .iter()
    .map(shape)
    .collect();
    let bobs: Vec<_> = expected
        .iter()
        .filter(|(kind, did, _)| kind != "commit" && did == BOB)
        .cloned()
        .collect();
    assert_eq!(filtered, bobs);
    s.stop().await;
}
