//! Stopping the server under write load: requests in flight finish, and
//! every acknowledged create is in the store after it is reopened.

use crate::common;

use std::sync::Arc;

use common::{DID, TestServer};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_shutdown() {
    let tmp = testkit::tempdir("shutdown");
    let dir = tmp.path();
    let kv = common::slate(dir).await;
    let srv = Arc::new(TestServer::start(kv.clone(), common::config()).await);
    let mut writers = Vec::new();
    for w in 0..32 {
        let srv = Arc::clone(&srv);
        writers.push(tokio::spawn(async move {
            let mut acked = Vec::new();
            for i in 0.. {
                let body = json!({"repo": DID, "collection": "app.test.load", "rkey": format!("w{w}-{i}"), "record": {"i": i}});
                let sent = srv
                    .client
                    .post(srv.xrpc("com.atproto.repo.createRecord"))
                    .bearer_auth(common::TOKEN)
                    .json(&body)
                    .send()
                    .await;
                match sent {
                    Ok(resp) if resp.status() == 200 => acked.push(format!("w{w}-{i}")),
                    Ok(resp) => panic!("unexpected status {}", resp.status()),
                    Err(_) => break, // the server is going away
                }
            }
            acked
        }));
    }
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    // Returns once the requests in flight are answered.
    srv.stop().await;
    let mut acked = Vec::new();
    for w in writers {
        acked.extend(w.await.unwrap());
    }
    kv.close().await.unwrap();
    assert!(acked.len() > 10, "only {} writes acknowledged", acked.len());

    let kv = common::slate(dir).await;
    let repos = repo::Repos::new(Arc::new(store::Store::new(kv.clone())), common::env());
    let repo = repos.open(DID).await.unwrap();
    let stored = repo
        .list_keys("app.test.load", None, usize::MAX)
        .await
        .unwrap();
    for rkey in &acked {
        assert!(stored.contains(rkey), "acknowledged {rkey} is missing");
    }
    kv.close().await.unwrap();
}
