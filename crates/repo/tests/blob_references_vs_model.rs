//! Blob references against a model, over random sequences of uploads,
//! writes, deletes and collections in two repositories of one store that
//! upload the same bytes: each repository holds its own reference to a
//! blob (temporary until a commit refers to it, then permanent), counts
//! the records that refer to it, refuses a record naming a blob it does
//! not hold (changing nothing), and a collection drops only temporary
//! blobs, the bytes going only when no repository holds them.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use bytes::Bytes;
use cid::Cid;
use proptest::prelude::*;
use repo::{Error, Repos, Write};
use serde_json::json;
use store::{Kv, MemoryKv, Store};

const REPOS: [&str; 2] = ["did:example:left", "did:example:right"];
const CONTENTS: usize = 4;
const HOUR: u64 = 3600;

#[derive(Debug, Clone)]
enum Op {
    Upload {
        repo: usize,
        content: usize,
    },
    Put {
        repo: usize,
        rkey: usize,
        refs: Vec<usize>,
    },
    Delete {
        repo: usize,
        rkey: usize,
    },
    Collect,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..2usize, 0..CONTENTS).prop_map(|(repo, content)| Op::Upload { repo, content }),
        4 => (0..2usize, 0..3usize, prop::collection::vec(0..CONTENTS, 0..3))
            .prop_map(|(repo, rkey, refs)| Op::Put { repo, rkey, refs }),
        2 => (0..2usize, 0..3usize).prop_map(|(repo, rkey)| Op::Delete { repo, rkey }),
        1 => Just(Op::Collect),
    ]
}

fn content(c: usize) -> Bytes {
    Bytes::from(format!(
        "the bytes of content {c}, shared by both repositories"
    ))
}

/// What a repository should hold: each blob and whether it is permanent,
/// and each record's references.
#[derive(Debug, Default, Clone)]
struct Model {
    held: BTreeMap<usize, bool>,
    records: BTreeMap<usize, BTreeSet<usize>>,
}

impl Model {
    fn refs(&self, c: usize) -> u64 {
        self.records.values().filter(|r| r.contains(&c)).count() as u64
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn blob_references_match_the_model(ops in prop::collection::vec(op(), 1..30)) {
        common::rt().block_on(async {
            let offset = Arc::new(AtomicU64::new(0));
            let store = Arc::new(Store::new(MemoryKv::new()));
            let repos = Repos::new(Arc::clone(&store), common::env_ahead_by(&offset, 5));
            let mut handles = Vec::new();
            for id in REPOS {
                handles.push(repos.create(id).await.unwrap());
            }
            let cids: Vec<Cid> = (0..CONTENTS).map(|c| store::blob_cid(&content(c))).collect();
            let mut models = vec![Model::default(), Model::default()];
            for (step, op) in ops.iter().enumerate() {
                match op {
                    Op::Upload { repo, content: c } => {
                        let body = futures::stream::iter(vec![Ok::<_, std::io::Error>(content(*c))]);
                        let (cid, _) = handles[*repo]
                            .store_blob(body, 1 << 20, None, &format!("upload-{step}"))
                            .await
                            .unwrap();
                        assert_eq!(cid, cids[*c]);
                        models[*repo].held.entry(*c).or_insert(false);
                    }
                    Op::Put { repo, rkey, refs } => {
                        let images: Vec<_> = refs
                            .iter()
                            .map(|c| json!({"$type": "blob", "ref": {"$link": cids[*c].to_string()},
                                            "mimeType": "application/octet-stream",
                                            "size": content(*c).len()}))
                            .collect();
                        let result = handles[*repo]
                            .apply_writes(
                                vec![Write::Update {
                                    collection: "app.test.post".into(),
                                    rkey: format!("r{rkey}"),
                                    value: json!({"images": images}),
                                    swap_record: None,
                                }],
                                None,
                            )
                            .await;
                        let model = &mut models[*repo];
                        match refs.iter().find(|c| !model.held.contains_key(c)) {
                            Some(unknown) => match result {
                                Err(Error::BlobNotFound(cid)) => {
                                    assert_eq!(cid, cids[*unknown].to_string(), "step {step}");
                                }
                                other => panic!("step {step}: {op:?} gave {other:?}"),
                            },
                            None => {
                                result.unwrap();
                                for c in refs {
                                    model.held.insert(*c, true);
                                }
                                model.records.insert(*rkey, refs.iter().copied().collect());
                            }
                        }
                    }
                    Op::Delete { repo, rkey } => {
                        let result = handles[*repo]
                            .apply_writes(
                                vec![Write::Delete {
                                    collection: "app.test.post".into(),
                                    rkey: format!("r{rkey}"),
                                    swap_record: None,
                                }],
                                None,
                            )
                            .await;
                        match models[*repo].records.remove(rkey) {
                            Some(_) => {
                                result.unwrap();
                            }
                            None => assert!(
                                matches!(result, Err(Error::RecordNotFound(_))),
                                "step {step}: {result:?}"
                            ),
                        }
                    }
                    Op::Collect => {
                        // Two hours on, with every commit retained: only
                        // temporary blobs go.
                        offset.fetch_add(2 * HOUR, Ordering::Relaxed);
                        repos.collect_blobs(HOUR, false).await.unwrap();
                        for model in &mut models {
                            model.held.retain(|_, permanent| *permanent);
                        }
                    }
                }
                let blobs = store.kv().blobs();
                for (c, cid) in cids.iter().enumerate() {
                    for (r, model) in models.iter().enumerate() {
                        let info = handles[r].blob(cid).await.unwrap();
                        match (model.held.get(&c), info) {
                            (None, None) => {}
                            (Some(permanent), Some(info)) => {
                                assert_eq!(info.refs, model.refs(c), "step {step}: {op:?}, repo {r}, content {c}");
                                assert_eq!(info.permanent, *permanent, "step {step}: {op:?}, repo {r}, content {c}");
                            }
                            (expected, got) => panic!(
                                "step {step}: {op:?}, repo {r}, content {c}: expected {expected:?}, got {got:?}"
                            ),
                        }
                    }
                    let held_anywhere = models.iter().any(|m| m.held.contains_key(&c));
                    let stored = blobs.size(cid).await.unwrap().is_some();
                    if held_anywhere {
                        assert!(stored, "step {step}: content {c} is held and its bytes are gone");
                    } else if matches!(op, Op::Collect) {
                        assert!(!stored, "step {step}: content {c} is held nowhere and its bytes stay");
                    }
                }
            }
        });
    }
}
