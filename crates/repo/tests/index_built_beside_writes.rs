//! A collection's first index is built while commits go on. The build here
//! waits, after each page of records it reads, for a round of commits
//! (creates, updates, deletes, a record changed and changed back, one
//! deleted and created again, in the pages read and in those still to
//! read, and commits of hundreds of records), so they surely land during
//! it; each commit must finish while the build waits. Afterwards every query answers as the records do (a
//! model kept beside), and so it does after more commits and a rebuild.
//! Two repositories of one store adding their first indexes at once take
//! turns, so they never choose the same scope, and a rebuild waits for a
//! build too.

use crate::common;

use std::{
    collections::BTreeMap,
    sync::{Arc, mpsc},
    time::Duration,
};

use repo::{IndexKind, IndexProgress, Repository, Write};
use serde_json::{Value, json};
use store::MemoryKv;

const ITEMS: &str = "app.test.item";
const LANGS: [&str; 3] = ["en", "fr", "de"];
/// Longer than any commit of this test takes, short enough to fail fast
/// when a commit waits for the build.
const COMMIT_LIMIT: Duration = Duration::from_secs(20);

fn item(i: u64) -> Value {
    json!({"lang": LANGS[(i % 3) as usize], "n": (i % 100) as i64})
}

type Model = BTreeMap<String, Value>;

/// Commits `writes` (one commit) and makes the same change to `model`.
async fn commit(repo: &Repository<MemoryKv>, model: &mut Model, writes: Vec<Write>) {
    for w in &writes {
        match w {
            Write::Create { rkey, value, .. } => {
                model.insert(rkey.clone().unwrap(), value.clone());
            }
            Write::Update { rkey, value, .. } => {
                model.insert(rkey.clone(), value.clone());
            }
            Write::Delete { rkey, .. } => {
                model.remove(rkey);
            }
        }
    }
    tokio::time::timeout(COMMIT_LIMIT, repo.apply_writes(writes, None))
        .await
        .expect("a commit waited for the index build")
        .unwrap();
}

fn put(rkey: &str, value: Value) -> Write {
    Write::Update {
        collection: ITEMS.into(),
        rkey: rkey.into(),
        value,
        swap_record: None,
    }
}

fn delete(rkey: &str) -> Write {
    Write::Delete {
        collection: ITEMS.into(),
        rkey: rkey.into(),
        swap_record: None,
    }
}

fn rkey(i: u64) -> String {
    format!("r{i:05}")
}

/// One round of commits, the `round`th: into the pages already read and
/// those to come (keys spread over the 4,000), and around them.
async fn round(repo: &Repository<MemoryKv>, model: &mut Model, round: u64) {
    let spot = |offset: u64| rkey((round * 937 + offset) % 4000);
    commit(repo, model, vec![put(&spot(10), item(7000 + round))]).await;
    commit(repo, model, vec![put(&spot(2010), item(8001 + round))]).await;
    for key in [spot(20), spot(2020)] {
        if model.contains_key(&key) {
            commit(repo, model, vec![delete(&key)]).await;
        }
    }
    // New keys before every existing one, between two, after every one.
    for key in [
        format!("a{round}"),
        format!("{}x", spot(30)),
        format!("s{round}"),
    ] {
        commit(repo, model, vec![put(&key, item(round + 1))]).await;
    }
    // Changed and changed back.
    let aba = spot(40);
    if let Some(before) = model.get(&aba).cloned() {
        commit(repo, model, vec![put(&aba, item(round + 2))]).await;
        commit(repo, model, vec![put(&aba, before)]).await;
    }
    // A commit of many: more than the build applies with commits held.
    if round.is_multiple_of(2) {
        let many: Vec<Write> = (0..150)
            .map(|i| put(&format!("b{round}-{i:03}"), item(i)))
            .chain((0..150).map(|i| put(&spot(100 + i), item(round + i))))
            .collect();
        commit(repo, model, many).await;
    }
    // Deleted and created again, with another value.
    let again = spot(2500);
    if model.contains_key(&again) {
        commit(repo, model, vec![delete(&again)]).await;
    }
    commit(repo, model, vec![put(&again, item(round + 5))]).await;
}

fn model_count(model: &Model, keep: impl Fn(&Value) -> bool) -> u64 {
    model.values().filter(|v| keep(v)).count() as u64
}

