//! Import refuses a root commit whose rev no conforming TID generator makes
//! (the top bit set) or that lies further ahead of the local clock than
//! `MAX_REV_AHEAD`: either would leave a repository whose next commits
//! cannot have higher revs. A rev a little ahead (clock skew) is accepted,
//! and later writes get revs above it. `check` names such a head.

use crate::common;

use repo::{Error, Write};
use rkey::Tid;
use serde_json::json;

const DID: &str = "did:web:revs.example";
const COLLECTION: &str = "com.example.post";
/// The start of `common::env()`'s clock, in microseconds.
const NOW: u64 = 1_767_225_600_000_000;

/// A repository whose head commit has `rev` (with the tree of a normal
/// commit), in a fresh store.
async fn repo_with_head_rev(rev: u64) -> repo::Repos<store::MemoryKv> {
    let repos = common::repos();
    let repo = repos.create(DID).await.unwrap();
    repo.apply_writes(
        vec![Write::Create {
            collection: COLLECTION.into(),
            rkey: Some("a".into()),
            value: json!({"text": "a"}),
        }],
        None,
    )
    .await
    .unwrap();
    let head = repo.head().await.unwrap();
    common::land_raw_commit(
        &repos,
        DID,
        &head,
        Tid::from_u64(rev),
        head.data,
        Vec::new(),
        Vec::new(),
    )
    .await;
    repos
}

fn tid_at(micros: u64) -> u64 {
    micros << 10
}

#[test]
fn revs_no_generator_makes_or_far_ahead_are_refused() {
    common::rt().block_on(async {
        for (rev, says) in [
            // First character `c`: the top bit set.
            (Tid::parse("c222222222222").unwrap().as_u64(), "top bit"),
            // The largest TID without it: far in the future.
            (
                Tid::parse("bzzzzzzzzzzzz").unwrap().as_u64(),
                "ahead of this machine's clock",
            ),
            // An hour ahead.
            (tid_at(NOW + 3_600_000_000), "ahead of this machine's clock"),
        ] {
            let source = repo_with_head_rev(rev).await;
            let car = common::export(&source, DID).await;
            let fresh = common::repos();
            let err = fresh.import_car(&car[..], None).await.unwrap_err();
            assert!(matches!(err, Error::InvalidCar(_)), "{err}");
            let message = err.to_string();
            assert!(
                message.contains("the root commit") && message.contains(says),
                "{message}"
            );
            assert!(fresh.list().await.unwrap().is_empty());

            let report = source.check(DID, |_| {}).await.unwrap();
            assert!(
                report.problems.iter().any(|p| p.contains(says)),
                "{:?}",
                report.problems
            );
        }
    });
}

#[test]
fn a_rev_a_little_ahead_is_accepted_and_later_commits_go_above_it() {
    common::rt().block_on(async {
        let ahead = tid_at(NOW + 60_000_000);
        let source = repo_with_head_rev(ahead).await;
        let car = common::export(&source, DID).await;
        let fresh = common::repos();
        fresh.import_car(&car[..], None).await.unwrap();
        let repo = fresh.open(DID).await.unwrap();
        let result = repo
            .apply_writes(
                vec![Write::Create {
                    collection: COLLECTION.into(),
                    rkey: Some("b".into()),
                    value: json!({"text": "b"}),
                }],
                None,
            )
            .await
            .unwrap();
        assert!(result.rev.as_u64() > ahead);
        assert!(fresh.check(DID, |_| {}).await.unwrap().is_intact());
    });
}
