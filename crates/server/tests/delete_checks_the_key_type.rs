//! `deleteRecord` refuses a record key its collection's key type rules out,
//! as a commit (`applyWrites#delete`, the CLI's `rm`) does, also when no
//! record has that key; a fitting key that names no record stays a no-op
//! (`{}`), as AT Protocol has it.

use crate::common;

use common::TestServer;
use serde_json::json;

const DID: &str = "did:web:delete-key.example";
const POST: &str = "app.example.post";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_the_collection_rules_out_is_refused_everywhere() {
    let srv = TestServer::memory().await;
    let (s, body) = srv
        .post(
            "dev.datarepo.defineCollection",
            &json!({"repo": DID, "collection": POST, "key": "tid"}),
        )
        .await;
    assert_eq!(s, 200, "{body}");

    let (s, delete) = srv
        .post(
            "com.atproto.repo.deleteRecord",
            &json!({"repo": DID, "collection": POST, "rkey": "not-a-tid"}),
        )
        .await;
    let (s_apply, apply) = srv
        .post(
            "com.atproto.repo.applyWrites",
            &json!({"repo": DID, "writes": [{"$type": "com.atproto.repo.applyWrites#delete",
                                             "collection": POST, "rkey": "not-a-tid"}]}),
        )
        .await;
    assert_eq!(s_apply, 400, "{apply}");
    assert_eq!((s, &delete["error"]), (400, &apply["error"]), "{delete}");
    assert!(
        delete["message"].as_str().unwrap().contains("tid"),
        "{delete}"
    );

    // A key that fits but names no record: nothing to delete, no commit.
    let (s, absent) = srv
        .post(
            "com.atproto.repo.deleteRecord",
            &json!({"repo": DID, "collection": POST, "rkey": "3jzfcijpj2z2a"}),
        )
        .await;
    assert_eq!((s, absent), (200, json!({})));
}
