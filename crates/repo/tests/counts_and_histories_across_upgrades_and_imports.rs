//! Record counts and record histories on a store written before either was
//! kept (their keys deleted), after later commits on it, and after a full
//! and an incremental import: the counts are the model's, and each
//! record's history lists the commits where the model's value changed.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;

use keycodec::RecordType;
use repo::{Repos, Repository, Write};
use rkey::Tid;
use serde_json::json;
use store::{Kv, MemoryKv, Store, WriteOp};

const DID: &str = "did:plc:upgrade";
const POSTS: &str = "app.bsky.feed.post";
const LIKES: &str = "app.bsky.feed.like";

type Model = BTreeMap<(String, String), u64>;

/// The repository's states after each commit, with their revs.
struct States(Vec<(Tid, Model)>);

impl States {
    fn now(&self) -> Model {
        self.0.last().map(|s| s.1.clone()).unwrap_or_default()
    }

    /// Applies `changes` (value `None`: delete) as one commit.
    async fn commit(
        &mut self,
        repo: &Repository<MemoryKv>,
        changes: &[(&str, String, Option<u64>)],
    ) {
        let mut next = self.now();
        let writes = changes
            .iter()
            .map(|(c, k, v)| match v {
                Some(v) => {
                    next.insert(((*c).to_owned(), k.clone()), *v);
                    Write::Update {
                        collection: (*c).to_owned(),
                        rkey: k.clone(),
                        value: json!({ "v": v }),
                        swap_record: None,
                    }
                }
                None => {
                    next.remove(&((*c).to_owned(), k.clone()));
                    Write::Delete {
                        collection: (*c).to_owned(),
                        rkey: k.clone(),
                        swap_record: None,
                    }
                }
            })
            .collect();
        let rev = repo.apply_writes(writes, None).await.unwrap().rev;
        self.0.push((rev, next));
    }

    /// The (rev, value after, value before) of each commit that changed
    /// `key`, newest first.
    fn versions(&self, key: &(String, String)) -> Vec<(Tid, Option<u64>, Option<u64>)> {
        self.0
            .windows(2)
            .rev()
            .filter(|w| w[0].1.get(key) != w[1].1.get(key))
            .map(|w| (w[1].0, w[1].1.get(key).copied(), w[0].1.get(key).copied()))
            .collect()
    }
}

fn key(i: u64) -> String {
    format!("k{i:03}")
}

async fn value_of(repo: &Repository<MemoryKv>, rev: Tid, key: &(String, String)) -> Option<u64> {
    repo.record_at(rev, &key.0, &key.1)
        .await
        .unwrap()
        .map(|r| r.to_json()["v"].as_u64().unwrap())
}

/// Every record's history and every collection's count on `repo` are the
/// model's; histories are read 3 versions a page.
async fn assert_matches(repo: &Repository<MemoryKv>, states: &States, what: &str) {
    let now = states.now();
    for c in [POSTS, LIKES] {
        let n = now.keys().filter(|(col, _)| col == c).count() as u64;
        assert_eq!(
            repo.record_count(c).await.unwrap(),
            n,
            "{what}: count of {c}"
        );
    }
    let touched: std::collections::BTreeSet<(String, String)> = states
        .0
        .iter()
        .flat_map(|(_, m)| m.keys().cloned())
        .collect();
    for key in touched {
        let mut got = Vec::new();
        let mut before = None;
        loop {
            let h = repo
                .record_history(&key.0, &key.1, before, 3)
                .await
                .unwrap();
            for v in h.versions {
                let rev = v.commit.commit.rev;
                let after = value_of(repo, rev, &key).await;
                assert_eq!(after.is_some(), v.cid.is_some(), "{what}: {key:?} at {rev}");
                let prev = match v.commit.commit.prev {
                    Some(_) if v.prev.is_some() => {
                        let older = states.0.iter().rev().find(|(r, _)| *r < rev).unwrap().0;
                        value_of(repo, older, &key).await
                    }
                    _ => None,
                };
                got.push((rev, after, prev));
            }
            match h.cursor {
                Some(c) => before = Some(c),
                None => break,
            }
        }
        assert_eq!(got, states.versions(&key), "{what}: history of {key:?}");
    }
}

