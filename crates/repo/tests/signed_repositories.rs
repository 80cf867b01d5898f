//! A repository with a signing key signs every commit, the first one
//! included; rotation signs later commits with the new key while the old
//! one stays known; a writer whose key file is gone or holds another key
//! writes nothing.

use crate::common;

use std::sync::Arc;

use repo::{Curve, Error, SigningKey};

fn key(curve: Curve, seed: u8) -> SigningKey {
    SigningKey::generate(curve, |b| b.fill(seed))
}

#[test]
fn every_commit_is_signed_and_rotation_keeps_the_old_key_known() {
    common::rt().block_on(async {
        let dir = testkit::tempdir("signed");
        let (first_file, second_file) = (dir.path().join("a.key"), dir.path().join("b.key"));
        let first = Arc::new(key(Curve::P256, 3));
        first.write_new_file(&first_file).unwrap();
        let repos = common::repos();
        let repo = repos
            .create_signed("did:web:a", Arc::clone(&first), first_file.clone())
            .await
            .unwrap();
        repo.apply_writes(common::posts("app.x.post", 3), None)
            .await
            .unwrap();

        let second = Arc::new(key(Curve::K256, 4));
        second.write_new_file(&second_file).unwrap();
        let keys = repo
            .set_signing_key(Arc::clone(&second), second_file.clone())
            .await
            .unwrap();
        assert_eq!(keys.current.as_ref().unwrap().key, *second.public_key());
        assert_eq!(keys.known, vec![*first.public_key(), *second.public_key()]);
        repo.apply_writes(
            vec![repo::Write::Delete {
                collection: "app.x.post".into(),
                rkey: common::post_rkey(0),
                swap_record: None,
            }],
            None,
        )
        .await
        .unwrap();

        // Oldest first: the create and one write by the first key, one
        // write by the second.
        let mut log = repo.log(10).await.unwrap();
        log.reverse();
        assert_eq!(log.len(), 3);
        let both = [*first.public_key(), *second.public_key()];
        for (entry, signer) in log.iter().zip([0, 0, 1]) {
            assert_eq!(entry.commit.verify(&both), Ok(&both[signer]));
            let other = [both[1 - signer]];
            assert!(entry.commit.verify(&other).is_err());
        }

        // Another process (a fresh handle on the same store) signs with the
        // stored key file.
        let again = repo::Repos::new(Arc::clone(repos.store()), common::env());
        let handle = again.open("did:web:a").await.unwrap();
        let result = handle
            .apply_writes(common::posts("app.x.other", 1), None)
            .await
            .unwrap();
        let newest = handle.log(1).await.unwrap().remove(0);
        assert_eq!(newest.cid, result.commit);
        assert_eq!(newest.commit.verify(&both), Ok(&both[1]));
    });
}

#[test]
fn a_missing_or_foreign_key_file_writes_nothing() {
    common::rt().block_on(async {
        let dir = testkit::tempdir("signed-missing");
        let file = dir.path().join("a.key");
        let signer = Arc::new(key(Curve::P256, 5));
        signer.write_new_file(&file).unwrap();
        let repos = common::repos();
        repos
            .create_signed("did:web:a", signer, file.clone())
            .await
            .unwrap();
        let head = |repos: &repo::Repos<store::MemoryKv>| {
            let store = Arc::clone(repos.store());
            async move { store.head("did:web:a").await.unwrap() }
        };
        let before = head(&repos).await;

        // A writer that has not loaded the key yet.
        let fresh = repo::Repos::new(Arc::clone(repos.store()), common::env());
        std::fs::remove_file(&file).unwrap();
        let err = fresh
            .open("did:web:a")
            .await
            .unwrap()
            .apply_writes(common::posts("app.x.post", 1), None)
            .await
            .unwrap_err();
        assert!(matches!(err, Error::SigningKey { .. }), "{err}");
        assert!(err.to_string().contains("a.key"), "{err}");

        let fresh = repo::Repos::new(Arc::clone(repos.store()), common::env());
        key(Curve::P256, 6).write_new_file(&file).unwrap();
        let err = fresh
            .open("did:web:a")
            .await
            .unwrap()
            .apply_writes(common::posts("app.x.post", 1), None)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("holds another key"), "{err}");
        assert_eq!(head(&repos).await, before);
    });
}

#[test]
fn key_files_are_private_and_never_overwritten() {
    let dir = testkit::tempdir("key-file");
    let file = dir.path().join("k.key");
    let signer = key(Curve::K256, 8);
    signer.write_new_file(&file).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with("-----BEGIN PRIVATE KEY-----\n"), "{text}");
    let err = key(Curve::K256, 9).write_new_file(&file).unwrap_err();
    assert!(err.to_string().contains("k.key"), "{err}");
    let back = SigningKey::read_file(&file).unwrap();
    assert_eq!(back.public_key(), signer.public_key());
    // The key's Debug shows its public key only.
    let debug = format!("{back:?}");
    assert!(debug.contains(&signer.public_key().did_key()));
    assert!(!debug.contains(&*signer.to_pkcs8_pem()));
}

#[test]
fn check_counts_signed_commits_and_names_a_foreign_signature() {
    common::rt().block_on(async {
        let dir = testkit::tempdir("signed-check");
        let file = dir.path().join("a.key");
        let signer = Arc::new(key(Curve::K256, 0x31));
        signer.write_new_file(&file).unwrap();
        let repos = common::repos();
        let repo = repos
            .create_signed("did:web:a", signer, file)
            .await
            .unwrap();
        repo.apply_writes(common::posts("app.x.post", 2), None)
            .await
            .unwrap();
        let report = repos.check("did:web:a", |_| {}).await.unwrap();
        assert!(report.is_intact(), "{:?}", report.problems);
        assert_eq!((report.commits, report.signed), (2, 2));

        // A commit signed by a key the repository does not know, landed
        // behind the repository's back.
        let head = repo.head().await.unwrap();
        let foreign = key(Curve::K256, 0x32);
        let rev = rkey::Tid::from_u64(head.rev.as_u64() + 1024);
        let forged = repo::CommitData::new("did:web:a".into(), rev, head.data, Some(head.commit))
            .signed(&foreign)
            .encode();
        repos
            .store()
            .commit(store::Commit {
                repo: "did:web:a".into(),
                expected: Some(head.commit),
                head: store::Head {
                    commit: forged.cid(),
                    rev: rev.as_u64(),
                },
                blocks: vec![forged.clone()],
                records: Vec::new(),
                collections: Vec::new(),
                index: Vec::new(),
                history: store::LogChange::default(),
                event: None,
                stream: None,
            })
            .await
            .unwrap();
        let report = repos.check("did:web:a", |_| {}).await.unwrap();
        assert_eq!(report.problem_count, 1, "{:?}", report.problems);
        assert!(
            report.problems[0].contains(&forged.cid().to_string()),
            "{:?}",
            report.problems
        );
    });
}
