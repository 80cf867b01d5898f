//! Crash test: a child process commits as fast as it can to SlateDB in a
//! local directory and is killed with SIGKILL at random moments, many times.
//! After each kill the store is reopened: every commit the child reported as
//! acknowledged is present (head, commit log, record index), and every block
//! of those commits reads back and verifies.
//!
//! The child is this test binary itself, run with `DATAREPO_CRASH_CHILD`.

use std::time::Duration;

use bytes::Bytes;
use cid::Cid;
use multihash_codetable::{Code, MultihashDigest};
use store::{Block, Commit, Head, RecordChange, SlateKv, Store};

const REPO: &str = "did:web:crash.example";

fn commit_block(rev: u64) -> (Cid, Bytes) {
    let bytes = Bytes::from(format!(
        "commit {rev} {}",
        "x".repeat((rev % 97) as usize * 40)
    ));
    (Cid::new_v1(0x71, Code::Sha2_256.digest(&bytes)), bytes)
}

fn record_block(rev: u64) -> (Cid, Bytes) {
    let bytes = Bytes::from(format!("record {rev}"));
    (Cid::new_v1(0x55, Code::Sha2_256.digest(&bytes)), bytes)
}

/// The child: commit forever, printing `ACK <rev>` after each acknowledged commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_child() {
    let Ok(dir) = std::env::var("DATAREPO_CRASH_CHILD") else {
        return;
    };
    let kv = SlateKv::open_local(std::path::Path::new(&dir))
        .await
        .unwrap();
    let store = Store::new(kv);
    let mut head = store.head(REPO).await.unwrap();
    loop {
        let rev = head.map_or(1, |h| h.rev + 1);
        let (c, cb) = commit_block(rev);
        let (r, rb) = record_block(rev);
        store
            .commit(Commit {
                repo: REPO.into(),
                expected: head.map(|h| h.commit),
                head: Head { commit: c, rev },
                blocks: vec![
                    Block::verify(c, cb).unwrap(),
                    Block::verify(r, rb.clone()).unwrap(),
                ],
                records: vec![RecordChange {
                    collection: "app.crash.rec".into(),
                    rkey: format!("r{rev:08}"),
                    record: Some(Block::verify(r, rb).unwrap()),
                }],
                collections: Vec::new(),
                index: Vec::new(),
                history: store::LogChange::default(),
                event: None,
                stream: None,
            })
            .await
            .unwrap();
        println!("ACK {rev}");
        head = Some(Head { commit: c, rev });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_commits_survive_sigkill() {
    if std::env::var_os("DATAREPO_CRASH_CHILD").is_some() {
        return;
    }
    let tmp = testkit::tempdir("crash");
    let dir = tmp.path();
    let mut rng = testkit::Rng(0xc7a5);
    let mut acked_total = 0u64;
    let mut verified = 0u64;
    for round in 0..12 {
        // Let it open and commit for a random while, then kill it mid-flight.
        let acked = testkit::run_then_kill(
            concat!(module_path!(), "::crash_child"),
            "DATAREPO_CRASH_CHILD",
            dir,
            Duration::from_millis(300 + rng.below(700)),
        );

        let kv = SlateKv::open_local(dir).await.unwrap();
        let store = Store::new(kv.clone());
        let head = store.head(REPO).await.unwrap();
        let head_rev = head.map_or(0, |h| h.rev);
        assert!(
            head_rev >= acked,
            "round {round}: acknowledged rev {acked} lost (head rev {head_rev})"
        );
        let log = store.commit_log(REPO, false, usize::MAX).await.unwrap();
        assert_eq!(
            log.len() as u64,
            head_rev,
            "round {round}: commit log has a gap"
        );
        for (i, (rev, cid)) in log.iter().enumerate() {
            assert_eq!(*rev, i as u64 + 1);
            assert_eq!(*cid, commit_block(*rev).0);
            // Blocks of commits verified in an earlier round are checked
            // again only in the last round.
            if *rev <= verified && round < 11 {
                continue;
            }
            assert!(
                store.get_block(cid).await.unwrap().is_some(),
                "round {round}: commit block {rev} missing"
            );
            let r = record_block(*rev).0;
            assert!(
                store.get_block(&r).await.unwrap().is_some(),
                "round {round}: record block {rev} missing"
            );
        }
        let recs = store
            .list_records(REPO, "app.crash.rec", None, false, usize::MAX)
            .await
            .unwrap();
        assert_eq!(
            recs.len() as u64,
            head_rev,
            "round {round}: record index disagrees with the head"
        );
        kv.close().await.unwrap();
        verified = head_rev;
        acked_total = acked;
        assert!(acked > 0 || round > 0, "the child acknowledged nothing");
    }
    eprintln!("{acked_total} commits acknowledged over 12 SIGKILLs; all present after each reopen");
}
