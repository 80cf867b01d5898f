//! com.atproto.repo.* over real HTTP: every endpoint's good path, in the
//! shapes AT Protocol's lexicons define, with swaps honoured.

use crate::common;

use common::{DID, TestServer};
use serde_json::{Value, json};

const POST: &str = "app.bsky.feed.post";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_lifecycle() {
    let tmp = testkit::tempdir("lifecycle");
    let dir = tmp.path();
    let srv = TestServer::start(common::slate(dir).await, common::config()).await;

    let (s, created) = srv
        .post(
            "com.atproto.repo.createRecord",
            &json!({"repo": DID, "collection": POST, "record": {"text": "hello", "n": 1}}),
        )
        .await;
    assert_eq!(s, 200, "{created}");
    let uri = created["uri"].as_str().unwrap();
    let rkey = uri.rsplit('/').next().unwrap();
    assert!(rkey::Tid::parse(rkey).is_ok());
    assert!(uri.starts_with(&format!("at://{DID}/{POST}/")));
    assert!(created["commit"]["cid"].is_string() && created["commit"]["rev"].is_string());
    assert_eq!(created["validationStatus"], "unknown");

    let (s, got) = srv
        .get(
            "com.atproto.repo.getRecord",
            &[("repo", DID), ("collection", POST), ("rkey", rkey)],
        )
        .await;
    assert_eq!(s, 200);
    assert_eq!(got["uri"], created["uri"]);
    assert_eq!(got["cid"], created["cid"]);
    assert_eq!(
        got["value"],
        json!({"$type": POST, "text": "hello", "n": 1})
    );

    // putRecord: create at a chosen key, then update with swapRecord.
    let (s, put) = srv
        .post(
            "com.atproto.repo.putRecord",
            &json!({"repo": DID, "collection": POST, "rkey": "chosen", "record": {"v": 1}}),
        )
        .await;
    assert_eq!(s, 200, "{put}");
    let (s, put2) = srv
        .post(
            "com.atproto.repo.putRecord",
            &json!({"repo": DID, "collection": POST, "rkey": "chosen", "record": {"v": 2},
                    "swapRecord": put["cid"], "swapCommit": put["commit"]["cid"]}),
        )
        .await;
    assert_eq!(s, 200, "{put2}");
    // Stale swaps fail with InvalidSwap and change nothing.
    for body in [
        json!({"repo": DID, "collection": POST, "rkey": "chosen", "record": {"v": 3}, "swapRecord": put["cid"]}),
        json!({"repo": DID, "collection": POST, "rkey": "chosen", "record": {"v": 3}, "swapCommit": put["commit"]["cid"]}),
        json!({"repo": DID, "collection": POST, "rkey": "chosen", "record": {"v": 3}, "swapRecord": null}),
    ] {
        let (s, err) = srv.post("com.atproto.repo.putRecord", &body).await;
        assert_eq!(
            (s, err["error"].as_str()),
            (400, Some("InvalidSwap")),
            "{body}: {err}"
        );
    }
    let (_, got) = srv
        .get(
            "com.atproto.repo.getRecord",
            &[("repo", DID), ("collection", POST), ("rkey", "chosen")],
        )
        .await;
    assert_eq!(got["value"]["v"], 2);

    // applyWrites: creates, an update and a delete in one commit.
    let writes: Vec<Value> = (0..5)
        .map(|i| json!({"$type": "com.atproto.repo.applyWrites#create", "collection": POST, "rkey": format!("b{i}"), "value": {"i": i}}))
        .chain([
            json!({"$type": "com.atproto.repo.applyWrites#update", "collection": POST, "rkey": "chosen", "value": {"v": 4}}),
            json!({"$type": "com.atproto.repo.applyWrites#delete", "collection": POST, "rkey": rkey}),
        ])
        .collect();
    let (s, applied) = srv
        .post(
            "com.atproto.repo.applyWrites",
            &json!({"repo": DID, "writes": writes}),
        )
        .await;
    assert_eq!(s, 200, "{applied}");
    let results = applied["results"].as_array().unwrap();
    assert_eq!(results.len(), 7);
    assert_eq!(
        results[0]["$type"],
        "com.atproto.repo.applyWrites#createResult"
    );
    assert_eq!(
        results[5]["$type"],
        "com.atproto.repo.applyWrites#updateResult"
    );
    assert_eq!(
        results[6],
        json!({"$type": "com.atproto.repo.applyWrites#deleteResult"})
    );
    let (_, latest) = srv
        .get("com.atproto.sync.getLatestCommit", &[("did", DID)])
        .await;
    assert_eq!(latest, applied["commit"]);

    // listRecords: pages both ways, cursor absent on the last page.
    for reverse in ["false", "true"] {
        let mut seen = Vec::new();
        let mut cursor = String::new();
        loop {
            let mut q = vec![
                ("repo", DID),
                ("collection", POST),
                ("limit", "2"),
                ("reverse", reverse),
            ];
            if !cursor.is_empty() {
                q.push(("cursor", &cursor));
            }
            let (s, page) = srv.get("com.atproto.repo.listRecords", &q).await;
            assert_eq!(s, 200, "{page}");
            for r in page["records"].as_array().unwrap() {
                seen.push(
                    r["uri"]
                        .as_str()
                        .unwrap()
                        .rsplit('/')
                        .next()
                        .unwrap()
                        .to_owned(),
                );
            }
            match page.get("cursor") {
                Some(c) => cursor = c.as_str().unwrap().to_owned(),
                None => break,
            }
        }
        let mut want = vec!["b0", "b1", "b2", "b3", "b4", "chosen"];
        if reverse == "true" {
            want.reverse();
        }
        assert_eq!(seen, want);
    }

    // deleteRecord, then the record is gone; deleting again is a no-op.
    let (s, deleted) = srv
        .post(
            "com.atproto.repo.deleteRecord",
            &json!({"repo": DID, "collection": POST, "rkey": "b0"}),
        )
        .await;
    assert_eq!(s, 200, "{deleted}");
    assert!(deleted["commit"]["rev"].is_string());
    let (s, err) = srv
        .get(
            "com.atproto.repo.getRecord",
            &[("repo", DID), ("collection", POST), ("rkey", "b0")],
        )
        .await;
    assert_eq!((s, err["error"].as_str()), (400, Some("RecordNotFound")));
    let (s, again) = srv
        .post(
            "com.atproto.repo.deleteRecord",
            &json!({"repo": DID, "collection": POST, "rkey": "b0"}),
        )
        .await;
    assert_eq!((s, again), (200, json!({})));

    let (s, described) = srv
        .get("com.atproto.repo.describeRepo", &[("repo", DID)])
        .await;
    assert_eq!(s, 200);
    assert_eq!(described["did"], DID);
    assert_eq!(described["collections"], json!([POST]));
    for field in ["handle", "didDoc", "handleIsCorrect"] {
        assert!(described.get(field).is_some(), "describeRepo lacks {field}");
    }
    srv.stop().await;
}
