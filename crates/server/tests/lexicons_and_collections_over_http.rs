//! A running server's repository can be set up through its API, as the CLI
//! sets up a store: `dev.datarepo.putLexicons`, `deleteLexicon`,
//! `defineCollection` and `rebuildIndexes` (write token), with the answers
//! `datarepo lexicon add|rm`, `collection define` and `index rebuild` print.

use crate::common;

use common::TestServer;
use serde_json::{Value, json};

const DID: &str = "did:web:setup.example";
const NOTE: &str = "com.example.note";

fn note_lexicon(max_graphemes: u64) -> Value {
    json!({"lexicon": 1, "id": NOTE, "defs": {"main": {"type": "record", "key": "tid",
        "record": {"type": "object", "required": ["text"], "properties": {
            "text": {"type": "string", "maxGraphemes": max_graphemes},
            "tag": {"type": "ref", "ref": "com.example.defs#tag"}}}}}})
}

fn defs_lexicon() -> Value {
    json!({"lexicon": 1, "id": "com.example.defs", "defs": {
        "tag": {"type": "string", "maxLength": 8}}})
}

async fn create(
    srv: &TestServer,
    collection: &str,
    rkey: Option<&str>,
    record: Value,
) -> (u16, Value) {
    let mut body = json!({"repo": DID, "collection": collection, "record": record});
    if let Some(r) = rkey {
        body["rkey"] = json!(r);
    }
    srv.post("com.atproto.repo.createRecord", &body).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repository_is_set_up_through_the_api() {
    let srv = TestServer::memory().await;

    // Lexicons before the first record: the repository is created.
    let (s, report) = srv
        .post(
            "dev.datarepo.putLexicons",
            &json!({"repo": DID, "lexicons": [note_lexicon(10), defs_lexicon()]}),
        )
        .await;
    assert_eq!(s, 200, "{report}");
    assert_eq!(report["collection"], NOTE, "{report}");
    assert_eq!(report["key"], "tid", "{report}");
    assert_eq!(report["missingRefs"], json!([]), "{report}");
    let nsids: Vec<&Value> = report["lexicons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| &l["nsid"])
        .collect();
    assert_eq!(nsids, [NOTE, "com.example.defs"], "{report}");

    // Writes are validated against them, through the ref into the other.
    let (s, out) = create(
        &srv,
        NOTE,
        None,
        json!({"text": "hi", "tag": "much too long"}),
    )
    .await;
    assert_eq!((s, &out["error"]), (400, &json!("InvalidRecord")), "{out}");
    assert_eq!(
        out["message"],
        "Record/tag must not be longer than 8 characters"
    );
    let (s, out) = create(
        &srv,
        NOTE,
        Some("3kaaaaaaaaaa2"),
        json!({"text": "twelve chars"}),
    )
    .await;
    assert_eq!((s, &out["error"]), (400, &json!("InvalidRecord")), "{out}");
    let (s, out) = create(&srv, NOTE, Some("3kaaaaaaaaaa2"), json!({"text": "short"})).await;
    assert_eq!(
        (s, &out["validationStatus"]),
        (200, &json!("valid")),
        "{out}"
    );

    // All or none: a broken document among good ones adds nothing.
    let broken = json!({"lexicon": 1, "id": "com.example.broken", "defs": {
        "main": {"type": "string", "maxLength": "eight"}}});
    let (s, out) = srv
        .post(
            "dev.datarepo.putLexicons",
            &json!({"repo": DID, "lexicons": [note_lexicon(3), broken]}),
        )
        .await;
    assert_eq!(s, 400, "{out}");
    assert!(
        out["message"]
            .as_str()
            .unwrap()
            .contains("com.example.broken"),
        "{out}"
    );
    let (s, _) = create(&srv, NOTE, None, json!({"text": "four"})).await;
    assert_eq!(s, 200, "the first document was not added either");

    // Replacing the record Lexicon reports the existing records that fail.
    let (s, report) = srv
        .post(
            "dev.datarepo.putLexicons",
            &json!({"repo": DID, "lexicons": [note_lexicon(4)]}),
        )
        .await;
    assert_eq!(s, 200, "{report}");
    let entry = &report["lexicons"][0];
    assert_eq!(entry["replaced"], true, "{report}");
    assert_eq!(
        (&entry["checked"], &entry["invalid"]),
        (&json!(2), &json!(1)),
        "{report}"
    );
    assert_eq!(entry["failures"][0]["rkey"], "3kaaaaaaaaaa2", "{report}");
    assert_eq!(
        entry["failures"][0]["error"],
        "Record/text must not be longer than 4 graphemes"
    );

    // Removing it: writes are no longer validated; removing it again fails.
    let (s, out) = srv
        .post(
            "dev.datarepo.deleteLexicon",
            &json!({"repo": DID, "nsid": NOTE}),
        )
        .await;
    assert_eq!((s, out), (200, json!({"removed": NOTE})));
    let (s, out) = create(&srv, NOTE, None, json!({"text": "now as long as it likes"})).await;
    assert_eq!(
        (s, &out["validationStatus"]),
        (200, &json!("unknown")),
        "{out}"
    );
    let (s, out) = srv
        .post(
            "dev.datarepo.deleteLexicon",
            &json!({"repo": DID, "nsid": NOTE}),
        )
        .await;
    assert_eq!(
        (s, &out["error"]),
        (400, &json!("LexiconNotFound")),
        "{out}"
    );

    // A collection's key type.
    let settings = "com.example.settings";
    let (s, out) = srv
        .post(
            "dev.datarepo.defineCollection",
            &json!({"repo": DID, "collection": settings, "key": "literal:self"}),
        )
        .await;
    assert_eq!(
        (s, out),
        (
            200,
            json!({"collection": settings, "key": "literal:self", "keyType": "literal:self"})
        )
    );
    let (s, _) = create(&srv, settings, Some("other"), json!({})).await;
    assert_eq!(s, 400, "a key that breaks the collection's key type");
    let (s, _) = create(&srv, settings, Some("self"), json!({})).await;
    assert_eq!(s, 200);
    // Existing keys must fit a new key type; a malformed one is refused.
    let (s, out) = srv
        .post(
            "dev.datarepo.defineCollection",
            &json!({"repo": DID, "collection": settings, "key": "tid"}),
        )
        .await;
    assert_eq!(s, 400, "{out}");
    let (s, out) = srv
        .post(
            "dev.datarepo.defineCollection",
            &json!({"repo": DID, "collection": settings, "key": "sometimes"}),
        )
        .await;
    assert_eq!(s, 400, "{out}");

    // Rebuilding the field indexes answers what `index rebuild` prints.
    let (s, out) = srv
        .post(
            "dev.datarepo.addIndex",
            &json!({"repo": DID, "collection": NOTE, "path": "text", "kind": "keyword"}),
        )
        .await;
    assert_eq!(s, 200, "{out}");
    let (s, out) = srv
        .post("dev.datarepo.rebuildIndexes", &json!({"repo": DID}))
        .await;
    assert_eq!(s, 200, "{out}");
    assert_eq!(
        (&out["rebuilt"], &out["records"]),
        (&json!(true), &json!(3))
    );
    let (s, out) = srv
        .get(
            "dev.datarepo.countRecords",
            &[
                ("repo", DID),
                ("collection", NOTE),
                ("where", r#"text = "four""#),
            ],
        )
        .await;
    assert_eq!((s, out), (200, json!({"count": 1})));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setting_up_needs_the_write_token() {
    let srv = TestServer::memory().await;
    for (method, body) in [
        (
            "dev.datarepo.putLexicons",
            json!({"repo": DID, "lexicons": [defs_lexicon()]}),
        ),
        (
            "dev.datarepo.deleteLexicon",
            json!({"repo": DID, "nsid": NOTE}),
        ),
        (
            "dev.datarepo.defineCollection",
            json!({"repo": DID, "collection": NOTE, "key": "tid"}),
        ),
        ("dev.datarepo.rebuildIndexes", json!({"repo": DID})),
    ] {
        let bytes = serde_json::to_vec(&body).unwrap();
        let (s, out) = srv.post_raw(method, bytes.clone(), None).await;
        assert_eq!(s, 401, "{method}: {out}");
        let (s, out) = srv.post_raw(method, bytes, Some("wrong")).await;
        assert_eq!(s, 401, "{method}: {out}");
    }
    // Nothing was created.
    let (s, out) = srv
        .get("com.atproto.repo.describeRepo", &[("repo", DID)])
        .await;
    assert_eq!(s, 400, "{out}");
}
