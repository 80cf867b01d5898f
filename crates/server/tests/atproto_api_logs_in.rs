//! `@atproto/api` (the pinned oracle version) logs in with a handle and
//! password, writes its own repository (refreshing an expired access token
//! by itself), is refused another account's, resumes its session, and
//! logs out.

use crate::common;

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use common::{TOKEN, TestServer};
use serde_json::{Value, json};
use server::{Config, Sessions};
use store::MemoryKv;

#[tokio::test(flavor = "multi_thread")]
async fn the_official_client_logs_in_and_writes_its_own_repository() {
    // Each reading of the clock is one second later, and an access token
    // lives 8: the client's tokens expire within its run.
    let now = Arc::new(AtomicU64::new(1_790_000_000));
    let counter = Arc::new(AtomicU64::new(1));
    let sessions = Sessions {
        tokens: accounts::tokens::Tokens::new(&[9; 32], "did:web:server.example")
            .with_access_ttl(std::time::Duration::from_secs(8)),
        clock: Arc::new(move || now.fetch_add(1, Ordering::Relaxed)),
        random: Arc::new(move |bytes: &mut [u8; 32]| {
            bytes.fill(0);
            bytes[..8].copy_from_slice(&counter.fetch_add(1, Ordering::Relaxed).to_be_bytes());
        }),
        policy: Default::default(),
    };
    let config = Config {
        token: Some(TOKEN.into()),
        sessions: Some(sessions),
        ..Config::default()
    };
    let s = TestServer::start(MemoryKv::new(), config).await;
    let mut dids = Vec::new();
    for handle in ["alice.example.com", "bob.example.com"] {
        let out: Value = s
            .client
            .post(format!("{}/xrpc/com.atproto.server.createAccount", s.url))
            .bearer_auth(TOKEN)
            .json(&json!({"handle": handle, "password": format!("{handle} password")}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        dids.push(out["did"].as_str().unwrap().to_owned());
    }
    let input = json!({"service": s.url, "identifier": "alice.example.com",
                       "password": "alice.example.com password", "other": dids[1]});
    let steps = tokio::task::spawn_blocking(move || {
        testkit::run_node("atproto-login.mjs", &format!("{input}\n"))
    })
    .await
    .unwrap();
    let steps: Vec<Value> = steps
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let by = |name: &str| -> Value {
        let step = steps.iter().find(|s| s["step"] == name).cloned();
        let step = step.unwrap_or_else(|| panic!("no step {name}: {steps:?}"));
        assert!(step.get("error").is_none(), "{step}");
        step
    };
    assert_eq!(by("login")["did"], dids[0].as_str());
    let own = by("writeOwn");
    assert_eq!(own["uris"].as_array().unwrap().len(), 6);
    assert_eq!(
        own["refreshed"], true,
        "the client refreshed its expired token: {own}"
    );
    let other = by("writeOther");
    assert_eq!(
        (
            other["refused"].as_bool(),
            other["status"].as_u64(),
            other["name"].as_str()
        ),
        (Some(true), Some(401), Some("AuthRequired")),
        "{other}"
    );
    assert_eq!(by("resumeSession")["did"], dids[0].as_str());
    assert_ne!(by("logout")["refreshAfterLogout"], "accepted");
    // Everything alice wrote is in her repository; bob's is empty.
    for (did, expected) in [(&dids[0], 6), (&dids[1], 0)] {
        let out: Value = s
            .client
            .get(format!(
                "{}/xrpc/com.atproto.repo.listRecords?repo={did}&collection=app.bsky.feed.post&limit=100",
                s.url
            ))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(
            out["records"].as_array().unwrap().len(),
            expected,
            "{did}: {out}"
        );
    }
    s.stop().await;
}
