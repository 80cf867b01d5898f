//! Crash test for field indexes on SlateDB: a child process creates,
//! updates and deletes records of a collection with a keyword and an
//! integer index (one commit each), and is killed with SIGKILL at random
//! moments. After each kill the store is reopened: every index equals a
//! rebuild from the records (`check`), every acknowledged record is
//! counted, and a read-only opener answers queries as the writer does.
//!
//! The child is this test binary itself, run with `DATAREPO_INDEX_CRASH_CHILD`.

use crate::common;

use std::{sync::Arc, time::Duration};

use repo::{IndexKind, Repos, Write};
use serde_json::json;
use store::{SlateKv, Store};

const DID: &str = "did:web:index-crash.example";
const POST: &str = "app.bsky.feed.post";
const LANGS: [&str; 3] = ["en", "fr", "de"];

/// The child: declares the indexes once, then writes forever, printing
/// `ACK <n>` after each acknowledged commit, `n` the records created so far.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_crash_child() {
    let Ok(dir) = std::env::var("DATAREPO_INDEX_CRASH_CHILD") else {
        return;
    };
    let kv = SlateKv::open_local(std::path::Path::new(&dir))
        .await
        .unwrap();
    let repos = Repos::new(Arc::new(Store::new(kv)), common::env());
    let repo = match repos.open(DID).await {
        Ok(repo) => repo,
        Err(_) => repos.create(DID).await.unwrap(),
    };
    if repo.indexes(Some(POST)).await.unwrap().len() < 2 {
        // Possibly half-built before a kill: dropped and built again.
        for (path, kind) in [("langs", IndexKind::Keyword), ("likes", IndexKind::Integer)] {
            let _ = repo.drop_index(POST, path).await;
            repo.add_index(POST, path, kind, |_| {}).await.unwrap();
        }
    }
    let mut n = repo.list_keys(POST, None, usize::MAX).await.unwrap().len();
    loop {
        let mut writes = vec![Write::Create {
            collection: POST.into(),
            rkey: None,
            value: json!({"langs": [LANGS[n % 3], LANGS[n % 2]], "likes": n as i64 - 50}),
        }];
        let keys = repo.list_keys(POST, None, 8).await.unwrap();
        if let Some(k) = keys.get(n % 8) {
            writes.push(if n % 5 == 0 {
                Write::Delete {
                    collection: POST.into(),
                    rkey: k.clone(),
                    swap_record: None,
                }
            } else {
                Write::Update {
                    collection: POST.into(),
                    rkey: k.clone(),
                    value: json!({"langs": LANGS[n % 3], "likes": [n, -(n as i64)]}),
                    swap_record: None,
                }
            });
        }
        repo.apply_writes(writes, None).await.unwrap();
        n += 1;
        println!("ACK {n}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn indexes_equal_a_rebuild_after_sigkill() {
    if std::env::var_os("DATAREPO_INDEX_CRASH_CHILD").is_some() {
        return;
    }
    let tmp = testkit::tempdir("index-crash");
    let dir = tmp.path();
    let mut rng = testkit::Rng(0x1dec5);
    const ROUNDS: usize = 5;
    let mut acked_total = 0;
    for round in 0..ROUNDS {
        let acked = testkit::run_then_kill(
            concat!(module_path!(), "::index_crash_child"),
            "DATAREPO_INDEX_CRASH_CHILD",
            dir,
            Duration::from_millis(500 + rng.below(700)),
        );
        acked_total = acked_total.max(acked);
        let kv = SlateKv::open_local(dir).await.unwrap();
        let repos = Repos::new(Arc::new(Store::new(kv.clone())), common::env());
        let report = repos.check(DID, |_| {}).await.unwrap();
        assert!(report.is_intact(), "round {round}: {:#?}", report.problems);
        let repo = repos.open(DID).await.unwrap();
        let records = repo.list_keys(POST, None, usize::MAX).await.unwrap().len() as u64;
        if repo.indexes(Some(POST)).await.unwrap().len() == 2 {
            assert_eq!(repo.count(POST, None).await.unwrap(), records);
            let en = repo.count(POST, Some(r#"langs = "en""#)).await.unwrap();
            let not_en = repo.count(POST, Some(r#"not langs = "en""#)).await.unwrap();
            assert_eq!(en + not_en, records, "round {round}");
            // A reader of the same files answers the same.
            let reader = SlateKv::open_reader(
                &store::Location::Local(dir.to_path_buf()),
                Duration::from_millis(100),
            )
            .await
            .unwrap();
            let readers = Repos::new(Arc::new(Store::new(reader.clone())), common::env());
            let r = readers.open(DID).await.unwrap();
            assert_eq!(r.count(POST, Some(r#"langs = "en""#)).await.unwrap(), en);
            assert_eq!(
                r.stats(POST, "likes", None).await.unwrap(),
                repo.stats(POST, "likes", None).await.unwrap()
            );
            reader.close().await.unwrap();
        }
        kv.close().await.unwrap();
    }
    assert!(acked_total > 0, "the child never acknowledged a commit");
    eprintln!("{acked_total} commits acknowledged over {ROUNDS} SIGKILLs; indexes equal rebuilds");
}
