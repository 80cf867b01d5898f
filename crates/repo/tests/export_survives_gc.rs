//! An export writes the head as of its start (and, since a rev, every
//! commit from there). Here, while it waits after its first blocks,
//! commits change or delete every record and a garbage collection keeps
//! only the newest commit, deleting what the export writes from every
//! retained commit's reach. The export holds on to the commits it writes
//! (`Store::pin_window`), so it finishes, and the file imports as the repository
//! was when the export began.

use crate::common;

use std::sync::Arc;

use repo::{Repos, Repository, Write};
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

/// `n` records created (or set) in commits of 500, starting at `from`.
async fn create(repo: &Repository<MemoryKv>, from: u32, n: u32) {
    for chunk in (from..from + n).collect::<Vec<_>>().chunks(500) {
        let writes = chunk.iter().map(|&i| put(format!("r{i:05}"), i)).collect();
        repo.apply_writes(writes, None).await.unwrap();
    }
}

/// Every record changed or deleted, over several commits; then a
/// collection keeping only the newest commit.
async fn churn_and_collect(repos: &Repos<MemoryKv>, repo: &Repository<MemoryKv>) {
    let keys: Vec<String> = records(repo).await.into_iter().map(|(k, _)| k).collect();
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
}

/// Exports (everything, or since `since`), waiting after its first blocks
/// while [`churn_and_collect`] runs; the file.
async fn export_beside_collection(
    repos: &Repos<MemoryKv>,
    repo: &Arc<Repository<MemoryKv>>,
    since: Option<rkey::Tid>,
) -> Vec<u8> {
    let (mut paused, mut pause) = common::Paused::new();
    let export = {
        let repo = Arc::clone(repo);
        tokio::spawn(async move {
            repo.export_car(Vec::new(), since, move |blocks| pause.once(blocks >= 3))
                .await
        })
    };
    paused.reached().await;
    churn_and_collect(repos, repo).await;
    paused.release.send(()).unwrap();
    let (car, _) = export.await.unwrap().expect("the export reads its commits");
    car
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_outlives_the_collection_of_the_tree_it_writes() {
    let repos = common::repos();
    let repo = repos.create(DID).await.unwrap();
    create(&repo, 0, 2000).await;
    let before = records(&repo).await;

    let car = export_beside_collection(&repos, &repo, None).await;
    let fresh = common::repos();
    fresh.import_car(&car[..], Some(DID)).await.unwrap();
    let imported = records(&fresh.open(DID).await.unwrap()).await;
    assert_eq!(imported, before, "the file holds the repository as it was");
}

/// An export since a rev writes each commit from there to the head, and
/// keeps them all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_incremental_export_outlives_the_collection_of_the_commits_it_writes() {
    let repos = common::repos();
    let repo = repos.create(DID).await.unwrap();
    create(&repo, 0, 1000).await;
    let base = repo.head().await.unwrap();
    let (whole, _) = repo.export_car(Vec::new(), None, |_| {}).await.unwrap();
    // Four commits since the base: 1,500 records more.
    create(&repo, 500, 2000).await;
    let before = records(&repo).await;

    let car = export_beside_collection(&repos, &repo, Some(base.rev)).await;
    let fresh = common::repos();
    fresh.import_car(&whole[..], Some(DID)).await.unwrap();
    fresh.import_car(&car[..], Some(DID)).await.unwrap();
    let imported = records(&fresh.open(DID).await.unwrap()).await;
    assert_eq!(imported, before, "the files hold the repository as it was");
}
