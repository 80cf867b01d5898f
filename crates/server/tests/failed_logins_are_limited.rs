//! Failed logins are limited per account and per address: past the limit
//! a login is refused with 429 RateLimitExceeded and the ratelimit-*
//! headers, even with the right password, until the window ends; other
//! accounts are not affected by one account's limit.

use crate::common;

use std::sync::atomic::Ordering;

use accounts::login_limits::{PER_ACCOUNT, PER_ADDRESS};
use common::{
    TOKEN, TestServer,
    sessions::{call, clock, sessions},
};
use serde_json::json;
use server::Config;
use store::MemoryKv;

async fn login(s: &TestServer, who: &str, password: &str) -> reqwest::Response {
    s.client
        .post(format!("{}/xrpc/com.atproto.server.createSession", s.url))
        .json(&json!({"identifier": who, "password": password}))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn guessing_is_cut_off_per_account_then_per_address() {
    let now = clock();
    let config = Config {
        token: Some(TOKEN.into()),
        sessions: Some(sessions(&now, 600, Default::default())),
        ..Config::default()
    };
    let s = TestServer::start(MemoryKv::new(), config).await;
    for handle in ["alice.example.com", "bob.example.com"] {
        let (status, out) = call(
            &s,
            "com.atproto.server.createAccount",
            Some(TOKEN),
            Some(json!({"handle": handle, "password": "right"})),
        )
        .await;
        assert_eq!(status, 200, "{out}");
    }
    for _ in 0..PER_ACCOUNT.failures {
        assert_eq!(login(&s, "alice.example.com", "wrong").await.status(), 401);
    }
    let refused = login(&s, "Alice.Example.com", "right").await;
    assert_eq!(refused.status(), 429);
    let header = |name: &str| {
        refused
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let start = now.load(Ordering::Relaxed);
    assert_eq!(
        header("ratelimit-limit"),
        Some(PER_ACCOUNT.failures.to_string())
    );
    assert_eq!(header("ratelimit-remaining").as_deref(), Some("0"));
    assert_eq!(
        header("ratelimit-reset"),
        Some((start + PER_ACCOUNT.window_secs).to_string())
    );
    assert!(header("retry-after").is_some());
    let body: serde_json::Value = refused.json().await.unwrap();
    assert_eq!(body["error"], "RateLimitExceeded");
    // Bob logs in meanwhile; Alice again once the window has passed.
    assert_eq!(login(&s, "bob.example.com", "right").await.status(), 200);
    now.fetch_add(PER_ACCOUNT.window_secs, Ordering::Relaxed);
    assert_eq!(login(&s, "alice.example.com", "right").await.status(), 200);

    // One address guessing across many accounts is cut off too.
    now.fetch_add(PER_ADDRESS.window_secs, Ordering::Relaxed);
    for i in 0..PER_ADDRESS.failures {
        let who = format!("nobody{i}.example.com");
        assert_eq!(login(&s, &who, "wrong").await.status(), 401);
    }
    assert_eq!(login(&s, "bob.example.com", "right").await.status(), 429);
    s.stop().await;
}
