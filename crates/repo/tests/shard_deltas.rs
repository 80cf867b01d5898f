//! Shard versions stored as deltas (`docs/store.md`): a store that keeps
//! them reads back, from storage alone, exactly what it was given, before
//! and after garbage collection, and also when commits land while a
//! collection runs.

use crate::common;

use std::sync::Arc;

use common::{PauseAt, PausingKv, post_rkey as rkey};
use keycodec::RecordType;
use repo::{Repos, Write};
use serde_json::json;
use store::{Kv, MemoryKv, Retention, Store};

const DID: &str = "did:web:example.com";
const POST: &str = "app.bsky.feed.post";
const RECORDS: usize = 200;

/// `n` commits, each rewriting one record of a 200-record collection (the
/// same one with `same`): the shard holding them keeps its size and
/// changes in one link.
async fn edit<K: Kv>(repos: &Repos<K>, round: usize, n: usize, same: bool) {
    let repo = repos.open(DID).await.unwrap();
    for i in 0..n {
        let which = if same {
            0
        } else {
            (round * 7 + i * 13) % RECORDS
        };
        repo.apply_writes(
            vec![Write::Update {
                collection: POST.into(),
                rkey: rkey(which),
                value: json!({ "text": format!("edit {round}.{i}") }),
                swap_record: None,
            }],
            None,
        )
        .await
        .unwrap();
    }
}

async fn deltas_stored(kv: &impl Kv) -> usize {
    kv.scan(&RecordType::BlockDelta.range(), false, usize::MAX)
        .await
        .unwrap()
        .len()
}

/// The repository's CAR, read through a new store over `kv`: nothing comes
/// from the writer's cache.
async fn export_from_storage<K: Kv + Clone>(kv: &K) -> Vec<u8> {
    let fresh = Repos::new(Arc::new(Store::new(kv.clone())), common::env());
    let report = fresh.check(DID, |_| {}).await.unwrap();
    assert!(report.is_intact(), "{:#?}", report.problems);
    let repo = fresh.open(DID).await.unwrap();
    let (car, _) = repo.export_car(Vec::new(), None, |_| {}).await.unwrap();
    car
}

/// A repository over `kv` holding 200 records, written in one commit.
async fn with_records<K: Kv + Clone>(kv: &K) -> (Repos<K>, Arc<repo::Repository<K>>) {
    let repos = Repos::new(Arc::new(Store::new(kv.clone())), common::env());
    let repo = repos.create(DID).await.unwrap();
    repo.apply_writes(common::posts(POST, RECORDS), None)
        .await
        .unwrap();
    (repos, repo)
}

#[test]
fn deltas_read_back_from_storage_before_and_after_gc() {
    common::rt().block_on(async {
        let kv = MemoryKv::new();
        let (repos, repo) = with_records(&kv).await;
        edit(&repos, 0, 40, false).await;
        assert!(deltas_stored(&kv).await >= 30, "shard versions are deltas");

        let before = export_from_storage(&kv).await;
        let (writer_car, _) = repo.export_car(Vec::new(), None, |_| {}).await.unwrap();
        assert_eq!(before, writer_car);

        let report = repos.store().gc(Retention::Last(1), |_| {}).await.unwrap();
        assert!(report.deleted > 0, "{report:?}");
        assert_eq!(export_from_storage(&kv).await, before);

        // Later commits build on what the collection kept.
        edit(&repos, 1, 20, false).await;
        let (writer_car, _) = repo.export_car(Vec::new(), None, |_| {}).await.unwrap();
        assert_eq!(export_from_storage(&kv).await, writer_car);
    });
}

/// The case that needs the collection to keep anchors it finds only by
/// reading blocks written after its listing: the listed head shard is a
/// delta, and commits made while the collection runs replace it (so it is
/// not reachable from the roots) with deltas of the same anchor.
#[test]
fn commits_between_listing_and_roots_keep_their_anchor() {
    common::rt().block_on(async {
        let kv = PausingKv::new(PauseAt::HeadScan);
        let (repos, repo) = with_records(&kv).await;
        edit(&repos, 0, 1, true).await;
        assert!(deltas_stored(&kv).await > 0);

        let release = kv.arm();
        let gc = repos.store().gc(Retention::Last(1), |_| {});
        let commits = async {
            kv.reached().await;
            edit(&repos, 1, 10, true).await;
            release.send(()).unwrap();
        };
        let (report, ()) = tokio::join!(gc, commits);
        // The anchor of the new head shard: reachable from no root.
        assert!(report.unwrap().anchors > 0);
        let (writer_car, _) = repo.export_car(Vec::new(), None, |_| {}).await.unwrap();
        assert_eq!(export_from_storage(&kv).await, writer_car);
    });
}
