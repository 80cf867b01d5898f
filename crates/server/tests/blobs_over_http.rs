//! Blobs over HTTP: uploadBlob stores the body under its CID with the type
//! its bytes show, a record refers to it, getBlob serves it (whole or by
//! Range, with the headers that keep a browser from running it) and
//! listBlobs lists it; unknown and unreferenced blobs are 404 BlobNotFound,
//! a record referring to an unknown blob is refused, a body over the limit
//! is 413 BlobTooLarge, and a session uploads into its own repository only.
//! The firehose's commit event lists the blob.

use crate::common;

use common::{
    TOKEN, TestServer,
    sessions::{call, clock, sessions},
};
use serde_json::{Value, json};
use server::{Config, Limits};
use store::MemoryKv;

const ALICE: &str = "did:web:alice.example.com";

/// A PNG's signature and header, then filler: what `infer` recognizes.
fn png(len: usize) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    bytes.extend((0..len).map(|i| (i % 241) as u8));
    bytes
}

async fn upload(
    s: &TestServer,
    query: &str,
    bearer: &str,
    body: Vec<u8>,
    claimed: &str,
) -> (u16, Value) {
    let resp = s
        .client
        .post(format!("{}/xrpc/com.atproto.repo.uploadBlob{query}", s.url))
        .bearer_auth(bearer)
        .header("content-type", claimed)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_blob_is_uploaded_referred_to_and_served() {
    let config = Config {
        token: Some(TOKEN.into()),
        sessions: Some(sessions(&clock(), 600, Default::default())),
        limits: Limits {
            max_blob_bytes: 1 << 20,
            ..Limits::default()
        },
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
    let access = alice["accessJwt"].as_str().unwrap().to_owned();

    let bytes = png(300_000);
    let (status, out) = upload(&s, "", &access, bytes.clone(), "application/octet-stream").await;
    assert_eq!(status, 200, "{out}");
    let blob = out["blob"].clone();
    let cid = store::blob_cid(&bytes).to_string();
    assert_eq!(blob["ref"]["$link"], cid);
    assert_eq!(blob["$type"], "blob");
    assert_eq!(
        blob["mimeType"], "image/png",
        "the bytes' type wins over the claim"
    );
    assert_eq!(blob["size"], bytes.len());

    // Not referred to yet: not served.
    let (status, out) = s
        .get("com.atproto.sync.getBlob", &[("did", ALICE), ("cid", &cid)])
        .await;
    assert_eq!(
        (status, out["error"].as_str()),
        (404, Some("BlobNotFound")),
        "{out}"
    );
    // A record may refer only to blobs the repository holds.
    let unknown = store::blob_cid(b"nothing").to_string();
    let (status, out) = call(
        &s,
        "com.atproto.repo.createRecord",
        Some(&access),
        Some(json!({"repo": ALICE, "collection": "app.bsky.feed.post", "record": {
            "text": "x", "createdAt": "2026-11-27T00:00:00Z",
            "embed": {"$type": "app.bsky.embed.images", "images": [{"alt": "", "image":
                {"$type": "blob", "ref": {"$link": unknown}, "mimeType": "image/png", "size": 5}}]}}})),
    )
    .await;
    assert_eq!(
        (status, out["error"].as_str()),
        (400, Some("BlobNotFound")),
        "{out}"
    );
    assert!(out["message"].as_str().unwrap().contains(&unknown));
    let (status, out) = call(
        &s,
        "com.atproto.repo.createRecord",
        Some(&access),
        Some(json!({"repo": ALICE, "collection": "app.bsky.feed.post", "record": {
            "text": "with a picture", "createdAt": "2026-11-27T00:00:00Z",
            "embed": {"$type": "app.bsky.embed.images", "images": [{"alt": "a test", "image": blob}]}}})),
    )
    .await;
    assert_eq!(status, 200, "{out}");

    let whole = s
        .client
        .get(format!(
            "{}/xrpc/com.atproto.sync.getBlob?did={ALICE}&cid={cid}",
            s.url
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(whole.status(), 200);
    let header = |r: &reqwest::Response, name: &str| {
        r.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    assert_eq!(header(&whole, "content-type").as_deref(), Some("image/png"));
    assert_eq!(
        header(&whole, "content-length"),
        Some(bytes.len().to_string())
    );
    assert_eq!(
        header(&whole, "content-security-policy").as_deref(),
        Some("default-src 'none'; sandbox")
    );
    assert_eq!(
        header(&whole, "x-content-type-options").as_deref(),
        Some("nosniff")
    );
    assert_eq!(
        header(&whole, "content-disposition").as_deref(),
        Some("attachment")
    );
    assert_eq!(header(&whole, "etag"), Some(format!("\"{cid}\"")));
    assert_eq!(whole.bytes().await.unwrap().as_ref(), &bytes[..]);
    for (range, expected) in [
        ("bytes=100-199", &bytes[100..200]),
        ("bytes=299000-", &bytes[299_000..]),
        ("bytes=-10", &bytes[bytes.len() - 10..]),
    ] {
        let part = s
            .client
            .get(format!(
                "{}/xrpc/com.atproto.sync.getBlob?did={ALICE}&cid={cid}",
                s.url
            ))
            .header("range", range)
            .send()
            .await
            .unwrap();
        assert_eq!(part.status(), 206, "{range}");
        assert!(
            header(&part, "content-range")
                .unwrap()
                .ends_with(&format!("/{}", bytes.len()))
        );
        assert_eq!(part.bytes().await.unwrap().as_ref(), expected, "{range}");
    }
    let unsatisfiable = s
        .client
        .get(format!(
            "{}/xrpc/com.atproto.sync.getBlob?did={ALICE}&cid={cid}",
            s.url
        ))
        .header("range", format!("bytes={}-", bytes.len()))
        .send()
        .await
        .unwrap();
    assert_eq!(unsatisfiable.status(), 416);

    // The firehose's commit event names the blob its record refers to.
    let mut socket = common::subscribe(s.addr(), Some(0)).await;
    let mut named = None;
    while let Some(frame) = common::next_frame(&mut socket).await {
        if let repo::Frame::Commit(event) = frame
            && event.ops.iter().any(|op| op.action == "create")
        {
            named = Some(
                event
                    .blobs
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>(),
            );
            break;
        }
    }
    drop(socket);
    assert_eq!(named, Some(vec![cid.clone()]));
    let (status, listed) = s.get("com.atproto.sync.listBlobs", &[("did", ALICE)]).await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["cids"], json!([cid]));

    // Over the limit: 413, nothing kept.
    let (status, out) = upload(&s, "", &access, vec![1; (1 << 20) + 1], "image/png").await;
    assert_eq!(
        (status, out["error"].as_str()),
        (413, Some("BlobTooLarge")),
        "{out}"
    );
    // A session uploads into its own repository only; the admin names one.
    let (status, _) = upload(
        &s,
        "?repo=did:web:bob.example.com",
        &access,
        png(10),
        "image/png",
    )
    .await;
    assert_eq!(status, 401);
    let (status, out) = upload(&s, "", TOKEN, png(10), "image/png").await;
    assert_eq!(status, 400, "{out}");
    let (status, out) = upload(
        &s,
        &format!("?repo={ALICE}"),
        TOKEN,
        b"plain words".to_vec(),
        "text/plain; charset=utf-8",
    )
    .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(
        out["blob"]["mimeType"], "text/plain",
        "unrecognized bytes: the claim"
    );
    let (status, out) = upload(&s, "", &access, vec![0, 1, 2], "").await;
    assert_eq!(
        (status, out["blob"]["mimeType"].as_str()),
        (200, Some("application/octet-stream"))
    );
    s.stop().await;
}
