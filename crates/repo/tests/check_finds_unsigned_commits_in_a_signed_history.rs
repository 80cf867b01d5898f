//! `Repos::check` reports a signed repository whose chain took an
//! unsigned commit after a signed one (what a restore that forgot the
//! repository's keys used to write), and finds nothing wrong with a
//! repository that started signing after unsigned commits.

use crate::common;

use std::sync::Arc;

use repo::{Curve, Repos, SigningKey};
use store::MemoryKv;

const DID: &str = "did:web:a";

async fn unsigned_problems(repos: &Repos<MemoryKv>) -> Vec<String> {
    let report = repos.check(DID, |_| {}).await.unwrap();
    report
        .problems
        .into_iter()
        .filter(|p| p.contains("is not signed"))
        .collect()
}

#[test]
fn an_unsigned_commit_after_a_signed_one_is_reported() {
    common::rt().block_on(async {
        let dir = testkit::tempdir("check-unsigned");
        let file = dir.path().join("a.key");
        let key = Arc::new(SigningKey::generate(Curve::K256, |b| b.fill(5)));
        key.write_new_file(&file).unwrap();
        let repos = common::repos();
        let repo = repos
            .create_signed(DID, Arc::clone(&key), file)
            .await
            .unwrap();
        repo.apply_writes(common::posts("app.x.post", 2), None)
            .await
            .unwrap();
        assert_eq!(unsigned_problems(&repos).await, Vec::<String>::new());

        // The store forgets the keys behind the repository's back; a
        // handle opened then writes an unsigned commit.
        let store = Arc::clone(repos.store());
        let saved = store.signing_keys(DID).await.unwrap().unwrap();
        store
            .put_signing_keys(DID, br#"{"known":[]}"#.to_vec().into())
            .await
            .unwrap();
        let forgetful = Repos::new(Arc::clone(&store), common::env());
        let unsigned = forgetful
            .open(DID)
            .await
            .unwrap()
            .apply_writes(
                vec![repo::Write::Delete {
                    collection: "app.x.post".into(),
                    rkey: common::post_rkey(0),
                    swap_record: None,
                }],
                None,
            )
            .await
            .unwrap();
        store.put_signing_keys(DID, saved).await.unwrap();

        let problems = unsigned_problems(&Repos::new(store, common::env())).await;
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].contains(&unsigned.commit.to_string()),
            "{problems:?}"
        );
    });
}

#[test]
fn signing_that_starts_after_unsigned_commits_is_not_damage() {
    common::rt().block_on(async {
        let dir = testkit::tempdir("check-signing-starts");
        let file = dir.path().join("a.key");
        let key = Arc::new(SigningKey::generate(Curve::P256, |b| b.fill(6)));
        key.write_new_file(&file).unwrap();
        let repos = common::repos();
        let repo = repos.create(DID).await.unwrap();
        repo.apply_writes(common::posts("app.x.post", 2), None)
            .await
            .unwrap();
        repo.set_signing_key(key, file).await.unwrap();
        repo.apply_writes(common::posts("app.y.post", 1), None)
            .await
            .unwrap();
        let report = repos.check(DID, |_| {}).await.unwrap();
        assert!(report.is_intact(), "{:?}", report.problems);
        assert_eq!(report.signed, 1);
    });
}
