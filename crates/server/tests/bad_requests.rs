//! Bad input over HTTP: each request gets the XRPC error it deserves
//! (status and `{"error", "message"}`), the server keeps serving, and
//! nothing is written.

use crate::common;

use common::{DID, TOKEN, TestServer};
use serde_json::{Value, json};
use server::{Config, Limits};

const POST: &str = "app.bsky.feed.post";

/// (method, body, token, expected status, expected error name)
type WriteCase<'a> = (&'a str, Vec<u8>, Option<&'a str>, u16, &'a str);
/// (method, query, expected status, expected error name)
type ReadCase<'a> = (&'a str, Vec<(&'a str, &'a str)>, u16, &'a str);

async fn head(srv: &TestServer) -> Value {
    srv.get("com.atproto.sync.getLatestCommit", &[("did", DID)])
        .await
        .1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_writes_are_rejected_and_write_nothing() {
    let config = Config {
        limits: Limits {
            max_body_bytes: 64 * 1024,
            max_record_bytes: 8 * 1024,
            max_writes: 10,
            ..Limits::default()
        },
        ..common::config()
    };
    let srv = TestServer::start(store::MemoryKv::new(), config).await;
    let (s, first) = srv
        .post(
            "com.atproto.repo.putRecord",
            &json!({"repo": DID, "collection": POST, "rkey": "a", "record": {}}),
        )
        .await;
    assert_eq!(s, 200, "{first}");
    let before = head(&srv).await;

    let create = |extra: Value| {
        let mut body = json!({"repo": DID, "collection": POST, "record": {"text": "x"}});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        body.to_string().into_bytes()
    };
    let big = "x".repeat(100 * 1024);
    let many: Vec<Value> = (0..11)
        .map(|i| json!({"$type": "com.atproto.repo.applyWrites#create", "collection": POST, "rkey": format!("m{i}"), "value": {}}))
        .collect();
    let cases: Vec<WriteCase<'_>> = vec![
        ("com.atproto.repo.createRecord", b"{not json".to_vec(), Some(TOKEN), 400, "InvalidRequest"),
        ("com.atproto.repo.createRecord", b"[]".to_vec(), Some(TOKEN), 400, "InvalidRequest"),
        ("com.atproto.repo.createRecord", create(json!({"collection": "not an nsid"})), Some(TOKEN), 400, "InvalidRequest"),
        ("com.atproto.repo.createRecord", create(json!({"rkey": "bad key"})), Some(TOKEN), 400, "InvalidRequest"),
        ("com.atproto.repo.createRecord", create(json!({"record": {"f": 0.5}})), Some(TOKEN), 400, "InvalidRequest"),
        ("com.atproto.repo.createRecord", create(json!({"record": {"l": {"$link": "nope"}}})), Some(TOKEN), 400, "InvalidRequest"),
        ("com.atproto.repo.createRecord", create(json!({"record": "a string"})), Some(TOKEN), 400, "InvalidRequest"),
        ("com.atproto.repo.createRecord", create(json!({"repo": "not a repo id"})), Some(TOKEN), 400, "InvalidRequest"),
        ("com.atproto.repo.createRecord", create(json!({"swapCommit": "notacid"})), Some(TOKEN), 400, "InvalidRequest"),
        ("com.atproto.repo.createRecord", create(json!({"swapCommit": first["cid"]})), Some(TOKEN), 400, "InvalidSwap"),
        ("com.atproto.repo.createRecord", create(json!({"rkey": "a"})), Some(TOKEN), 400, "InvalidRequest"),
        ("com.atproto.repo.createRecord", create(json!({"record": {"big": big.clone()}})), Some(TOKEN), 413, "PayloadTooLarge"),
        ("com.atproto.repo.createRecord", create(json!({"record": {"big": "y".repeat(9000)}})), Some(TOKEN), 413, "PayloadTooLarge"),
        ("com.atproto.repo.createRecord", create(json!({})), Some("wrong"), 401, "AuthRequired"),
        ("com.atproto.repo.createRecord", create(json!({})), None, 401, "AuthRequired"),
        ("com.atproto.repo.deleteRecord", json!({"repo": DID, "collection": POST, "rkey": "a", "swapRecord": first["commit"]["cid"]}).to_string().into_bytes(), Some(TOKEN), 400, "InvalidSwap"),
        ("com.atproto.repo.deleteRecord", json!({"repo": DID, "collection": "bad..nsid", "rkey": "a"}).to_string().into_bytes(), Some(TOKEN), 400, "InvalidRequest"),
        ("com.atproto.repo.deleteRecord", json!({"repo": DID, "collection": POST, "rkey": "a/b"}).to_string().into_bytes(), Some(TOKEN), 400, "InvalidRequest"),
        ("com.atproto.repo.applyWrites", json!({"repo": DID, "writes": many}).to_string().into_bytes(), Some(TOKEN), 413, "PayloadTooLarge"),
        ("com.atproto.repo.applyWrites", json!({"repo": DID, "writes": [
            {"$type": "com.atproto.repo.applyWrites#create", "collection": POST, "rkey": "ok", "value": {}},
            {"$type": "com.atproto.repo.applyWrites#create", "collection": POST, "rkey": "a", "value": {}}]}).to_string().into_bytes(), Some(TOKEN), 400, "InvalidRequest"),
        ("com.atproto.repo.applyWrites", json!({"repo": DID, "writes": [{"$type": "com.atproto.repo.applyWrites#frobnicate", "collection": POST}]}).to_string().into_bytes(), Some(TOKEN), 400, "InvalidRequest"),
        ("com.atproto.repo.noSuchMethod", b"{}".to_vec(), Some(TOKEN), 501, "MethodNotImplemented"),
    ];
    for (method, body, token, status, error) in cases {
        let shown = String::from_utf8_lossy(&body[..body.len().min(120)]).into_owned();
        let (s, err) = srv.post_raw(method, body, token).await;
        assert_eq!(
            (s, err["error"].as_str()),
            (status, Some(error)),
            "{method} {shown}: {err}"
        );
        assert!(
            err["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{err}"
        );
        assert_eq!(head(&srv).await, before, "{method} {shown} wrote something");
    }
    let (_, list) = srv
        .get(
            "com.atproto.repo.listRecords",
            &[("repo", DID), ("collection", POST)],
        )
        .await;
    assert_eq!(list["records"].as_array().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_reads_get_clear_errors() {
    let srv = TestServer::memory().await;
    srv.post(
        "com.atproto.repo.putRecord",
        &json!({"repo": DID, "collection": POST, "rkey": "a", "record": {}}),
    )
    .await;
    let cases: Vec<ReadCase<'_>> = vec![
        (
            "com.atproto.repo.getRecord",
            vec![("repo", DID), ("collection", POST)],
            400,
            "InvalidRequest",
        ),
        (
            "com.atproto.repo.getRecord",
            vec![("repo", DID), ("collection", POST), ("rkey", "zzz")],
            400,
            "RecordNotFound",
        ),
        (
            "com.atproto.repo.getRecord",
            vec![("repo", DID), ("collection", "bad..nsid"), ("rkey", "a")],
            400,
            "InvalidRequest",
        ),
        (
            "com.atproto.repo.getRecord",
            vec![("repo", DID), ("collection", POST), ("rkey", "a/b")],
            400,
            "InvalidRequest",
        ),
        (
            "com.atproto.repo.getRecord",
            vec![
                ("repo", "did:web:nobody.example"),
                ("collection", POST),
                ("rkey", "a"),
            ],
            400,
            "RepoNotFound",
        ),
        (
            "com.atproto.repo.getRecord",
            vec![
                ("repo", DID),
                ("collection", POST),
                ("rkey", "a"),
                ("cid", "bad"),
            ],
            400,
            "InvalidRequest",
        ),
        (
            "com.atproto.repo.listRecords",
            vec![("repo", DID), ("collection", POST), ("limit", "0")],
            400,
            "InvalidRequest",
        ),
        (
            "com.atproto.repo.listRecords",
            vec![("repo", DID), ("collection", POST), ("limit", "101")],
            400,
            "InvalidRequest",
        ),
        (
            "com.atproto.repo.listRecords",
            vec![("repo", DID), ("collection", POST), ("limit", "ten")],
            400,
            "InvalidRequest",
        ),
        (
            "com.atproto.repo.listRecords",
            vec![("repo", DID), ("collection", "bad nsid")],
            400,
            "InvalidRequest",
        ),
        (
            "com.atproto.sync.getRepo",
            vec![("did", DID), ("since", "notarev")],
            400,
            "InvalidRequest",
        ),
        (
            "com.atproto.sync.getRepo",
            vec![("did", DID), ("since", "2222222222222")],
            400,
            "InvalidRequest",
        ),
        (
            "com.atproto.sync.getRecord",
            vec![("did", DID), ("collection", POST), ("rkey", "zzz")],
            400,
            "RecordNotFound",
        ),
        (
            "com.atproto.sync.getLatestCommit",
            vec![("did", "did:web:nobody.example")],
            400,
            "RepoNotFound",
        ),
        (
            "com.atproto.sync.listRepos",
            vec![("limit", "100000")],
            400,
            "InvalidRequest",
        ),
    ];
    for (method, q, status, error) in cases {
        let (s, err) = srv.get(method, &q).await;
        assert_eq!(
            (s, err["error"].as_str()),
            (status, Some(error)),
            "{method} {q:?}: {err}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_token_writes_are_refused() {
    let srv = TestServer::start(store::MemoryKv::new(), Config::default()).await;
    let body = json!({"repo": DID, "collection": POST, "record": {}});
    let (s, err) = srv.post("com.atproto.repo.createRecord", &body).await;
    assert_eq!((s, err["error"].as_str()), (401, Some("AuthRequired")));
    // It says why, and gives no command-line advice over HTTP (the
    // server's operator is told at startup, in its log).
    let message = err["message"].as_str().unwrap();
    assert!(
        message.contains("without a write token") && !message.contains("datarepo "),
        "{err}"
    );

    // Private reads need the token as well.
    let private = TestServer::start(
        store::MemoryKv::new(),
        Config {
            private_reads: true,
            ..common::config()
        },
    )
    .await;
    let (s, _) = private.get("com.atproto.sync.listRepos", &[]).await;
    assert_eq!(s, 401);
    let resp = private
        .client
        .get(private.xrpc("com.atproto.sync.listRepos"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
}
