//! Concurrent writes to one repository share commits (group commit): every
//! request gets its own results under the commit that holds them, a
//! request that fails fails alone, and the history is what a model of the
//! writes says.

mod common;

use std::sync::Arc;

use repo::{Error, Write};

#[test]
fn concurrent_requests_share_commits_and_fail_alone() {
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
        eprintln!("{ok} requests in {} commits", commits.len());
        assert!(repos.check("did:web:a", |_| {}).await.unwrap().is_intact());
        kv.close().await.unwrap();
    });
}
