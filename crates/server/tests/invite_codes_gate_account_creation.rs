//! Who may create an account: the admin token, an invite code (used up
//! after its uses), or anyone with open registration; handles outside the
//! server's domains are refused, and only the admin names a DID or
//! attaches an existing repository. describeServer says which applies.

use crate::common;

use common::{
    TOKEN, TestServer,
    sessions::{call, clock, sessions},
};
use serde_json::json;
use server::{AccountPolicy, Config};
use store::MemoryKv;

async fn start(policy: AccountPolicy) -> TestServer {
    let config = Config {
        token: Some(TOKEN.into()),
        sessions: Some(sessions(&clock(), 60, policy)),
        ..Config::default()
    };
    TestServer::start(MemoryKv::new(), config).await
}

#[tokio::test]
async fn invite_codes_are_needed_and_used_up() {
    let s = start(AccountPolicy {
        handle_domains: vec!["example.com".into()],
        ..AccountPolicy::default()
    })
    .await;
    let (status, out) = call(&s, "com.atproto.server.describeServer", None, None).await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["inviteCodeRequired"], true);
    assert_eq!(out["availableUserDomains"], json!([".example.com"]));

    let account = |handle: &str, code: Option<&str>| {
        let mut body = json!({"handle": handle, "password": "pw"});
        if let Some(code) = code {
            body["inviteCode"] = code.into();
        }
        body
    };
    let (status, out) = call(
        &s,
        "com.atproto.server.createAccount",
        None,
        Some(account("a.example.com", None)),
    )
    .await;
    assert_eq!(
        (status, out["error"].as_str()),
        (400, Some("InvalidInviteCode"))
    );
    // Only the admin makes codes.
    let (status, _) = call(
        &s,
        "com.atproto.server.createInviteCode",
        None,
        Some(json!({"useCount": 2})),
    )
    .await;
    assert_eq!(status, 401);
    let (status, out) = call(
        &s,
        "com.atproto.server.createInviteCode",
        Some(TOKEN),
        Some(json!({"useCount": 2})),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let code = out["code"].as_str().unwrap().to_owned();
    for handle in ["a.example.com", "b.example.com"] {
        let (status, out) = call(
            &s,
            "com.atproto.server.createAccount",
            None,
            Some(account(handle, Some(&code))),
        )
        .await;
        assert_eq!(status, 200, "{out}");
        assert_eq!(out["did"], format!("did:web:{handle}"));
        assert!(out["accessJwt"].is_string());
    }
    let (status, out) = call(
        &s,
        "com.atproto.server.createAccount",
        None,
        Some(account("c.example.com", Some(&code))),
    )
    .await;
    assert_eq!(
        (status, out["error"].as_str()),
        (400, Some("InvalidInviteCode")),
        "{out}"
    );
    // Several codes at once, per account asked for.
    let (status, out) = call(
        &s,
        "com.atproto.server.createInviteCodes",
        Some(TOKEN),
        Some(json!({"codeCount": 3, "useCount": 1, "forAccounts": ["did:web:a.example.com"]})),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let codes = out["codes"][0]["codes"].as_array().unwrap();
    assert_eq!(out["codes"][0]["account"], "did:web:a.example.com");
    assert_eq!(codes.len(), 3);
    assert_ne!(codes[0], codes[1]);

    // A handle outside the server's domains: refused, even for the admin.
    let (status, out) = call(
        &s,
        "com.atproto.server.createAccount",
        Some(TOKEN),
        Some(account("d.example.org", None)),
    )
    .await;
    assert_eq!(
        (status, out["error"].as_str()),
        (400, Some("UnsupportedDomain")),
        "{out}"
    );
    s.stop().await;
}

#[tokio::test]
async fn open_registration_takes_anyone_but_never_an_existing_repository() {
    let s = start(AccountPolicy {
        open_registration: true,
        ..AccountPolicy::default()
    })
    .await;
    let (_, out) = call(&s, "com.atproto.server.describeServer", None, None).await;
    assert_eq!(out["inviteCodeRequired"], false);
    assert_eq!(out["availableUserDomains"], json!([]));
    let (status, out) = call(
        &s,
        "com.atproto.server.createAccount",
        None,
        Some(json!({"handle": "anyone.example.net", "password": "pw"})),
    )
    .await;
    assert_eq!(status, 200, "{out}");

    // A repository the admin wrote before any account: nobody signs up
    // into it; only the admin attaches it, naming its DID.
    let (status, out) = call(
        &s,
        "com.atproto.repo.createRecord",
        Some(TOKEN),
        Some(
            json!({"repo": "did:web:old.example.net", "collection": "app.bsky.feed.post",
                    "record": {"text": "before accounts", "createdAt": "2026-11-27T00:00:00Z"}}),
        ),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let (status, out) = call(
        &s,
        "com.atproto.server.createAccount",
        None,
        Some(json!({"handle": "old.example.net", "password": "pw"})),
    )
    .await;
    assert_eq!(status, 400, "{out}");
    let (status, out) = call(
        &s,
        "com.atproto.server.createAccount",
        None,
        Some(json!({"handle": "thief.example.net", "password": "pw", "did": "did:web:old.example.net"})),
    )
    .await;
    assert_eq!(status, 401, "{out}");
    let (status, _) = call(
        &s,
        "com.atproto.server.createSession",
        None,
        Some(json!({"identifier": "old.example.net", "password": "pw"})),
    )
    .await;
    assert_eq!(status, 401, "no account was left behind");
    let (status, out) = call(
        &s,
        "com.atproto.server.createAccount",
        Some(TOKEN),
        Some(json!({"handle": "old.example.net", "password": "pw", "did": "did:web:old.example.net"})),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let (status, out) = call(
        &s,
        "com.atproto.repo.listRecords?repo=did:web:old.example.net&collection=app.bsky.feed.post",
        None,
        None,
    )
    .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["records"].as_array().unwrap().len(), 1, "{out}");
    s.stop().await;
}
