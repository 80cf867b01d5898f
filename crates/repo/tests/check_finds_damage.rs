//! `Repos::check` finds each kind of damage done to a stored repository
//! behind its back, reports an undamaged one as intact, and writes nothing.

use crate::common;

use bytes::Bytes;
use cid::Cid;
use keycodec::{KeyRange, records};
use pail::ShardFetcher;
use repo::{CheckOptions, CheckReport, CommitData, Repos, Write};
use serde_json::json;
use store::{Kv, MemoryKv, WriteOp};

const DID: &str = "did:web:example.com";
const POST: &str = "app.bsky.feed.post";
const BIG: &str = "app.example.big";

/// The built repository and what the damage cases need to know about it.
struct Built {
    repos: Repos<MemoryKv>,
    facts: Facts,
}

#[derive(Clone)]
struct Facts {
    /// A small record (kept inline in its index row too): path and CID.
    small: (String, Cid),
    /// A record too large to be kept inline: path and CID.
    big: (String, Cid),
    /// A shard below the root.
    child_shard: Cid,
    /// The commit log, newest first: (rev, commit CID).
    log: Vec<(u64, Cid)>,
    /// A record's earlier version, which only older commits reach: path
    /// and CID.
    replaced: (String, Cid),
    /// The tree root of an older commit, which the head does not reach.
    older_root: Cid,
    /// A shard of the head's tree stored as a delta, and its anchor.
    delta: (Cid, Cid),
}

/// The same repository every time (the clock is fixed): 30 posts written
/// one commit each, one large record, the first post rewritten, and one
/// more post.
async fn built() -> Built {
    let repos = common::repos();
    let repo = repos.create(DID).await.unwrap();
    let mut small = None;
    let mut first = None;
    for i in 0..30 {
        let c = repo
            .apply_writes(
                vec![Write::Create {
                    collection: POST.into(),
                    rkey: None,
                    value: json!({ "text": format!("post {i}") }),
                }],
                None,
            )
            .await
            .unwrap();
        let r = &c.results[0];
        small = Some((format!("{POST}/{}", r.rkey), r.cid.unwrap()));
        first = first.or_else(|| Some((r.rkey.clone(), r.cid.unwrap())));
    }
    let (first_rkey, first_cid) = first.unwrap();
    let c = repo
        .apply_writes(
            vec![Write::Create {
                collection: BIG.into(),
                rkey: Some("big".into()),
                value: json!({ "text": "x".repeat(store::INLINE_RECORD_BYTES + 100) }),
            }],
            None,
        )
        .await
        .unwrap();
    let big = (format!("{BIG}/big"), c.results[0].cid.unwrap());
    repo.apply_writes(
        vec![Write::Update {
            collection: POST.into(),
            rkey: first_rkey.clone(),
            value: json!({ "text": "post 0, edited" }),
            swap_record: None,
        }],
        None,
    )
    .await
    .unwrap();
    let replaced = (format!("{POST}/{first_rkey}"), first_cid);
    // One more post, which adds an entry at the end of the shard holding
    // the posts: stored as a delta of its previous version.
    repo.apply_writes(
        vec![Write::Create {
            collection: POST.into(),
            rkey: None,
            value: json!({ "text": "post 30" }),
        }],
        None,
    )
    .await
    .unwrap();
    let store = repos.store();
    let root = store
        .get_shard(&repo.head().await.unwrap().data)
        .await
        .unwrap();
    let child_shard = root
        .entries()
        .find_map(|(_, v)| v.link())
        .expect("the root links a child shard");
    let log = store.commit_log(DID, true, usize::MAX).await.unwrap();
    let older = store.get_block(&log[5].1).await.unwrap().unwrap();
    let older_root = CommitData::decode(log[5].1, older.bytes()).unwrap().data;
    // The last commit added an entry to the shard below the root (1.5 KiB):
    // stored as a delta.
    let value = store
        .kv()
        .get(&records::block_delta_key(&child_shard.to_bytes()))
        .await
        .unwrap()
        .expect("the head's child shard is stored as a delta");
    // The layout (docs/storage-keys.md): version, then the anchor's CID.
    let anchor = Cid::read_bytes(&value[1..]).unwrap();
    Built {
        repos,
        facts: Facts {
            small: small.unwrap(),
            big,
            child_shard,
            log,
            replaced,
            older_root,
            delta: (child_shard, anchor),
        },
    }
}

async fn everything(repos: &Repos<MemoryKv>) -> Vec<(Bytes, Bytes)> {
    let all = KeyRange {
        start: Vec::new(),
        end: None,
    };
    repos
        .store()
        .kv()
        .scan(&all, false, usize::MAX)
        .await
        .unwrap()
}

/// Builds the repository, applies `damage` to its storage, checks it, and
/// returns the report (asserting that the check wrote nothing).
fn check_after(damage: impl FnOnce(&Facts) -> Vec<WriteOp>) -> (CheckReport, Facts) {
    check_with_after(CheckOptions::default(), damage)
}

