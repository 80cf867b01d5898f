//! Crash test with shard versions stored as deltas: a child process edits
//! records of one repository on SlateDB in a local directory, one commit
//! each, and is killed with SIGKILL at random moments. After each kill the
//! store is reopened: every acknowledged commit is in the log, and the
//! check reads every shard of the head (and, in the last round, of every
//! commit) back from storage, rebuilding each delta from its anchor.
//!
//! The child is this test binary itself, run with `DATAREPO_DELTA_CRASH_CHILD`.

use crate::common;

use std::{sync::Arc, time::Duration};

use repo::{CheckOptions, Repos, Write};
use serde_json::json;
use store::{Kv, SlateKv, Store};

const DID: &str = "did:web:crash.example";
const POST: &str = "app.bsky.feed.post";
const RECORDS: usize = 200;

/// The child: seeds 200 records once, then edits them forever, printing
/// `ACK <n>` after each acknowledged commit, `n` the commits in the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delta_crash_child() {
    let Ok(dir) = std::env::var("DATAREPO_DELTA_CRASH_CHILD") else {
        return;
    };
    let kv = SlateKv::open_local(std::path::Path::new(&dir))
        .await
        .unwrap();
    let repos = Repos::new(Arc::new(Store::new(kv)), common::env());
    let repo = match repos.open(DID).await {
        Ok(repo) => repo,
        Err(_) => {
            let repo = repos.create(DID).await.unwrap();
            repo.apply_writes(common::posts(POST, RECORDS), None)
                .await
                .unwrap();
            repo
        }
    };
    let mut commits = repo.log(usize::MAX).await.unwrap().len();
    loop {
        repo.apply_writes(
            vec![Write::Update {
                collection: POST.into(),
                rkey: common::post_rkey(commits * 7 % RECORDS),
                value: json!({ "text": format!("edit {commits}") }),
                swap_record: None,
            }],
            None,
        )
        .await
        .unwrap();
        commits += 1;
        println!("ACK {commits}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_commits_and_their_deltas_survive_sigkill() {
    if std::env::var_os("DATAREPO_DELTA_CRASH_CHILD").is_some() {
        return;
    }
    let tmp = testkit::tempdir("delta-crash");
    let dir = tmp.path();
    let mut rng = testkit::Rng(0xde17a);
    const ROUNDS: usize = 8;
    for round in 0..ROUNDS {
        let acked = testkit::run_then_kill(
            concat!(module_path!(), "::delta_crash_child"),
            "DATAREPO_DELTA_CRASH_CHILD",
            dir,
            Duration::from_millis(400 + rng.below(600)),
        );
        let kv = SlateKv::open_local(dir).await.unwrap();
        let repos = Repos::new(Arc::new(Store::new(kv.clone())), common::env());
        let options = CheckOptions {
            history: round == ROUNDS - 1,
        };
        let report = repos.check_with(DID, options, |_| {}).await.unwrap();
        assert!(report.is_intact(), "round {round}: {:#?}", report.problems);
        assert!(
            report.commits >= acked,
            "round {round}: {acked} commits acknowledged, {} in the log",
            report.commits
        );
        let deltas = kv
            .scan(&keycodec::RecordType::BlockDelta.range(), false, usize::MAX)
            .await
            .unwrap()
            .len();
        kv.close().await.unwrap();
        if round == ROUNDS - 1 {
            assert!(deltas > 0, "no shard version was stored as a delta");
            eprintln!(
                "{acked} commits acknowledged over {ROUNDS} SIGKILLs, {deltas} deltas; \
                 every commit's tree reads back"
            );
        }
    }
}
