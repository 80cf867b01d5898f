//! `@atproto/api` (the pinned oracle) uploads a blob with `uploadBlob` and
//! posts a record referring to it; the blob's CID is the one `multiformats`
//! computes for the same bytes (CIDv1, raw, sha2-256), getBlob returns the
//! bytes, and a record naming a blob never uploaded is refused.

use crate::common;

use common::{
    TOKEN, TestServer,
    sessions::{call, clock, sessions},
};
use serde_json::{Value, json};
use server::Config;
use store::MemoryKv;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_client_uploads_and_refers_to_a_blob() {
    let config = Config {
        token: Some(TOKEN.into()),
        sessions: Some(sessions(&clock(), 600, Default::default())),
        ..Config::default()
    };
    let s = TestServer::start(MemoryKv::new(), config).await;
    let (status, out) = call(
        &s,
        "com.atproto.server.createAccount",
        Some(TOKEN),
        Some(json!({"handle": "alice.example.com", "password": "pw"})),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let did = out["did"].as_str().unwrap().to_owned();
    // A PNG signature and header, then bytes of every value.
    let mut bytes = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    bytes.extend((0..70_000u32).map(|i| (i * 31 % 256) as u8));
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let input =
        json!({"service": s.url, "identifier": "alice.example.com", "password": "pw", "hex": hex});
    let lines = tokio::task::spawn_blocking(move || {
        testkit::run_node("atproto-blobs.mjs", &format!("{input}\n"))
    })
    .await
    .unwrap();
    let seen: Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(seen["uploaded"]["ref"], seen["expected"], "{seen}");
    assert_eq!(seen["uploaded"]["mimeType"], "image/png");
    assert_eq!(seen["uploaded"]["size"], bytes.len());
    assert_eq!(seen["unknown"]["refused"], true, "{seen}");
    assert_eq!(seen["unknown"]["status"], 400, "{seen}");
    assert!(
        seen["unknown"]["message"]
            .as_str()
            .unwrap()
            .contains(seen["never"].as_str().unwrap()),
        "{seen}"
    );
    let cid = seen["expected"].as_str().unwrap();
    let (status, got) = s
        .get_bytes("com.atproto.sync.getBlob", &[("did", &did), ("cid", cid)])
        .await;
    assert_eq!(status, 200);
    assert_eq!(got, bytes);
    assert!(
        seen["created"]
            .as_str()
            .unwrap()
            .starts_with(&format!("at://{did}/app.bsky.feed.post/"))
    );
    s.stop().await;
}
