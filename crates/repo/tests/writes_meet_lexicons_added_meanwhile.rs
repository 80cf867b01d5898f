//! A write is validated when it arrives, before it waits for the
//! repository's lock. A Lexicon that lands in between (added through the
//! same handle, or imported through another) applies to it all the same:
//! the commit validates it again against the Lexicons it meets.

use crate::common;

use std::sync::Arc;

use repo::{Error, Validation, ValidationStatus, Write};
use serde_json::{Value, json};

const DID: &str = "did:example:lexicons";
const NOTES: &str = "com.example.note";

fn note_lexicon() -> Value {
    json!({"lexicon": 1, "id": NOTES, "defs": {"main": {"type": "record", "key": "any",
        "record": {"type": "object", "required": ["text"],
                   "properties": {"text": {"type": "string", "maxLength": 10}}}}}})
}

fn note(rkey: &str, text: &str) -> Vec<Write> {
    vec![Write::Create {
        collection: NOTES.into(),
        rkey: Some(rkey.into()),
        value: json!({ "text": text }),
    }]
}

const TOO_LONG: &str = "far longer than ten characters";

/// A write that waits for the lock while `add_lexicons` holds it: its
/// outcome.
async fn write_beside_lexicon_addition(text: &str) -> Result<repo::CommitResult, Error> {
    let kv = common::PausingKv::new(common::PauseAt::Write);
    let repos = repo::Repos::new(Arc::new(store::Store::new(kv.clone())), common::env());
    let repo = repos.create(DID).await.unwrap();
    // The addition stops at its first write, holding the lock.
    let release = kv.arm();
    let adding = tokio::spawn({
        let repo = Arc::clone(&repo);
        async move { repo.add_lexicons(vec![note_lexicon()]).await }
    });
    kv.reached().await;
    // Polled once, the write is checked (no Lexicon yet) and waits.
    let mut write = Box::pin(repo.apply_writes_validated(note("n", text), None, Validation::Auto));
    assert!(futures::FutureExt::now_or_never(&mut write).is_none());
    release.send(()).unwrap();
    adding.await.unwrap().unwrap();
    write.await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_waiting_while_a_lexicon_is_added_is_validated_against_it() {
    let refused = write_beside_lexicon_addition(TOO_LONG).await;
    assert!(
        matches!(refused, Err(Error::LexiconValidation(_))),
        "{refused:?}"
    );
    let valid = write_beside_lexicon_addition("short").await.unwrap();
    assert_eq!(valid.results[0].validation, Some(ValidationStatus::Valid));
}

#[tokio::test]
async fn a_handle_an_import_left_behind_validates_against_the_imported_lexicon() {
    // The source: a note, then the Lexicon.
    let source = common::repos();
    let repo = source.create(DID).await.unwrap();
    repo.apply_writes(note("before", TOO_LONG), None)
        .await
        .unwrap();
    let (before, _) = repo.export_history_car(Vec::new(), |_| {}).await.unwrap();
    repo.add_lexicons(vec![note_lexicon()]).await.unwrap();
    repo.apply_writes(note("after", "short"), None)
        .await
        .unwrap();
    let (after, _) = repo.export_history_car(Vec::new(), |_| {}).await.unwrap();

    // The target: a handle opened before the import that brings the
    // Lexicon.
    let target = common::repos();
    target.import_car(&before[..], Some(DID)).await.unwrap();
    let old_handle = target.open(DID).await.unwrap();
    target.import_car(&after[..], Some(DID)).await.unwrap();
    assert!(
        target.open(DID).await.unwrap().lexicons().has_record(NOTES),
        "the import brought the Lexicon"
    );

    let refused = old_handle
        .apply_writes_validated(note("late", TOO_LONG), None, Validation::Auto)
        .await;
    assert!(
        matches!(refused, Err(Error::LexiconValidation(_))),
        "{refused:?}"
    );
    let valid = old_handle
        .apply_writes_validated(note("late", "short"), None, Validation::Auto)
        .await
        .unwrap();
    assert_eq!(valid.results[0].validation, Some(ValidationStatus::Valid));
}