/// [`check_after`] with `options`.
fn check_with_after(
    options: CheckOptions,
    damage: impl FnOnce(&Facts) -> Vec<WriteOp>,
) -> (CheckReport, Facts) {
    common::rt().block_on(async {
        let b = built().await;
        b.repos
            .store()
            .kv()
            .apply(damage(&b.facts))
            .await
            .unwrap()
            .wait()
            .await
            .unwrap();
        let before = everything(&b.repos).await;
        let report = b.repos.check_with(DID, options, |_| {}).await.unwrap();
        assert_eq!(everything(&b.repos).await, before, "the check wrote");
        (report, b.facts)
    })
}

fn index_key(path: &str) -> Vec<u8> {
    let (collection, rkey) = path.split_once('/').unwrap();
    records::record_index_key(DID, collection, rkey)
}

fn block_key(cid: &Cid) -> Vec<u8> {
    records::block_key(&cid.to_bytes())
}

/// Deletes block `cid`, however it is stored.
fn delete_block(cid: &Cid) -> Vec<WriteOp> {
    vec![
        WriteOp::Delete(block_key(cid)),
        WriteOp::Delete(records::block_delta_key(&cid.to_bytes())),
    ]
}

/// Exactly one problem was found, and it says all of `words`.
fn assert_one_problem(report: &CheckReport, words: &[&str]) {
    assert_eq!(report.problem_count, 1, "{:#?}", report.problems);
    let problem = &report.problems[0];
    for w in words {
        assert!(problem.contains(w), "{problem:?} does not say {w:?}");
    }
}

#[test]
fn an_undamaged_repository_is_intact() {
    let (report, _) = check_after(|_| Vec::new());
    assert!(report.is_intact(), "{:#?}", report.problems);
    assert_eq!(report.records, 32);
    // The initial commit, 31 posts, the large record, the edit.
    assert_eq!(report.commits, 34);
    assert!(report.shards >= 2);
    assert!(!report.head_moved);
    assert_eq!((report.older_shards, report.older_records), (0, 0));
}

const HISTORY: CheckOptions = CheckOptions { history: true };

#[test]
fn an_undamaged_history_is_intact() {
    let (report, _) = check_with_after(HISTORY, |_| Vec::new());
    assert!(report.is_intact(), "{:#?}", report.problems);
    // Every commit rewrote the root, and the first post has an older version.
    assert!(report.older_shards >= 33, "{}", report.older_shards);
    assert_eq!(report.older_records, 1);
}

#[test]
fn a_corrupt_record_only_older_commits_reach_is_found_with_history() {
    let damage = |f: &Facts| {
        vec![WriteOp::Put(
            block_key(&f.replaced.1),
            Bytes::from_static(b"other bytes"),
        )]
    };
    let (report, _) = check_after(damage);
    assert!(report.is_intact(), "the head does not reach it");
    let (report, f) = check_with_after(HISTORY, damage);
    assert_one_problem(
        &report,
        &[&format!("record {} as of commit", f.replaced.0), "corrupt"],
    );
}

#[test]
fn a_missing_shard_only_an_older_commit_reaches_is_found_with_history() {
    let damage = |f: &Facts| delete_block(&f.older_root);
    let (report, _) = check_after(damage);
    assert!(report.is_intact(), "the head does not reach it");
    let (report, f) = check_with_after(HISTORY, damage);
    assert_one_problem(
        &report,
        &[
            &format!("shard {}", f.older_root),
            "the tree's root",
            "of commit",
            "missing",
        ],
    );
}

#[test]
fn a_corrupt_record_block_is_found() {
    let (report, f) = check_after(|f| {
        vec![WriteOp::Put(
            block_key(&f.big.1),
            Bytes::from_static(b"other bytes"),
        )]
    });
    assert_one_problem(&report, &[&format!("record {}", f.big.0), "corrupt"]);
}

#[test]
fn a_missing_record_block_is_found_even_when_the_index_keeps_a_copy() {
    let (report, f) = check_after(|f| delete_block(&f.small.1));
    assert_one_problem(&report, &[&format!("record {}", f.small.0), "missing"]);
}

#[test]
fn a_tampered_inline_copy_is_found() {
    let (report, f) = check_after(|f| {
        let mut value = f.small.1.to_bytes();
        value.extend_from_slice(b"\xa1etext\xe5other");
        vec![WriteOp::Put(index_key(&f.small.0), Bytes::from(value))]
    });
    assert_one_problem(&report, &[&f.small.0, "record-index row"]);
}

#[test]
fn a_missing_index_row_is_found() {
    let (report, f) = check_after(|f| vec![WriteOp::Delete(index_key(&f.small.0))]);
    assert_one_problem(&report, &[&f.small.0, "does not list"]);
}

