//! A long reader reads the commit it will read for a while and pins it in
//! one window (`Store::pin_window`). A collection that reaches its roots
//! between the read and the pin waits for the window, so the pin counts:
//! the commit stays readable although newer commits left it behind and
//! retention drops it.

use crate::common;

use std::{sync::Arc, time::Duration};

use repo::Write;
use serde_json::json;
use store::{GcProgress, Retention};

const DID: &str = "did:example:window";
const ITEMS: &str = "app.test.item";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collection_waits_for_an_open_pin_window() {
    let repos = common::repos();
    let repo = repos.create(DID).await.unwrap();
    let writes = (0..300)
        .map(|i| Write::Create {
            collection: ITEMS.into(),
            rkey: Some(format!("r{i:04}")),
            value: json!({ "n": i, "text": "an item long enough to be stored as a block of its own" }),
        })
        .collect();
    repo.apply_writes(writes, None).await.unwrap();
    let records: Vec<_> = repo
        .list_records(ITEMS, None, false, usize::MAX)
        .await
        .unwrap()
        .into_iter()
        .map(|(_, r)| r.cid())
        .collect();
    let store = Arc::clone(repos.store());

    // A collection keeping only the newest commit, stopped while it lists
    // the stored blocks (before it reads its roots).
    let (mut paused, mut pause) = common::Paused::new();
    let mut gc = tokio::spawn({
        let store = Arc::clone(&store);
        async move {
            store
                .gc(Retention::Last(1), move |p| {
                    pause.once(matches!(p, GcProgress::Listing { .. }));
                })
                .await
        }
    });
    paused.reached().await;

    // The reader reads the head in a window; then a commit deletes every
    // record, so nothing retained reaches the records of the head it read.
    let window = store.pin_window().await;
    let read = repo.head().await.unwrap();
    let deletes = (0..300)
        .map(|i| Write::Delete {
            collection: ITEMS.into(),
            rkey: format!("r{i:04}"),
            swap_record: None,
        })
        .collect();
    repo.apply_writes(deletes, None).await.unwrap();

    // The collection goes on to its roots, and waits there for the window.
    paused.release.send(()).unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(500), &mut gc)
            .await
            .is_err(),
        "the collection read its roots while a pin window was open"
    );
    let pin = window.pin(read.commit);
    drop(window);
    let report = gc.await.unwrap().unwrap();
    assert!(report.commits_dropped > 0, "{report:?}");
    for cid in &records {
        assert!(
            store.get_block(cid).await.unwrap().is_some(),
            "record {cid} of the pinned commit was deleted"
        );
    }

    // Unpinned, the next collection deletes them: the pin was what kept them.
    drop(pin);
    store.gc(Retention::Last(1), |_| {}).await.unwrap();
    for cid in &records {
        assert!(store.get_block(cid).await.unwrap().is_none());
    }
}
