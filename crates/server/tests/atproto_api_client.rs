//! The official client, `@atproto/api` (npm), creates, reads, updates,
//! lists, batch-writes and deletes records through its generated
//! `com.atproto.repo.*` methods, and `@ipld/car` reads `sync.getRepo`.

use crate::common;

use common::{DID, TOKEN, TestServer};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_client_works_unchanged() {
    let srv = TestServer::memory().await;
    let input = json!({"service": srv.url, "token": TOKEN, "repo": DID}).to_string() + "\n";
    let lines =
        tokio::task::spawn_blocking(move || testkit::run_node("atproto-client.mjs", &input))
            .await
            .unwrap();
    let steps: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for s in &steps {
        assert!(
            s.get("error").is_none() || s["step"] == "staleSwap" || s["step"] == "deleteRecord",
            "{s}"
        );
    }
    let step = |name: &str| {
        steps
            .iter()
            .find(|s| s["step"] == name)
            .unwrap_or_else(|| panic!("step {name} did not run: {steps:?}"))
            .clone()
    };
    let created = step("createRecord");
    let rkey = created["uri"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    assert_eq!(step("getRecord")["text"], "hello from @atproto/api");
    assert_eq!(step("getRecord")["cid"], created["cid"]);
    assert_ne!(step("putRecord")["cid"], created["cid"]);
    assert_eq!(step("staleSwap")["rejected"], true);
    assert_eq!(step("staleSwap")["error"], "InvalidSwap");
    assert_eq!(step("applyWrites")["results"], 3);
    let list = step("listRecords");
    // TIDs start with a digit: the created record sorts before "batch…".
    assert_eq!(
        list["pages"],
        json!([[rkey, "batch1"], ["batch2", "batch3"]])
    );
    assert_eq!(list["cursorAfterLast"], Value::Null);
    assert_eq!(
        list["reversed"],
        json!(["batch3", "batch2", "batch1", rkey])
    );
    assert_eq!(step("deleteRecord")["gone"], true);
    assert_eq!(step("deleteRecord")["error"], "RecordNotFound");
    assert_eq!(
        step("describeRepo")["collections"],
        json!(["app.bsky.feed.post"])
    );
    let latest = step("getLatestCommit");
    let car = step("getRepo");
    assert_eq!(car["roots"], json!([latest["cid"]]));
    // commit + at least one shard + 3 records
    assert!(car["blocks"].as_u64().unwrap() >= 5, "{car}");
    srv.stop().await;
}
