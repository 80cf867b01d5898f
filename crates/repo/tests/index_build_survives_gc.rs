//! An index build reads the records as of the head when it starts. Here,
//! while it waits after its first page, commits change or delete every
//! record and a garbage collection keeps only the newest commit, deleting
//! the tree the build reads from every retained commit's reach. The build
//! holds on to the commits it reads (`Store::pin_window`), so it finishes, and
//! the index answers as the records do.

use crate::common;

use std::{collections::BTreeMap, sync::Arc};

use repo::{IndexKind, IndexProgress, Write};
use serde_json::json;
use store::Retention;

const ITEMS: &str = "app.test.item";
const LANGS: [&str; 3] = ["en", "fr", "de"];

fn put(rkey: &str, lang: &str) -> Write {
    Write::Update {
        collection: ITEMS.into(),
        rkey: rkey.into(),
        value: json!({ "lang": lang }),
        swap_record: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_index_build_outlives_the_collection_of_the_tree_it_reads() {
    let repos = common::repos();
    let repo = repos.create("did:example:gc").await.unwrap();
    let store = Arc::clone(repos.store());
    // 3,000 records: the build reads them in three pages.
    let mut model: BTreeMap<String, &str> = BTreeMap::new();
    for chunk in (0..3000u32).collect::<Vec<_>>().chunks(500) {
        let writes = chunk
            .iter()
            .map(|i| {
                let (rkey, lang) = (format!("r{i:05}"), LANGS[*i as usize % 3]);
                model.insert(rkey.clone(), lang);
                put(&rkey, lang)
            })
            .collect();
        repo.apply_writes(writes, None).await.unwrap();
    }

    // The build waits in its progress callback after its first page.
    let (mut paused, mut pause) = common::Paused::new();
    let build = {
        let repo = Arc::clone(&repo);
        tokio::spawn(async move {
            repo.add_index(
                ITEMS,
                "lang",
                IndexKind::Keyword,
                move |p: IndexProgress| {
                    pause.once(p.records > 0);
                },
            )
            .await
        })
    };
    paused.reached().await;

    // Every record changed (a third deleted) over several commits: no
    // shard or record of the build's tree is in the newest commit's.
    let keys: Vec<String> = model.keys().cloned().collect();
    for (c, chunk) in keys.chunks(250).enumerate() {
        let writes = chunk
            .iter()
            .enumerate()
            .map(|(i, rkey)| {
                if (c + i) % 3 == 0 {
                    model.remove(rkey);
                    Write::Delete {
                        collection: ITEMS.into(),
                        rkey: rkey.clone(),
                        swap_record: None,
                    }
                } else {
                    let lang = LANGS[(c + i + 1) % 3];
                    model.insert(rkey.clone(), lang);
                    put(rkey, lang)
                }
            })
            .collect();
        repo.apply_writes(writes, None).await.unwrap();
    }
    let report = store.gc(Retention::Last(1), |_| {}).await.unwrap();
    assert!(
        report.deleted > 0 && report.commits_dropped > 0,
        "the collection dropped the old commits and deleted blocks: {report:?}"
    );

    paused.release.send(()).unwrap();
    let indexed = build.await.unwrap().expect("the build reads its tree");
    assert_eq!(indexed, model.len() as u64, "the records indexed");
    for lang in LANGS {
        let want = model.values().filter(|l| **l == lang).count() as u64;
        let got = repo
            .count(ITEMS, Some(&format!("lang = {lang:?}")))
            .await
            .unwrap();
        assert_eq!(got, want, "lang = {lang}");
    }

    // Once the build is done, nothing holds the old tree: a collection
    // now deletes what the pin kept.
    let report = store.gc(Retention::Last(1), |_| {}).await.unwrap();
    assert!(report.deleted > 0, "the pin was let go: {report:?}");
}
