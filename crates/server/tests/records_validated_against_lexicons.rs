//! createRecord, putRecord and applyWrites validate records against their
//! collection's Lexicon, following the reference PDS's `validate`
//! parameter; an invalid record is HTTP 400 InvalidRecord and nothing is
//! written.

use crate::common;

use std::sync::Arc;

use common::{DID, TestServer};
use serde_json::json;

const NOTE: &str = "com.example.note";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_follow_the_validate_parameter() {
    let repos = Arc::new(repo::Repos::new(
        Arc::new(store::Store::new(store::MemoryKv::new())),
        common::env(),
    ));
    let r = repos.create(DID).await.unwrap();
    r.add_lexicons(vec![
        json!({"lexicon": 1, "id": NOTE, "defs": {"main": {"type": "record", "key": "tid",
            "record": {"type": "object", "required": ["text"], "properties": {
                "text": {"type": "string", "maxGraphemes": 10},
                "tags": {"type": "array", "items": {"type": "ref", "ref": "com.example.defs#tag"}}}}}}}),
        json!({"lexicon": 1, "id": "com.example.defs", "defs": {
            "tag": {"type": "string", "maxLength": 8}}}),
    ])
    .await
    .unwrap();
    let srv = TestServer::start_repos(Arc::clone(&repos), common::config()).await;
    let create = |record: serde_json::Value, validate: Option<bool>| {
        let mut body = json!({"repo": DID, "collection": NOTE, "record": record});
        if let Some(v) = validate {
            body["validate"] = json!(v);
        }
        body
    };
    let head = || async { r.head().await.unwrap().commit };

    // Unset: validated, "valid".
    let (s, out) = srv
        .post(
            "com.atproto.repo.createRecord",
            &create(json!({"text": "hi", "tags": ["a"]}), None),
        )
        .await;
    assert_eq!(
        (s, &out["validationStatus"]),
        (200, &json!("valid")),
        "{out}"
    );

    // Invalid: 400 InvalidRecord naming the path and rule; nothing written.
    let before = head().await;
    let (s, out) = srv
        .post(
            "com.atproto.repo.createRecord",
            &create(json!({"text": "hi", "tags": ["far too long"]}), None),
        )
        .await;
    assert_eq!(s, 400);
    assert_eq!(out["error"], "InvalidRecord");
    assert_eq!(
        out["message"],
        "Record/tags/0 must not be longer than 8 characters"
    );
    assert_eq!(head().await, before, "nothing written");

    // validate: false stores it unvalidated.
    let (s, out) = srv
        .post(
            "com.atproto.repo.createRecord",
            &create(
                json!({"text": "this is more than ten graphemes"}),
                Some(false),
            ),
        )
        .await;
    assert_eq!(
        (s, &out["validationStatus"]),
        (200, &json!("unknown")),
        "{out}"
    );

    // putRecord validates too.
    let (s, out) = srv
        .post(
            "com.atproto.repo.putRecord",
            &json!({"repo": DID, "collection": NOTE, "rkey": "3jui7kd54zh2y", "record": {"tags": []}}),
        )
        .await;
    assert_eq!(
        (s, out["message"].as_str()),
        (400, Some("Record must have the property \"text\""))
    );

    // A collection without a Lexicon: "unknown" unless validate is true.
    let other = |validate: Option<bool>| {
        let mut b = json!({"repo": DID, "collection": "com.example.other", "record": {"x": 1}});
        if let Some(v) = validate {
            b["validate"] = json!(v);
        }
        b
    };
    let (s, out) = srv
        .post("com.atproto.repo.createRecord", &other(None))
        .await;
    assert_eq!((s, &out["validationStatus"]), (200, &json!("unknown")));
    let (s, out) = srv
        .post("com.atproto.repo.createRecord", &other(Some(true)))
        .await;
    assert_eq!(s, 400);
    assert_eq!(out["error"], "InvalidRecord");
    assert_eq!(out["message"], "Lexicon not found: lex:com.example.other");

    // applyWrites: one bad record and none is written.
    let before = head().await;
    let write = |text: &str| json!({"$type": "com.atproto.repo.applyWrites#create", "collection": NOTE, "value": {"text": text}});
    let (s, out) = srv
        .post(
            "com.atproto.repo.applyWrites",
            &json!({"repo": DID, "writes": [write("fine"), write("not fine at all")]}),
        )
        .await;
    assert_eq!((s, &out["error"]), (400, &json!("InvalidRecord")), "{out}");
    assert_eq!(head().await, before);
    let (s, out) = srv
        .post(
            "com.atproto.repo.applyWrites",
            &json!({"repo": DID, "writes": [write("fine"), write("also fine")]}),
        )
        .await;
    assert_eq!(s, 200, "{out}");
    for result in out["results"].as_array().unwrap() {
        assert_eq!(result["validationStatus"], "valid");
    }
    srv.stop().await;
}
