//! An import into a repository that declares field indexes rebuilds them
//! from the records it brings (kept in memory, not read back), numbering
//! them into packed column blocks: queries then answer as the records say,
//! `check` finds nothing to report, and later commits (updates, deletes,
//! records created again, new ones between old keys) keep it so.

use crate::common;

use std::{
    collections::BTreeMap,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use repo::{Env, IndexKind, Repos, Write};
use serde_json::{Value, json};
use store::{MemoryKv, Store};

const DID: &str = "did:example:import-indexes";
const POSTS: &str = "app.test.post";
const OTHER: &str = "app.test.other";
const LANGS: [&str; 3] = ["en", "fr", "pt"];

fn post(i: usize) -> Value {
    json!({
        "$type": POSTS,
        "lang": LANGS[i % 3],
        "tags": (0..i % 4).map(|t| format!("t{}", (i + t) % 5)).collect::<Vec<_>>(),
        "likes": (i * 7919) % 1000,
    })
}

/// Counts by the records themselves: a plain evaluation, not the index.
fn count(model: &BTreeMap<String, Value>, f: impl Fn(&Value) -> bool) -> u64 {
    model.values().filter(|v| f(v)).count() as u64
}

/// The whole repository in the file: the rebuild reads the records the
/// import holds in memory.
#[test]
fn an_import_rebuilds_declared_indexes_from_its_records() {
    // The target's own first commit (a later clock) is not in the file,
    // which replaces it whole.
    let clock = Arc::new(AtomicU64::new(1_767_225_600_000_000 + 3_600_000_000));
    let target = Repos::new(
        Arc::new(Store::new(MemoryKv::new())),
        Env::new(move || clock.fetch_add(1000, Ordering::Relaxed), 9),
    );
    scenario(target);
}

/// The file continues the target's history (the same first commit): the
/// rebuild reads the records back from the store.
#[test]
fn an_import_that_continues_a_history_rebuilds_declared_indexes() {
    scenario(common::repos());
}

fn scenario(target: Repos<MemoryKv>) {
    common::rt().block_on(async {
        // The source: 900 posts (several blocks of 256 columns) and records
        // of an unindexed collection in between.
        let source = common::repos();
        let repo = source.create(DID).await.unwrap();
        let mut model = BTreeMap::new();
        let mut writes = Vec::new();
        for i in 0..900 {
            let rkey = format!("p{:05}", i * 3);
            writes.push(Write::Create {
                collection: POSTS.into(),
                rkey: Some(rkey.clone()),
                value: post(i),
            });
            model.insert(rkey, post(i));
        }
        writes.push(Write::Create {
            collection: OTHER.into(),
            rkey: Some("x".into()),
            value: json!({"lang": "en"}),
        });
        repo.apply_writes(writes, None).await.unwrap();
        let (car, _) = repo.export_car(Vec::new(), None, |_| {}).await.unwrap();

        // The target declares the indexes before the import.
        let repo = target.create(DID).await.unwrap();
        for (path, kind) in [
            ("lang", IndexKind::Keyword),
            ("tags", IndexKind::Keyword),
            ("likes", IndexKind::Integer),
        ] {
            repo.add_index(POSTS, path, kind, |_| {}).await.unwrap();
        }
        drop(repo);
        let report = target.import_car(&car[..], Some(DID)).await.unwrap();
        assert_eq!(report.records, 901);
        let repo = target.open(DID).await.unwrap();

        let check = |model: &BTreeMap<String, Value>| {
            let model = model.clone();
            let repo = repo.clone();
            async move {
                assert_eq!(
                    repo.index_differences().await.unwrap(),
                    Vec::<String>::new()
                );
                for lang in LANGS {
                    assert_eq!(
                        repo.count(POSTS, Some(&format!("lang = {lang:?}")))
                            .await
                            .unwrap(),
                        count(&model, |v| v["lang"] == lang),
                        "{lang}"
                    );
                }
                assert_eq!(
                    repo.count(POSTS, Some(r#"tags = "t3" and likes < 500"#))
                        .await
                        .unwrap(),
                    count(&model, |v| {
                        v["tags"].as_array().unwrap().contains(&json!("t3"))
                            && v["likes"].as_i64().unwrap() < 500
                    })
                );
                // Every page, both ways, in rkey order.
                for reverse in [false, true] {
                    let mut got = Vec::new();
                    let mut cursor = None;
                    loop {
                        let page = repo
                            .query(
                                POSTS,
                                Some(r#"lang = "fr""#),
                                cursor.as_deref(),
                                reverse,
                                97,
                            )
                            .await
                            .unwrap();
                        got.extend(page.records.into_iter().map(|(k, _)| k));
                        match page.cursor {
                            Some(c) => cursor = Some(c),
                            None => break,
                        }
                    }
                    let mut want: Vec<String> = model
                        .iter()
                        .filter(|(_, v)| v["lang"] == "fr")
                        .map(|(k, _)| k.clone())
                        .collect();
                    if reverse {
                        want.reverse();
                    }
                    assert_eq!(got, want, "reverse {reverse}");
                }
            }
        };
        check(&model).await;

        // Commits over the built columns: updates, deletes, a deleted record
        // created again, and new keys between old ones (out of column order).
        let mut writes = Vec::new();
        for i in (0..900).step_by(7) {
            let rkey = format!("p{:05}", i * 3);
            let value = post(i + 1);
            writes.push(Write::Update {
                collection: POSTS.into(),
                rkey: rkey.clone(),
                value: value.clone(),
                swap_record: None,
            });
            model.insert(rkey, value);
        }
        for i in (3..900).step_by(11) {
            let rkey = format!("p{:05}", i * 3);
            if model.remove(&rkey).is_some() {
                writes.push(Write::Delete {
                    collection: POSTS.into(),
                    rkey,
                    swap_record: None,
                });
            }
        }
        repo.apply_writes(writes, None).await.unwrap();
        let mut writes = Vec::new();
        for i in [3usize, 300, 883] {
            let rkey = format!("p{:05}", i * 3);
            assert!(!model.contains_key(&rkey), "deleted above");
            writes.push(Write::Create {
                collection: POSTS.into(),
                rkey: Some(rkey.clone()),
                value: post(i + 2),
            });
            model.insert(rkey, post(i + 2));
        }
        for i in [1usize, 400, 1000] {
            let rkey = format!("p{:05}", i * 3 + 1);
            writes.push(Write::Create {
                collection: POSTS.into(),
                rkey: Some(rkey.clone()),
                value: post(i),
            });
            model.insert(rkey, post(i));
        }
        repo.apply_writes(writes, None).await.unwrap();
        check(&model).await;
    });
}
