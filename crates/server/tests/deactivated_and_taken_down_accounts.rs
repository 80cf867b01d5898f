//! An account's status, changed while the server runs: deactivated by its
//! owner (its repository neither writes nor reads, as RepoDeactivated,
//! until it activates again), taken down by the operator (sessions end,
//! logins refused, RepoTakendown, until lifted), and a password reset by
//! the operator (the old password and every session stop working).

use crate::common;

use common::{
    TOKEN, TestServer,
    sessions::{call, clock, sessions},
};
use serde_json::{Value, json};
use server::Config;
use store::MemoryKv;

const ALICE: &str = "did:web:alice.example.com";

async fn login(s: &TestServer, password: &str) -> (u16, Value) {
    call(
        s,
        "com.atproto.server.createSession",
        None,
        Some(json!({"identifier": "alice.example.com", "password": password})),
    )
    .await
}

async fn write(s: &TestServer, bearer: &str) -> (u16, Value) {
    call(
        s,
        "com.atproto.repo.createRecord",
        Some(bearer),
        Some(json!({"repo": ALICE, "collection": "app.bsky.feed.post",
                    "record": {"text": "hi", "createdAt": "2026-11-27T00:00:00Z"}})),
    )
    .await
}

async fn read(s: &TestServer) -> (u16, Value) {
    call(
        s,
        &format!("com.atproto.repo.listRecords?repo={ALICE}&collection=app.bsky.feed.post"),
        None,
        None,
    )
    .await
}

async fn status(s: &TestServer, body: Value) -> (u16, Value) {
    call(
        s,
        "com.atproto.admin.updateSubjectStatus",
        Some(TOKEN),
        Some(body),
    )
    .await
}

fn subject(change: &str, applied: bool) -> Value {
    json!({"subject": {"$type": "com.atproto.admin.defs#repoRef", "did": ALICE},
           change: {"applied": applied}})
}

#[tokio::test]
async fn status_changes_take_effect_at_once() {
    let config = Config {
        token: Some(TOKEN.into()),
        sessions: Some(sessions(&clock(), 600, Default::default())),
        ..Config::default()
    };
    let s = TestServer::start(MemoryKv::new(), config).await;
    let (code, out) = call(
        &s,
        "com.atproto.server.createAccount",
        Some(TOKEN),
        Some(json!({"handle": "alice.example.com", "password": "first"})),
    )
    .await;
    assert_eq!(code, 200, "{out}");
    let access = out["accessJwt"].as_str().unwrap().to_owned();
    let refresh = out["refreshJwt"].as_str().unwrap().to_owned();
    assert_eq!(write(&s, &access).await.0, 200);

    // Deactivated by its owner: no writes, reads refused, login still works.
    let (code, out) = call(
        &s,
        "com.atproto.server.deactivateAccount",
        Some(&access),
        Some(json!({})),
    )
    .await;
    assert_eq!(code, 200, "{out}");
    let (code, out) = write(&s, &access).await;
    assert_eq!(
        (code, out["error"].as_str()),
        (401, Some("AccountDeactivated")),
        "{out}"
    );
    let (code, out) = read(&s).await;
    assert_eq!(
        (code, out["error"].as_str()),
        (400, Some("RepoDeactivated")),
        "{out}"
    );
    let (code, session) = login(&s, "first").await;
    assert_eq!(
        (code, session["active"].as_bool()),
        (200, Some(false)),
        "{session}"
    );
    assert_eq!(session["status"], "deactivated");
    let (code, out) = call(
        &s,
        "com.atproto.server.activateAccount",
        Some(&access),
        Some(json!({})),
    )
    .await;
    assert_eq!(code, 200, "{out}");
    assert_eq!(read(&s).await.0, 200);
    assert_eq!(write(&s, &access).await.0, 200);

    // Taken down by the operator: only the admin token can do it.
    let (code, _) = call(
        &s,
        "com.atproto.admin.updateSubjectStatus",
        Some(&access),
        Some(subject("takedown", true)),
    )
    .await;
    assert_eq!(code, 401);
    let (code, out) = status(&s, subject("takedown", true)).await;
    assert_eq!(code, 200, "{out}");
    assert_eq!(out["takedown"]["applied"], true);
    let (code, out) = write(&s, &access).await;
    assert_eq!(
        (code, out["error"].as_str()),
        (401, Some("AccountTakedown")),
        "{out}"
    );
    let (code, out) = read(&s).await;
    assert_eq!(
        (code, out["error"].as_str()),
        (400, Some("RepoTakendown")),
        "{out}"
    );
    let (code, out) = login(&s, "first").await;
    assert_eq!(
        (code, out["error"].as_str()),
        (401, Some("AccountTakedown")),
        "{out}"
    );
    let (code, out) = call(
        &s,
        "com.atproto.server.refreshSession",
        Some(&refresh),
        Some(json!({})),
    )
    .await;
    assert_eq!(code, 400, "the takedown ended the session: {out}");
    let (code, listed) = call(&s, "com.atproto.sync.listRepos", None, None).await;
    assert_eq!(code, 200, "{listed}");
    assert_eq!(listed["repos"][0]["active"], false, "{listed}");
    assert_eq!(listed["repos"][0]["status"], "takendown", "{listed}");
    let (code, info) = call(
        &s,
        &format!("com.atproto.admin.getAccountInfo?did={ALICE}"),
        Some(TOKEN),
        None,
    )
    .await;
    assert_eq!(
        (code, info["status"].as_str()),
        (200, Some("takendown")),
        "{info}"
    );
    let (code, out) = status(&s, subject("takedown", false)).await;
    assert_eq!(code, 200, "{out}");
    assert_eq!(read(&s).await.0, 200);

    // A password reset: the old password and the old session end.
    let (code, session) = login(&s, "first").await;
    assert_eq!(code, 200, "{session}");
    let (code, out) = call(
        &s,
        "com.atproto.admin.updateAccountPassword",
        Some(TOKEN),
        Some(json!({"did": ALICE, "password": "second"})),
    )
    .await;
    assert_eq!(code, 200, "{out}");
    assert_eq!(login(&s, "first").await.0, 401);
    let (code, _) = call(
        &s,
        "com.atproto.server.refreshSession",
        Some(session["refreshJwt"].as_str().unwrap()),
        Some(json!({})),
    )
    .await;
    assert_eq!(code, 400);
    let (code, fresh) = login(&s, "second").await;
    assert_eq!(code, 200);
    assert_eq!(write(&s, fresh["accessJwt"].as_str().unwrap()).await.0, 200);
    let (_, listed) = read(&s).await;
    assert_eq!(listed["records"].as_array().unwrap().len(), 3, "{listed}");
    s.stop().await;
}
