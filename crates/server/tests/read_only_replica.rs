//! A read-only replica on the same store (a local directory, and
//! S3-compatible storage when `scripts/test` provides it) serves reads of
//! the writer's commits within its refresh interval and refuses writes.

use crate::common;

use std::{sync::Arc, time::Duration};

use common::{DID, TestServer};
use serde_json::json;
use server::Config;
use store::{Location, SlateKv};

/// The locations to test (see `testkit::store_locations`); the local
/// directory lives as long as the returned guard.
fn locations() -> (testkit::TempDir, Vec<Location>) {
    let (tmp, locations) = testkit::store_locations("replica");
    (tmp, locations.iter().map(|l| l.parse().unwrap()).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replica_follows_the_writer() {
    let (_tmp, locations) = locations();
    for location in locations {
        follows(&location).await;
    }
}

async fn follows(location: &Location) {
    let kv = SlateKv::open(location).await.unwrap();
    let writer = TestServer::start(kv.clone(), common::config()).await;
    let (s, _) = writer
        .post(
            "com.atproto.repo.putRecord",
            &json!({"repo": DID, "collection": "app.test.r", "rkey": "first", "record": {}}),
        )
        .await;
    assert_eq!(s, 200);

    let reader = SlateKv::open_reader(location, Duration::from_millis(50))
        .await
        .unwrap();
    let repos = Arc::new(repo::Repos::new(
        Arc::new(store::Store::new(reader.clone())),
        common::env(),
    ));
    let replica = TestServer::start_repos(
        repos,
        Config {
            read_only: true,
            ..common::config()
        },
    )
    .await;

    let (s, created) = writer
        .post(
            "com.atproto.repo.putRecord",
            &json!({"repo": DID, "collection": "app.test.r", "rkey": "second", "record": {"n": 2}}),
        )
        .await;
    assert_eq!(s, 200);
    let mut seen = None;
    for _ in 0..100 {
        let (s, got) = replica
            .get(
                "com.atproto.repo.getRecord",
                &[
                    ("repo", DID),
                    ("collection", "app.test.r"),
                    ("rkey", "second"),
                ],
            )
            .await;
        if s == 200 {
            seen = Some(got);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let got = seen.expect("the replica never saw the new record");
    assert_eq!(got["cid"], created["cid"]);
    let (_, latest) = replica
        .get("com.atproto.sync.getLatestCommit", &[("did", DID)])
        .await;
    assert_eq!(latest, created["commit"]);

    let (s, err) = replica
        .post(
            "com.atproto.repo.createRecord",
            &json!({"repo": DID, "collection": "app.test.r", "record": {}}),
        )
        .await;
    assert_eq!((s, err["error"].as_str()), (400, Some("InvalidRequest")));
    assert!(
        err["message"].as_str().unwrap().contains("read-only"),
        "{err}"
    );
    replica.stop().await;
    writer.stop().await;
    // Both handles stop their background work before the directory goes
    // (a reader refreshes its checkpoint in the manifest).
    reader.close().await.unwrap();
    kv.close().await.unwrap();
}