#[test]
fn a_wrong_record_count_is_found() {
    // 30 posts and one more are stored; the count is made to say 7.
    let (report, _) = check_after(|_| vec![store::record_count_op(DID, POST, 7)]);
    assert_one_problem(&report, &["record count", POST, "says 7", "holds 31"]);
}

#[test]
fn an_absurd_record_count_is_found() {
    // The counts size the check's tables ahead: one this large must size
    // them within a bound (or not at all), and still be reported.
    let (report, _) = check_after(|_| vec![store::record_count_op(DID, POST, u64::MAX)]);
    assert_one_problem(
        &report,
        &["record count", POST, &u64::MAX.to_string(), "holds 31"],
    );
}

#[test]
fn an_index_row_for_no_record_is_found() {
    let (report, _) = check_after(|f| {
        vec![WriteOp::Put(
            index_key(&format!("{POST}/zzz")),
            Bytes::from(f.small.1.to_bytes()),
        )]
    });
    assert_one_problem(&report, &[&format!("{POST}/zzz"), "does not hold"]);
}

#[test]
fn an_index_row_naming_another_record_is_found() {
    let (report, f) = check_after(|f| {
        vec![WriteOp::Put(
            index_key(&f.small.0),
            Bytes::from(f.big.1.to_bytes()),
        )]
    });
    assert_one_problem(&report, &[&f.small.0, "names"]);
}

#[test]
fn a_missing_shard_is_found() {
    let (report, f) = check_after(|f| delete_block(&f.child_shard));
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.starts_with(&format!("shard {}", f.child_shard))),
        "{:#?}",
        report.problems
    );
    // The records below it are still in the index: each is reported.
    assert!(report.problem_count > 1);
}

#[test]
fn a_corrupt_old_commit_is_found() {
    let (report, f) = check_after(|f| {
        vec![WriteOp::Put(
            block_key(&f.log[5].1),
            Bytes::from_static(b"not a commit"),
        )]
    });
    assert_one_problem(&report, &[&format!("commit {}", f.log[5].1), "corrupt"]);
}

#[test]
fn a_gap_in_the_commit_log_is_found() {
    let (report, _) =
        check_after(|f| vec![WriteOp::Delete(records::commit_log_key(DID, f.log[5].0))]);
    assert_one_problem(&report, &["is not the previous commit"]);
    assert_eq!(report.commits, 33);
}

#[test]
fn an_index_row_whose_value_is_not_a_cid_is_found_and_the_check_goes_on() {
    let (report, f) = check_after(|f| {
        vec![WriteOp::Put(
            index_key(&f.small.0),
            Bytes::from_static(b"\x01\x71 not a CID"),
        )]
    });
    // One problem: the row, not also "the index does not list" the record.
    assert_one_problem(&report, &[&f.small.0, "record-index row", "malformed"]);
}

#[test]
fn an_index_row_whose_key_cannot_be_decoded_is_found_and_the_check_goes_on() {
    let (report, _) = check_after(|f| {
        // Inside the repository's index range, after the last post's row
        // and before the large record's: a post's key without its final
        // terminator.
        let (collection, rkey) = f.small.0.split_once('/').unwrap();
        let mut key = records::record_index_key(DID, collection, &format!("{rkey}0"));
        key.pop();
        vec![WriteOp::Put(key, Bytes::from(f.small.1.to_bytes()))]
    });
    // Had the check stopped at the row, or skipped the rest of its page,
    // the records after it would be reported as unlisted.
    assert_one_problem(&report, &["record-index row cannot be read", "keys decode"]);
    assert_eq!(report.records, 32);
}

#[test]
fn a_record_the_index_does_not_list_is_still_read() {
    let (report, f) = check_after(|f| {
        vec![
            WriteOp::Delete(index_key(&f.small.0)),
            WriteOp::Put(block_key(&f.small.1), Bytes::from_static(b"other bytes")),
        ]
    });
    assert_eq!(report.problem_count, 2, "{:#?}", report.problems);
    assert!(report.problems[0].contains("does not list"));
    assert!(
        report.problems[1].starts_with(&format!("record {}: ", f.small.0))
            && report.problems[1].contains("corrupt"),
        "{:#?}",
        report.problems
    );
}

#[test]
fn a_shard_whose_anchor_is_missing_is_found() {
    let (report, f) = check_after(|f| vec![WriteOp::Delete(block_key(&f.delta.1))]);
    let (shard, anchor) = f.delta;
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.contains(&shard.to_string())
                && p.contains(&anchor.to_string())
                && p.contains("missing")),
        "{:#?}",
        report.problems
    );
}

#[test]
fn a_corrupt_delta_is_found() {
    let (report, f) = check_after(|f| {
        vec![WriteOp::Put(
            records::block_delta_key(&f.delta.0.to_bytes()),
            Bytes::from_static(b"\x01not a delta"),
        )]
    });
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.contains(&f.delta.0.to_string()) && p.contains("corrupt")),
        "{:#?}",
        report.problems
    );
}
