//! An index added while a writer commits without pause: the catch-up goes
//! round beside the writer until what is left is small, and only that is
//! applied with commits held (the build's last progress report), however
//! many commits land meanwhile; the index then answers as the records do.

use std::sync::{
    Arc, Mutex,
    atomic::{AtomicBool, AtomicU64, Ordering},
};

use repo::{Env, IndexKind, IndexProgress, MAX_HELD_CHANGES, Repos, Write};
use serde_json::json;
use store::{MemoryKv, Store};

const ITEMS: &str = "app.test.item";

fn creates(from: u64, n: u64) -> Vec<Write> {
    (from..from + n)
        .map(|i| Write::Create {
            collection: ITEMS.into(),
            rkey: Some(format!("r{i:07}")),
            value: json!({ "n": i % 10 }),
        })
        .collect()
}

/// The changes the catch-up may hold commits for after `rounds` rounds
/// beside them, as `docs/indexes.md` states it: 256, doubled after every
/// 16 rounds that did not come down to it, at most `MAX_HELD_CHANGES`.
fn held_bound(rounds: u64) -> u64 {
    (256u64 << (rounds / 16).min(6)).min(MAX_HELD_CHANGES as u64)
}

#[test]
fn a_nonstop_writer_waits_only_for_the_last_few_changes() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let t = Arc::new(AtomicU64::new(1_767_225_600_000_000));
        let env = Env::new(move || t.fetch_add(1000, Ordering::Relaxed), 7);
        let repos = Repos::new(Arc::new(Store::new(MemoryKv::new())), env);
        let repo = repos.create("did:plc:catchup").await.unwrap();
        for batch in 0..20 {
            repo.apply_writes(creates(batch * 500, 500), None)
                .await
                .unwrap();
        }

        // The writer: commits of 60 records, one after another, until the
        // index is declared.
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (repo, stop) = (Arc::clone(&repo), Arc::clone(&stop));
            tokio::spawn(async move {
                let mut next = 10_000;
                let mut commits = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    repo.apply_writes(creates(next, 60), None).await.unwrap();
                    next += 60;
                    commits += 1;
                    tokio::task::yield_now().await;
                }
                commits
            })
        };
        let reports: Arc<Mutex<Vec<IndexProgress>>> = Arc::default();
        let seen = Arc::clone(&reports);
        repo.add_index(ITEMS, "n", IndexKind::Integer, move |p| {
            seen.lock().unwrap().push(p);
        })
        .await
        .unwrap();
        let commits_during_build = {
            stop.store(true, Ordering::Relaxed);
            writer.await.unwrap()
        };
        assert!(commits_during_build > 0, "the writer never committed");

        let reports = reports.lock().unwrap().clone();
        let catching_up: Vec<u64> = reports
            .iter()
            .filter(|p| p.behind > 0)
            .map(|p| p.behind)
            .collect();
        let last = *reports.last().unwrap();
        assert!(last.declared && reports.iter().filter(|p| p.declared).count() == 1);
        let held = last.behind;
        let rounds_beside = catching_up.len() as u64;
        assert!(
            held <= held_bound(rounds_beside),
            "{held} changes applied with commits held after {rounds_beside} rounds: {catching_up:?}"
        );

        // The index answers as the records do.
        let total = repo.record_count(ITEMS).await.unwrap();
        assert_eq!(repo.count(ITEMS, Some("n >= 0")).await.unwrap(), total);
        let all = repo
            .list_records(ITEMS, None, false, usize::MAX)
            .await
            .unwrap();
        assert_eq!(all.len() as u64, total);
        let sevens = all
            .iter()
            .filter(|(_, r)| r.to_json()["n"] == json!(7))
            .count() as u64;
        assert_eq!(repo.count(ITEMS, Some("n = 7")).await.unwrap(), sevens);
    });
}
