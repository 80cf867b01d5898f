//! Model-based test: random batches of writes against a `BTreeMap` model.
//! After every commit the record index and the Pail agree with the model;
//! every past state is readable at its rev, and `diff` between any two
//! commits is the model's difference; each collection's record count is
//! the model's, and each record's history lists the states where the
//! model's value of it changed.

use crate::common;

use std::collections::BTreeMap;

use proptest::prelude::*;
use repo::Write;
use serde_json::json;

const COLLECTIONS: [&str; 3] = ["app.bsky.feed.like", "app.bsky.feed.post", "com.example.z"];

#[derive(Debug, Clone)]
enum Op {
    Put(usize, u8, u8),
    Del(usize, u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..3usize, 0..40u8, any::<u8>()).prop_map(|(c, k, v)| Op::Put(c, k, v)),
        1 => (0..3usize, 0..40u8).prop_map(|(c, k)| Op::Del(c, k)),
    ]
}

type Model = BTreeMap<(String, String), u8>;

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn repository_matches_model(batches in prop::collection::vec(prop::collection::vec(op(), 1..12), 1..12)) {
        common::rt().block_on(async {
            let repos = common::repos();
            let repo = repos.create("did:plc:model").await.unwrap();
            let mut model = Model::new();
            let mut states: Vec<(rkey::Tid, Model)> = vec![(repo.head().await.unwrap().rev, model.clone())];
            for batch in batches {
                let mut next = model.clone();
                let mut writes = Vec::new();
                for op in batch {
                    match op {
                        Op::Put(c, k, v) => {
                            let key = (COLLECTIONS[c].to_owned(), format!("k{k:02}"));
                            writes.push(Write::Update {
                                collection: key.0.clone(),
                                rkey: key.1.clone(),
                                value: json!({ "v": v }),
                                swap_record: None,
                            });
                            next.insert(key, v);
                        }
                        Op::Del(c, k) => {
                            let key = (COLLECTIONS[c].to_owned(), format!("k{k:02}"));
                            // Deleting an absent record is an error: only delete present ones.
                            if next.remove(&key).is_some() {
                                writes.push(Write::Delete {
                                    collection: key.0,
                                    rkey: key.1,
                                    swap_record: None,
                                });
                            }
                        }
                    }
                }
                if writes.is_empty() {
                    continue;
                }
                let c = repo.apply_writes(writes, None).await.unwrap();
                model = next;
                states.push((c.rev, model.clone()));

                // The record index.
                for collection in COLLECTIONS {
                    let listed: Vec<(String, serde_json::Value)> = repo
                        .list_records(collection, None, false, usize::MAX)
                        .await
                        .unwrap()
                        .into_iter()
                        .map(|(k, r)| (k, r.to_json()["v"].clone()))
                        .collect();
                    let expected: Vec<(String, serde_json::Value)> = model
                        .iter()
                        .filter(|((c, _), _)| c == collection)
                        .map(|((_, k), v)| (k.clone(), json!(v)))
                        .collect();
                    assert_eq!(listed, expected);
                    assert_eq!(repo.record_count(collection).await.unwrap(), expected.len() as u64);
                }
                // The Pail.
                let head = repo.head().await.unwrap();
                let entries = pail::entries(&**repos.store(), head.data, &pail::EntriesOptions::default())
                    .await
                    .unwrap();
                let keys: Vec<String> = entries.into_iter().map(|(k, _)| k).collect();
                let expected: Vec<String> = model.keys().map(|(c, k)| format!("{c}/{k}")).collect();
                assert_eq!(keys, expected);
            }

            // Every past state, by rev.
            for (rev, state) in &states {
                for ((c, k), v) in state {
                    let r = repo.record_at(*rev, c, k).await.unwrap().unwrap();
                    assert_eq!(r.to_json()["v"], json!(v));
                }
            }
            // Diffs between pairs of states.
            for i in 0..states.len() {
                for j in [0, i / 2, states.len() - 1] {
                    let (a, ma) = &states[j];
                    let (b, mb) = &states[i];
                    let diff = repo.diff(*a, *b).await.unwrap();
                    let got: Vec<(String, String, bool, bool)> = diff
                        .iter()
                        .map(|d| (d.collection.clone(), d.rkey.clone(), d.old.is_some(), d.new.is_some()))
                        .collect();
                    let mut keys: Vec<_> = ma.keys().chain(mb.keys()).cloned().collect();
                    keys.sort();
                    keys.dedup();
                    let want: Vec<(String, String, bool, bool)> = keys
                        .into_iter()
                        .filter(|k| ma.get(k) != mb.get(k))
                        .map(|k| {
                            let (old, new) = (ma.contains_key(&k), mb.contains_key(&k));
                            (k.0, k.1, old, new)
                        })
                        .collect();
                    assert_eq!(got, want, "diff {a} -> {b}");
                }
            }
            assert_eq!(repo.log(usize::MAX).await.unwrap().len(), states.len());
            // Each record's history: the revs where the model's value of
            // it changed, newest first; each version's CIDs are those the
            // record has at that rev and at the one before (read from the
            // Pail), whose values are the model's.
            let cid_at = |rev, key: &(String, String)| {
                let (c, k) = key.clone();
                let repo = &repo;
                async move { repo.record_at(rev, &c, &k).await.unwrap().map(|r| (r.cid(), r.to_json()["v"].clone())) }
            };
            let touched: std::collections::BTreeSet<(String, String)> =
                states.iter().flat_map(|(_, m)| m.keys().cloned()).collect();
            for key in touched {
                let mut want = Vec::new();
                for w in states.windows(2).rev() {
                    let (before, after) = (w[0].1.get(&key), w[1].1.get(&key));
                    if before != after {
                        let (now, then) = (cid_at(w[1].0, &key).await, cid_at(w[0].0, &key).await);
                        assert_eq!(now.as_ref().map(|n| n.1.clone()), after.map(|v| json!(v)));
                        assert_eq!(then.as_ref().map(|n| n.1.clone()), before.map(|v| json!(v)));
                        want.push((w[1].0, now.map(|n| n.0), then.map(|n| n.0)));
                    }
                }
                for page in [usize::MAX, 2] {
                    let mut got = Vec::new();
                    let mut before = None;
                    loop {
                        let h = repo.record_history(&key.0, &key.1, before, page).await.unwrap();
                        got.extend(h.versions.into_iter().map(|v| (v.commit.commit.rev, v.cid, v.prev)));
                        match h.cursor {
                            Some(c) => before = Some(c),
                            None => break,
                        }
                    }
                    assert_eq!(got, want, "history of {key:?}, {page} versions a page");
                }
            }
        });
    }
}