/// Deletes every record-count and record-history key, as a store written
/// before they were kept has none.
async fn forget_counts_and_histories(kv: &MemoryKv) {
    let mut doomed = Vec::new();
    for (t, tag) in [
        (RecordType::RecordIndex, 0x41),
        (RecordType::Collection, 0x51),
    ] {
        for (k, _) in kv.scan(&t.range(), false, usize::MAX).await.unwrap() {
            if k[1] == tag {
                doomed.push(WriteOp::Delete(k.to_vec()));
            }
        }
    }
    assert!(!doomed.is_empty(), "commits wrote counts and histories");
    kv.write(doomed).await.unwrap();
}

async fn export(repo: &Repository<MemoryKv>, since: Option<Tid>) -> Vec<u8> {
    let (out, _) = match since {
        None => repo.export_history_car(Vec::new(), |_| {}).await.unwrap(),
        Some(rev) => repo
            .export_increment_car(Vec::new(), rev, |_| {})
            .await
            .unwrap(),
    };
    out
}

fn repos_on(kv: &MemoryKv, env: &repo::Env) -> Repos<MemoryKv> {
    Repos::new(Arc::new(Store::new(kv.clone())), env.clone())
}

#[test]
fn counts_and_histories_hold_on_an_old_store_and_after_imports() {
    common::rt().block_on(async {
        let env = common::env();
        let kv = MemoryKv::new();
        let repos = repos_on(&kv, &env);
        let repo = repos.create(DID).await.unwrap();
        let mut states = States(vec![(repo.head().await.unwrap().rev, Model::new())]);
        let creates: Vec<_> = (0..20).map(|i| (POSTS, key(i), Some(i))).collect();
        states.commit(&repo, &creates).await;
        states
            .commit(
                &repo,
                &[(POSTS, key(1), Some(100)), (LIKES, key(1), Some(1))],
            )
            .await;
        states
            .commit(&repo, &[(POSTS, key(2), None), (POSTS, key(1), Some(101))])
            .await;
        let base = states.0.last().unwrap().0;
        let full_at_base = export(&repo, None).await;
        drop((repo, repos));

        // An old store: the commits so far have no counts and no histories.
        forget_counts_and_histories(&kv).await;
        let repos = repos_on(&kv, &env);
        let repo = repos.open(DID).await.unwrap();
        assert_matches(&repo, &states, "old store").await;

        // Commits after the upgrade: counts start from the records there.
        states
            .commit(&repo, &[(POSTS, key(1), Some(102)), (POSTS, key(3), None)])
            .await;
        states
            .commit(&repo, &[(POSTS, key(2), Some(2)), (LIKES, key(1), None)])
            .await;
        states.commit(&repo, &[(POSTS, key(4), Some(104))]).await;
        assert_matches(&repo, &states, "upgraded store").await;

        // A full backup restored.
        let full = export(&repo, None).await;
        let restored = common::repos();
        restored.import_car(&full[..], Some(DID)).await.unwrap();
        assert_matches(&restored.open(DID).await.unwrap(), &states, "full import").await;

        // An increment on a copy restored from the backup made at `base`,
        // then commits on the copy.
        let increment = export(&repo, Some(base)).await;
        let copy_kv = MemoryKv::new();
        let copy = repos_on(&copy_kv, &env);
        copy.import_car(&full_at_base[..], Some(DID)).await.unwrap();
        copy.import_car(&increment[..], Some(DID)).await.unwrap();
        let copy_repo = copy.open(DID).await.unwrap();
        assert_matches(&copy_repo, &states, "incremental import").await;
        states
            .commit(
                &copy_repo,
                &[(POSTS, key(5), None), (LIKES, key(9), Some(9))],
            )
            .await;
        assert_matches(&copy_repo, &states, "commits after an import").await;
    });
}
