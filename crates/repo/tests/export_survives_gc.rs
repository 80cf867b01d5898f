//! An export writes the head as of its start. Here, while it waits after
//! its first blocks, commits change or delete every record and a garbage
//! collection keeps only the newest commit, deleting the exported tree
//! from every retained commit's reach. The export holds on to the commit
//! it writes (`Store::pin`), so it finishes, and the file imports as the
//! repository was when the export began.

mod common;

use std::sync::Arc;

use repo::{Repository, Write};
use serde_json::{Value, json};
use store::{MemoryKv, Retention};

const DID: &str = "did:example:export";
const ITEMS: &str = "app.test.item";

fn put(rkey: String, n: u32) -> Write {
    Write::Update {
        collection: ITEMS.into(),
        rkey,
        value: json!({ "n": n, "text": "an item long enough to be stored as a block of its own" }),
        swap_record: None,
    }
}

async fn records(repo: &Repository<MemoryKv>) -> Vec<(String, Value)> {
    repo.list_records(ITEMS, None, false, usize::MAX)
        .await
        .unwrap()
        .into_iter()
        .map(|(rkey, r)| (rkey, r.to_json()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_outlives_the_collection_of_the_tree_it_writes() {
    let repos = common::repos();
    let repo = repos.create(DID).await.unwrap();
    for chunk in (0..2000u32).collect::<Vec<_>>().chunks(500) {
        let writes = chunk.iter().map(|&i| put(format!("r{i:05}"), i)).collect();
        repo.apply_writes(writes, None).await.unwrap();
    }
    let before = records(&repo).await;

    // The export waits in its progress callback after its first blocks.
    let (mut paused, mut pause) = common::Paused::new();
    let export = {
        let repo = Arc::clone(&repo);
        tokio::spawn(async move {
            repo.export_car(Vec::new(), None, move |blocks| pause.once(blocks >= 3))
                .await
        })
    };
    paused.reached().await;

    // Every record changed or deleted, over several commits.
    let keys: Vec<String> = before.iter().map(|(k, _)| k.clone()).collect();
    for (c, chunk) in keys.chunks(250).enumerate() {
        let writes = chunk
            .iter()
            .enumerate()
            .map(|(i, rkey)| {
                if (c + i) % 3 == 0 {
                    Write::Delete {
                        collection: ITEMS.into(),
                        rkey: rkey.clone(),
                        swap_record: None,
                    }
                } else {
                    put(rkey.clone(), 10_000 + i as u32)
                }
            })
            .collect();
        repo.apply_writes(writes, None).await.unwrap();
    }
    let report = repos.store().gc(Retention::Last(1), |_| {}).await.unwrap();
    assert!(
        report.deleted > 0 && report.commits_dropped > 0,
        "the collection dropped the old commits and deleted blocks: {report:?}"
    );

    paused.release.send(()).unwrap();
    let (car, _) = export.await.unwrap().expect("the export reads its tree");
    let fresh = common::repos();
    fresh.import_car(&car[..], Some(DID)).await.unwrap();
    let imported = records(&fresh.open(DID).await.unwrap()).await;
    assert_eq!(imported, before, "the file holds the repository as it was");
}
