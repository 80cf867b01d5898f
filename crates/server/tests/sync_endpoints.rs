//! com.atproto.sync.* over HTTP: getRepo streams a CAR that imports to the
//! same repository (also incrementally with `since`: every commit since), getRecord proves one
//! record, listRepos pages; health, metrics and CORS answer.

use crate::common;

use common::{DID, TestServer};
use serde_json::json;

const POST: &str = "app.bsky.feed.post";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_and_operational_endpoints() {
    let srv = TestServer::memory().await;
    for i in 0..30 {
        let (s, _) = srv
            .post(
                "com.atproto.repo.createRecord",
                &json!({"repo": DID, "collection": POST, "record": {"i": i}}),
            )
            .await;
        assert_eq!(s, 200);
    }
    let (_, mid) = srv
        .get("com.atproto.sync.getLatestCommit", &[("did", DID)])
        .await;
    let (s, car_at_mid) = srv
        .get_bytes("com.atproto.sync.getRepo", &[("did", DID)])
        .await;
    assert_eq!(s, 200);
    for i in 0..3 {
        srv.post(
            "com.atproto.repo.createRecord",
            &json!({"repo": DID, "collection": POST, "record": {"late": i}}),
        )
        .await;
    }
    let (_, latest) = srv
        .get("com.atproto.sync.getLatestCommit", &[("did", DID)])
        .await;

    // The CAR imports into a fresh store as the same repository.
    let resp = srv
        .client
        .get(srv.xrpc("com.atproto.sync.getRepo"))
        .query(&[("did", DID)])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["content-type"], "application/vnd.ipld.car");
    let car = resp.bytes().await.unwrap();
    let copy = repo::Repos::new(
        std::sync::Arc::new(store::Store::new(store::MemoryKv::new())),
        common::env(),
    );
    let report = copy.import_car(&car[..], Some(DID)).await.unwrap();
    assert_eq!(report.commit.to_string(), latest["cid"].as_str().unwrap());
    assert_eq!(report.records, 33);

    // since: only the last three commits' changes, smaller than the whole.
    let (s, partial) = srv
        .get_bytes(
            "com.atproto.sync.getRepo",
            &[("did", DID), ("since", mid["rev"].as_str().unwrap())],
        )
        .await;
    assert_eq!(s, 200);
    // Onto a copy of the repository as it was at `mid`, it brings the
    // three commits since, one by one.
    let restored = repo::Repos::new(
        std::sync::Arc::new(store::Store::new(store::MemoryKv::new())),
        common::env(),
    );
    restored
        .import_car(&car_at_mid[..], Some(DID))
        .await
        .unwrap();
    let report = restored.import_car(&partial[..], Some(DID)).await.unwrap();
    assert_eq!(report.commit.to_string(), latest["cid"].as_str().unwrap());
    assert_eq!((report.records, report.commits), (33, 3));

    // getRecord: a proof CAR rooted at the head, ending with the record.
    let (_, list) = srv
        .get(
            "com.atproto.repo.listRecords",
            &[("repo", DID), ("collection", POST), ("limit", "1")],
        )
        .await;
    let rec = &list["records"][0];
    let rkey = rec["uri"].as_str().unwrap().rsplit('/').next().unwrap();
    let (s, proof) = srv
        .get_bytes(
            "com.atproto.sync.getRecord",
            &[("did", DID), ("collection", POST), ("rkey", rkey)],
        )
        .await;
    assert_eq!(s, 200);
    let mut reader = iroh_car::CarReader::new(&proof[..]).await.unwrap();
    assert_eq!(
        reader.header().roots()[0].to_string(),
        latest["cid"].as_str().unwrap()
    );
    let mut cids = Vec::new();
    while let Some((cid, _)) = reader.next_block().await.unwrap() {
        cids.push(cid.to_string());
    }
    assert_eq!(cids.last().map(String::as_str), rec["cid"].as_str());

    // listRepos pages by repository.
    for i in 0..3 {
        srv.post(
            "com.atproto.repo.createRecord",
            &json!({"repo": format!("did:web:r{i}.example"), "collection": POST, "record": {}}),
        )
        .await;
    }
    let (_, page) = srv
        .get("com.atproto.sync.listRepos", &[("limit", "2")])
        .await;
    assert_eq!(page["repos"].as_array().unwrap().len(), 2);
    let cursor = page["cursor"].as_str().unwrap();
    let (_, rest) = srv
        .get(
            "com.atproto.sync.listRepos",
            &[("limit", "2"), ("cursor", cursor)],
        )
        .await;
    assert_eq!(rest["repos"].as_array().unwrap().len(), 2);
    assert!(rest.get("cursor").is_none());
    assert_eq!(rest["repos"][1]["did"], "did:web:server.example");
    assert_eq!(rest["repos"][1]["head"], latest["cid"]);

    // Health, metrics, CORS.
    let (s, health) = srv.get("_health", &[]).await;
    assert_eq!((s, health["version"].is_string()), (200, true));
    let metrics = srv
        .client
        .get(format!("{}/metrics", srv.url))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains(r#"datarepo_http_requests_total{method="com.atproto.repo.createRecord",status="200"} 36"#),
        "{metrics}"
    );
    let preflight = srv
        .client
        .request(
            reqwest::Method::OPTIONS,
            srv.xrpc("com.atproto.repo.createRecord"),
        )
        .header("origin", "https://app.example")
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "authorization,content-type",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(preflight.headers()["access-control-allow-origin"], "*");
    srv.stop().await;
}
