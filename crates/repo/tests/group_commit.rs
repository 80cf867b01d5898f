//! Concurrent writes to one repository share commits (group commit): the
//! requests that wait while a commit is applied are committed together,
//! each with its own results under the commit that holds them; a request
//! that fails fails alone; every record is there afterwards.

use crate::common;

use std::sync::Arc;

use repo::{Error, Write};

#[test]
fn concurrent_requests_fail_alone_and_all_land() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // On SlateDB, where a commit waits for its write: requests pile up.
        let dir = testkit::tempdir("group-commit");
        let kv = store::SlateKv::open_local(dir.path()).await.unwrap();
        let repos = repo::Repos::new(Arc::new(store::Store::new(kv.clone())), common::env());
        let repo = repos.create("did:web:a").await.unwrap();
        repo.apply_writes(
            vec![Write::Create {
                collection: "app.x.post".into(),
                rkey: Some("taken".into()),
                value: serde_json::json!({"n": -1}),
            }],
            None,
        )
        .await
        .unwrap();
        let requests = 400;
        let mut tasks = Vec::new();
        for i in 0..requests {
            let repo = Arc::clone(&repo);
            tasks.push(tokio::spawn(async move {
                // Every 50th request creates a record that exists: it must
                // fail, and alone.
                let rkey = if i % 50 == 0 {
                    "taken".to_owned()
                } else {
                    format!("r{i:04}")
                };
                repo.apply_writes(
                    vec![Write::Create {
                        collection: "app.x.post".into(),
                        rkey: Some(rkey),
                        value: serde_json::json!({"n": i}),
                    }],
                    None,
                )
                .await
            }));
        }
        let mut commits = std::collections::HashSet::new();
        let mut ok = 0;
        for (i, task) in tasks.into_iter().enumerate() {
            match task.await.unwrap() {
                Ok(result) => {
                    assert_ne!(i % 50, 0);
                    assert_eq!(result.results.len(), 1);
                    assert_eq!(result.results[0].rkey, format!("r{i:04}"));
                    commits.insert(result.commit);
                    ok += 1;
                }
                Err(e) => {
                    assert_eq!(i % 50, 0, "request {i}: {e}");
                    assert!(matches!(e, Error::RecordExists(_)), "{e}");
                }
            }
        }
        assert_eq!(ok, requests - requests / 50);
        // Every record is there with its value, and the log has one entry
        // per distinct commit acknowledged (plus the creation and the first).
        for i in (0..requests).filter(|i| i % 50 != 0) {
            let record = repo
                .get_record("app.x.post", &format!("r{i:04}"))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(record.to_json()["n"], i);
        }
        let log = repo.log(usize::MAX).await.unwrap();
        assert_eq!(log.len(), commits.len() + 2);
        assert!(repos.check("did:web:a", |_| {}).await.unwrap().is_intact());
        kv.close().await.unwrap();
    });
}

#[test]
fn requests_waiting_for_a_commit_are_committed_together() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let kv = common::PausingKv::new(common::PauseAt::Write);
        let repos = repo::Repos::new(Arc::new(store::Store::new(kv.clone())), common::env());
        let repo = repos.create("did:web:a").await.unwrap();
        let create = |repo: &Arc<repo::Repository<common::PausingKv>>, rkey: String| {
            let repo = Arc::clone(repo);
            tokio::spawn(async move {
                repo.apply_writes(
                    vec![Write::Create {
                        collection: "app.x.post".into(),
                        rkey: Some(rkey),
                        value: serde_json::json!({}),
                    }],
                    None,
                )
                .await
            })
        };
        // The first commit stops inside its write, holding the lock.
        let release = kv.arm();
        let first = create(&repo, "first".into());
        kv.reached().await;
        let waiting: Vec<_> = (0..300)
            .map(|i| create(&repo, format!("r{i:03}")))
            .collect();
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        release.send(()).unwrap();
        let first = first.await.unwrap().unwrap();
        let mut commits = std::collections::HashSet::new();
        for (i, task) in waiting.into_iter().enumerate() {
            let result = task.await.unwrap().unwrap();
            assert_eq!(result.results.len(), 1);
            assert_eq!(result.results[0].rkey, format!("r{i:03}"));
            assert_ne!(result.commit, first.commit);
            commits.insert(result.commit);
        }
        // 300 waiting requests of one write each: groups of at most 200.
        assert_eq!(commits.len(), 2, "{commits:?}");
        let log = repo.log(usize::MAX).await.unwrap();
        assert_eq!(log.len(), 1 + 1 + 2);
        assert_eq!(
            repo.list_records("app.x.post", None, false, 1000)
                .await
                .unwrap()
                .len(),
            301
        );
    });
}
