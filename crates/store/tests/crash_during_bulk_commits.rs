//! Crash test for bulk commits (imports): a child process makes bulk
//! commits to SlateDB in a local directory, each writing its blocks ahead in
//! many small batches, and is killed with SIGKILL at random moments. After
//! each kill the store is reopened: every acknowledged commit is whole
//! (head, commit log, record index), no partial one is visible, and garbage
//! collection then leaves exactly the blocks of the landed commits: the
//! blocks a killed commit wrote ahead are removed, and nothing reachable is.
//!
//! The child is this test binary itself, run with `DATAREPO_BULK_CRASH_CHILD`.

use std::time::Duration;

use bytes::Bytes;
use ipld_core::ipld::Ipld;
use keycodec::RecordType;
use store::{
    Block, Commit, Head, Kv, Location, RecordChange, Retention, SlateKv, SlateOptions, Store,
};

const REPO: &str = "did:web:bulk-crash.example";
const COLLECTION: &str = "app.crash.bulk";
/// Records per commit, ~400 bytes each: about 120 KiB of blocks, written
/// ahead in 16 KiB batches.
const RECORDS: u64 = 300;

fn record_block(rev: u64, i: u64) -> Block {
    let text = format!("record {rev}-{i} {}", "r".repeat(380));
    Block::new(0x55, Bytes::from(text))
}

/// The commit of `rev`: a dag-cbor block linking its records (so that
/// garbage collection reaches them) and its predecessor's number.
fn commit(rev: u64, expected: Option<Head>) -> Commit {
    let records: Vec<RecordChange> = (0..RECORDS)
        .map(|i| RecordChange {
            collection: COLLECTION.into(),
            rkey: format!("r{rev:06}-{i:03}"),
            record: Some(record_block(rev, i)),
        })
        .collect();
    let links = records
        .iter()
        .filter_map(|r| r.record.as_ref())
        .map(|b| Ipld::Link(b.cid()))
        .chain([Ipld::Integer(i128::from(rev))])
        .collect();
    let block = Block::new(
        0x71,
        Bytes::from(serde_ipld_dagcbor::to_vec(&Ipld::List(links)).unwrap()),
    );
    Commit {
        repo: REPO.into(),
        expected: expected.map(|h| h.commit),
        head: Head {
            commit: block.cid(),
            rev,
        },
        blocks: vec![block],
        records,
        collections: Vec::new(),
        index: Vec::new(),
        history: store::LogChange::default(),
        event: None,
        stream: None,
    }
}

async fn open(dir: &std::path::Path) -> SlateKv {
    let mut options = SlateOptions::default();
    options.bulk_batch_bytes = Some(16 << 10);
    SlateKv::open_with(&Location::Local(dir.to_path_buf()), &options)
        .await
        .unwrap()
}

/// The child: bulk-commit forever, printing `ACK <rev>` after each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_crash_child() {
    let Ok(dir) = std::env::var("DATAREPO_BULK_CRASH_CHILD") else {
        return;
    };
    let store = Store::new(open(std::path::Path::new(&dir)).await);
    let mut head = store.head(REPO).await.unwrap();
    loop {
        let rev = head.map_or(1, |h| h.rev + 1);
        let next = commit(rev, head);
        let landed = next.head;
        store.bulk_commit(next, |_, _| {}).await.unwrap();
        println!("ACK {rev}");
        head = Some(landed);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_commits_are_whole_or_absent_after_sigkill() {
    if std::env::var_os("DATAREPO_BULK_CRASH_CHILD").is_some() {
        return;
    }
    let tmp = testkit::tempdir("bulk-crash");
    let dir = tmp.path();
    let mut rng = testkit::Rng(0xb0c5);
    let (mut acked, mut collected) = (0, 0);
    for round in 0..8 {
        let last = testkit::run_then_kill(
            concat!(module_path!(), "::bulk_crash_child"),
            "DATAREPO_BULK_CRASH_CHILD",
            dir,
            Duration::from_millis(300 + rng.below(700)),
        );
        acked = acked.max(last);

        let kv = open(dir).await;
        let store = Store::new(kv.clone());
        let head = store.head(REPO).await.unwrap();
        let head_rev = head.map_or(0, |h| h.rev);
        assert!(
            head_rev >= acked,
            "round {round}: acknowledged rev {acked} lost (head rev {head_rev})"
        );
        let log = store.commit_log(REPO, false, usize::MAX).await.unwrap();
        let expected_log: Vec<_> = (1..=head_rev)
            .map(|rev| (rev, commit(rev, None).head.commit))
            .collect();
        assert_eq!(log, expected_log, "round {round}: commit log");
        let records = store
            .list_records(REPO, COLLECTION, None, false, usize::MAX)
            .await
            .unwrap();
        assert_eq!(
            records.len() as u64,
            head_rev * RECORDS,
            "round {round}: a partial commit is visible in the record index"
        );

        let report = store.gc(Retention::All, |_| {}).await.unwrap();
        assert_eq!(report.missing, 0, "round {round}: {report:?}");
        collected += report.deleted;
        let blocks = kv
            .scan(&RecordType::Block.range(), false, usize::MAX)
            .await
            .unwrap();
        assert_eq!(
            blocks.len() as u64,
            head_rev * (RECORDS + 1),
            "round {round}: after collection, exactly the landed commits' blocks ({report:?})"
        );
        if head_rev > 0 {
            for i in 0..RECORDS {
                let cid = record_block(head_rev, i).cid();
                assert!(store.get_block(&cid).await.unwrap().is_some());
            }
        }
        kv.close().await.unwrap();
    }
    assert!(acked > 0, "the child acknowledged nothing");
    assert!(
        collected > 0,
        "no kill landed while blocks were written ahead"
    );
    eprintln!(
        "{acked} bulk commits acknowledged over 8 SIGKILLs, whole or absent after each; \
         {collected} blocks written ahead by killed commits collected"
    );
}
