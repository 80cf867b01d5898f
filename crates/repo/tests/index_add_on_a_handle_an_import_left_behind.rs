//! A repository handle opened before an import moved the head on (the
//! import opens a new one; a caller may still hold the old) builds an
//! index added through it from the stored head, not the head it last saw:
//! the index counts the imported records too.

use crate::common;

use repo::{IndexKind, Write};
use serde_json::json;

const DID: &str = "did:example:handles";
const ITEMS: &str = "app.test.item";
const LANGS: [&str; 2] = ["en", "fr"];

fn creates(from: u32, to: u32) -> Vec<Write> {
    (from..to)
        .map(|i| Write::Create {
            collection: ITEMS.into(),
            rkey: Some(format!("r{i:04}")),
            value: json!({ "lang": LANGS[i as usize % 2] }),
        })
        .collect()
}

#[tokio::test]
async fn an_index_added_through_an_old_handle_counts_the_imported_records() {
    // The source: 100 records, then 100 more.
    let source = common::repos();
    let repo = source.create(DID).await.unwrap();
    repo.apply_writes(creates(0, 100), None).await.unwrap();
    let first = repo.head().await.unwrap();
    let (whole, _) = repo.export_car(Vec::new(), None, |_| {}).await.unwrap();
    repo.apply_writes(creates(100, 200), None).await.unwrap();
    let (since, _) = repo
        .export_car(Vec::new(), Some(first.rev), |_| {})
        .await
        .unwrap();

    // The target holds the first 100; a handle is opened; then the next
    // 100 are imported.
    let target = common::repos();
    target.import_car(&whole[..], Some(DID)).await.unwrap();
    let old_handle = target.open(DID).await.unwrap();
    assert_eq!(old_handle.head().await.unwrap().commit, first.commit);
    target.import_car(&since[..], Some(DID)).await.unwrap();

    let indexed = old_handle
        .add_index(ITEMS, "lang", IndexKind::Keyword, |_| {})
        .await
        .unwrap();
    assert_eq!(indexed, 200, "the records indexed");
    for handle in [&old_handle, &target.open(DID).await.unwrap()] {
        for lang in LANGS {
            let n = handle
                .count(ITEMS, Some(&format!("lang = {lang:?}")))
                .await
                .unwrap();
            assert_eq!(n, 100, "lang = {lang}");
        }
    }
}