/// Every query of the test against the model.
async fn answers_as_the_records_do(repo: &Repository<MemoryKv>, model: &Model) {
    for lang in LANGS {
        let want = model_count(model, |v| v["lang"] == lang);
        let got = repo
            .count(ITEMS, Some(&format!("lang = {lang:?}")))
            .await
            .unwrap();
        assert_eq!(got, want, "lang = {lang}");
    }
    for (cond, keep) in [
        (
            "n >= 50",
            &(|v: &Value| v["n"].as_i64().unwrap() >= 50) as &dyn Fn(&Value) -> bool,
        ),
        ("n < 10", &|v: &Value| v["n"].as_i64().unwrap() < 10),
        ("lang exists", &|_: &Value| true),
        ("not lang = \"en\"", &|v: &Value| v["lang"] != "en"),
    ] {
        assert_eq!(
            repo.count(ITEMS, Some(cond)).await.unwrap(),
            model_count(model, keep),
            "{cond}"
        );
    }
    // Every page of one query: exactly the model's records, in order.
    let mut got = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = repo
            .query(ITEMS, Some(r#"lang = "fr""#), cursor.as_deref(), false, 100)
            .await
            .unwrap();
        got.extend(page.records.into_iter().map(|(rkey, _)| rkey));
        match page.cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    let want: Vec<&String> = model
        .iter()
        .filter(|(_, v)| v["lang"] == "fr")
        .map(|(k, _)| k)
        .collect();
    assert_eq!(got.iter().collect::<Vec<_>>(), want);
}

/// Adds the index on `path`, with a round of commits after each page the
/// build reads (rounds `first`, `first + 1`, …); the records it indexed.
async fn add_beside_rounds(
    repo: &Arc<Repository<MemoryKv>>,
    model: &mut Model,
    path: &'static str,
    kind: IndexKind,
    first: u64,
) -> u64 {
    let (page_read, mut pages) = tokio::sync::mpsc::unbounded_channel::<u64>();
    let (round_done, rounds) = mpsc::channel::<()>();
    let build = {
        let repo = Arc::clone(repo);
        tokio::spawn(async move {
            repo.add_index(ITEMS, path, kind, move |p: IndexProgress| {
                // Reading (not catching up, not done): a round of commits.
                if p.records > 0 && p.behind == 0 && !p.declared {
                    // Block this worker until the round of commits is in,
                    // unless the test stopped waiting.
                    if page_read.send(p.records).is_ok() {
                        let _ = rounds.recv();
                    }
                }
            })
            .await
        })
    };
    let mut n = 0;
    // Until the build ends (it drops its progress callback), or reads far
    // more pages than there are records (then it goes on without rounds,
    // and fails the checks, not the test's time).
    while pages.recv().await.is_some() && n < 20 {
        round(repo, model, first + n).await;
        n += 1;
        round_done.send(()).unwrap();
    }
    drop(round_done);
    drop(pages);
    assert!(n >= 4, "a round after each of the pages: {n}");
    build.await.unwrap().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn indexes_built_beside_commits_answer_as_the_records_do() {
    let repos = common::repos();
    let repo = repos.create("did:example:beside").await.unwrap();
    let mut model = Model::new();
    // 4,000 records: the build reads them in four pages.
    let creates: Vec<Write> = (0..4000).map(|i| put(&rkey(i), item(i))).collect();
    for chunk in creates.chunks(500) {
        commit(&repo, &mut model, chunk.to_vec()).await;
    }

    let indexed = add_beside_rounds(&repo, &mut model, "lang", IndexKind::Keyword, 0).await;
    assert_eq!(indexed, model.len() as u64, "the records indexed");
    // The collection's second index: in its scope, at the commits' columns.
    let indexed = add_beside_rounds(&repo, &mut model, "n", IndexKind::Integer, 20).await;
    assert_eq!(indexed, model.len() as u64, "the records indexed");
    answers_as_the_records_do(&repo, &model).await;

    // Commits after it: new columns, and changes to the caught-up records.
    for i in 0..4 {
        round(&repo, &mut model, 10 + i).await;
    }
    answers_as_the_records_do(&repo, &model).await;
    repo.rebuild_indexes(|_| {}).await.unwrap();
    answers_as_the_records_do(&repo, &model).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_indexes_of_two_repositories_take_turns() {
    let repos = common::repos();
    let mut models = Vec::new();
    let mut handles = Vec::new();
    for (r, did) in ["did:example:one", "did:example:two"]
        .into_iter()
        .enumerate()
    {
        let repo = repos.create(did).await.unwrap();
        let mut model = Model::new();
        let creates: Vec<Write> = (0..50).map(|i| put(&rkey(i), item(i + r as u64))).collect();
        commit(&repo, &mut model, creates).await;
        models.push(model);
        handles.push(repo);
    }
    // The first build waits in its progress callback, holding the turn.
    let (started, started_rx) = tokio::sync::oneshot::channel::<()>();
    let (release, release_rx) = mpsc::channel::<()>();
    let first = {
        let repo = Arc::clone(&handles[0]);
        let mut started = Some(started);
        tokio::spawn(async move {
            repo.add_index(ITEMS, "lang", IndexKind::Keyword, move |p| {
                // Reading (not catching up, not done): a round of commits.
                if p.records > 0 && p.behind == 0 && !p.declared {
                    if let Some(s) = started.take() {
                        s.send(()).unwrap();
                    }
                    release_rx.recv().unwrap();
                }
            })
            .await
        })
    };
    started_rx.await.unwrap();
    let second = {
        let repo = Arc::clone(&handles[1]);
        tokio::spawn(async move {
            repo.add_index(ITEMS, "lang", IndexKind::Keyword, |_| {})
                .await
        })
    };
    // A rebuild rewrites whole scopes: it waits too.
    let rebuild = {
        let repo = Arc::clone(&handles[0]);
        tokio::spawn(async move { repo.rebuild_indexes(|_| {}).await })
    };
    // They wait for their turn (either takes far less with 50 records).
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!second.is_finished(), "the second build did not wait");
    assert!(!rebuild.is_finished(), "the rebuild did not wait");
    release.send(()).unwrap();
    first.await.unwrap().unwrap();
    second.await.unwrap().unwrap();
    rebuild.await.unwrap().unwrap();
    for (repo, model) in handles.iter().zip(&models) {
        repo.add_index(ITEMS, "n", IndexKind::Integer, |_| {})
            .await
            .unwrap();
        answers_as_the_records_do(repo, model).await;
    }
}
