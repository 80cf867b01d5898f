//! Writes become commits; reads, listing, key types, swaps and errors.

use crate::common;

use repo::{Error, Write};
use rkey::KeyType;
use serde_json::json;

const DID: &str = "did:web:example.com";
const POST: &str = "app.bsky.feed.post";
const LIKE: &str = "app.bsky.feed.like";

fn create(collection: &str, rkey: Option<&str>, text: &str) -> Write {
    Write::Create {
        collection: collection.into(),
        rkey: rkey.map(Into::into),
        value: json!({ "text": text }),
    }
}

#[test]
fn create_get_list_delete() {
    common::rt().block_on(async {
        let repos = common::repos();
        let repo = repos.create(DID).await.unwrap();
        let first = repo.head().await.unwrap();
        let c = repo
            .apply_writes(vec![create(POST, None, "hello")], None)
            .await
            .unwrap();
        let rkey = c.results[0].rkey.clone();
        assert!(
            rkey::Tid::parse(&rkey).is_ok(),
            "generated rkey {rkey} is a TID"
        );
        assert!(c.rev > first.rev);
        let got = repo.get_record(POST, &rkey).await.unwrap().unwrap();
        assert_eq!(got.to_json(), json!({ "$type": POST, "text": "hello" }));
        assert_eq!(Some(got.cid()), c.results[0].cid);

        for i in 0..20 {
            repo.apply_writes(vec![create(LIKE, Some(&format!("k{i:02}")), "x")], None)
                .await
                .unwrap();
        }
        let page = repo.list_records(LIKE, None, false, 5).await.unwrap();
        let keys: Vec<_> = page.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["k00", "k01", "k02", "k03", "k04"]);
        let page = repo
            .list_records(LIKE, Some("k04"), false, 2)
            .await
            .unwrap();
        assert_eq!(page[0].0, "k05");
        let page = repo.list_records(LIKE, Some("k01"), true, 5).await.unwrap();
        let keys: Vec<_> = page.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["k00"]);

        repo.apply_writes(
            vec![Write::Delete {
                collection: LIKE.into(),
                rkey: "k03".into(),
                swap_record: None,
            }],
            None,
        )
        .await
        .unwrap();
        assert!(repo.get_record(LIKE, "k03").await.unwrap().is_none());
        let err = repo
            .apply_writes(
                vec![Write::Delete {
                    collection: LIKE.into(),
                    rkey: "k03".into(),
                    swap_record: None,
                }],
                None,
            )
            .await
            .unwrap_err();
        assert!(matches!(err, Error::RecordNotFound(_)), "{err}");
    });
}

#[test]
fn reopened_repository_resumes_revs() {
    common::rt().block_on(async {
        let store = std::sync::Arc::new(store::Store::new(store::MemoryKv::new()));
        let repos = repo::Repos::new(store.clone(), common::env());
        let repo = repos.create(DID).await.unwrap();
        let c = repo
            .apply_writes(vec![create(POST, Some("a"), "1")], None)
            .await
            .unwrap();
        // A second process whose clock is far behind.
        let behind = repo::Env::new(|| 1_000_000, 9);
        let again = repo::Repos::new(store, behind).open(DID).await.unwrap();
        assert_eq!(again.head().await.unwrap().commit, c.commit);
        let d = again
            .apply_writes(vec![create(POST, Some("b"), "2")], None)
            .await
            .unwrap();
        assert!(d.rev > c.rev, "rev {} must follow {}", d.rev, c.rev);
    });
}

#[test]
fn key_types_are_enforced() {
    common::rt().block_on(async {
        let repos = common::repos();
        let repo = repos.create(DID).await.unwrap();
        repo.define_collection("app.bsky.actor.profile", "literal:self".parse().unwrap(), None)
            .await
            .unwrap();
        let err = repo
            .apply_writes(vec![create("app.bsky.actor.profile", Some("other"), "x")], None)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("literal:self"), "{err}");
        repo.apply_writes(vec![create("app.bsky.actor.profile", Some("self"), "x")], None)
            .await
            .unwrap();
        // A delete is a write too: a key that cannot fit is named as such,
        // not reported missing.
        let err = repo
            .apply_writes(
                vec![Write::Delete {
                    collection: "app.bsky.actor.profile".into(),
                    rkey: "other".into(),
                    swap_record: None,
                }],
                None,
            )
            .await
            .unwrap_err();
        assert!(err.to_string().contains("literal:self"), "{err}");

        // Undeclared collections accept any key; declaring checks existing records.
        repo.apply_writes(vec![create(POST, Some("not-a-tid"), "x")], None)
            .await
            .unwrap();
        let err = repo
            .define_collection(POST, KeyType::Tid, None)
            .await
            .unwrap_err();
        assert!(matches!(err, Error::KeyTypeConflict { .. }), "{err}");

        let lexicon = json!({
            "lexicon": 1,
            "id": "com.example.like",
            "defs": { "main": { "type": "record", "key": "tid", "record": { "type": "object" } } }
        });
        let (id, info) = repo.add_lexicon(lexicon).await.unwrap();
        assert_eq!((id.as_str(), info.key), ("com.example.like", KeyType::Tid));
        let err = repo
            .apply_writes(vec![create("com.example.like", Some("abc"), "x")], None)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("not a TID"), "{err}");
        let err = repo
            .add_lexicon(json!({ "lexicon": 1, "id": "com.example.q", "defs": { "main": { "type": "query" } } }))
            .await
            .unwrap_err();
        assert!(matches!(err, Error::InvalidLexicon(_)), "{err}");
        let names: Vec<_> = repo.collections().await.into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["app.bsky.actor.profile", POST, "com.example.like"]);
    });
}

#[test]
fn failed_writes_change_nothing() {
    common::rt().block_on(async {
        let repos = common::repos();
        let repo = repos.create(DID).await.unwrap();
        let c = repo
            .apply_writes(vec![create(POST, Some("a"), "1")], None)
            .await
            .unwrap();
        let head = repo.head().await.unwrap();
        let stale = Some(c.results[0].cid.unwrap());
        let bad_batches = vec![
            // The second write of each batch is bad: the first must not land.
            vec![create(POST, Some("b"), "2"), create(POST, Some("a"), "dup")],
            vec![
                create(POST, Some("b"), "2"),
                create("not an nsid", Some("x"), "1"),
            ],
            vec![
                create(POST, Some("b"), "2"),
                create(POST, Some("bad key!"), "1"),
            ],
            vec![
                create(POST, Some("b"), "2"),
                Write::Create {
                    collection: POST.into(),
                    rkey: Some("c".into()),
                    value: json!({ "f": 0.5 }),
                },
            ],
            vec![
                create(POST, Some("b"), "2"),
                Write::Update {
                    collection: POST.into(),
                    rkey: "a".into(),
                    value: json!({}),
                    swap_record: Some(head.data),
                },
            ],
        ];
        for batch in bad_batches {
            repo.apply_writes(batch, None).await.unwrap_err();
            assert_eq!(repo.head().await.unwrap(), head);
            assert!(repo.get_record(POST, "b").await.unwrap().is_none());
        }
        let err = repo
            .apply_writes(vec![create(POST, Some("b"), "2")], Some(head.data))
            .await
            .unwrap_err();
        assert!(matches!(err, Error::InvalidSwap { .. }), "{err}");
        // The right swaps succeed.
        repo.apply_writes(
            vec![Write::Update {
                collection: POST.into(),
                rkey: "a".into(),
                value: json!({ "text": "new" }),
                swap_record: stale,
            }],
            Some(head.commit),
        )
        .await
        .unwrap();
        assert_eq!(repo.log(100).await.unwrap().len(), 3);
    });
}

#[test]
fn bad_repository_ids_are_rejected() {
    common::rt().block_on(async {
        let repos = common::repos();
        for id in [
            "",
            "did:web",
            "DID:web:x",
            "alice",
            "alice..com",
            "did:web:x:",
        ] {
            let err = repos.create(id).await.unwrap_err();
            assert!(matches!(err, Error::InvalidRepoId { .. }), "{id}: {err}");
        }
        repos.create("alice.example.com").await.unwrap();
        assert!(matches!(
            repos.create("alice.example.com").await.unwrap_err(),
            Error::RepoExists(_)
        ));
        assert!(matches!(
            repos.open("bob.example.com").await.unwrap_err(),
            Error::RepoNotFound(_)
        ));
    });
}

#[test]
fn reads_of_malformed_names_are_syntax_errors_not_misses() {
    common::rt().block_on(async {
        let repos = common::repos();
        let repo = repos.create(DID).await.unwrap();
        let c = repo
            .apply_writes(vec![create(POST, Some("a"), "hi")], None)
            .await
            .unwrap();
        for (collection, rkey) in [("bad..nsid", "a"), (POST, "a/b"), (POST, ".."), (POST, "")] {
            let err = repo.get_record(collection, rkey).await.unwrap_err();
            assert!(
                matches!(err, Error::Syntax(_)),
                "{collection} {rkey:?}: {err}"
            );
            let err = repo.record_at(c.rev, collection, rkey).await.unwrap_err();
            assert!(
                matches!(err, Error::Syntax(_)),
                "{collection} {rkey:?}: {err}"
            );
        }
        for collection in ["bad..nsid", "", "app.bsky.feed.post/a"] {
            let err = repo
                .list_records(collection, None, false, 10)
                .await
                .unwrap_err();
            assert!(matches!(err, Error::Syntax(_)), "{collection}: {err}");
            let err = repo.list_keys(collection, None, 10).await.unwrap_err();
            assert!(matches!(err, Error::Syntax(_)), "{collection}: {err}");
        }
        // Well-formed names that hold nothing are misses, not errors.
        assert!(repo.get_record(POST, "b").await.unwrap().is_none());
        assert!(repo.get_record(LIKE, "a").await.unwrap().is_none());
        assert!(repo.get_record(POST, "a").await.unwrap().is_some());
    });
}

#[test]
fn two_handles_on_one_store_take_turns() {
    common::rt().block_on(async {
        let store = std::sync::Arc::new(store::Store::new(store::MemoryKv::new()));
        let a = repo::Repos::new(store.clone(), common::env());
        let b = repo::Repos::new(store, repo::Env::new(|| 1_767_225_600_000_000, 3));
        let ra = a.create(DID).await.unwrap();
        let rb = b.open(DID).await.unwrap();
        for i in 0..5 {
            ra.apply_writes(vec![create(POST, Some(&format!("a{i}")), "x")], None)
                .await
                .unwrap();
            // b's cached head is stale: its commit conflicts, reloads and lands.
            rb.apply_writes(vec![create(POST, Some(&format!("b{i}")), "y")], None)
                .await
                .unwrap();
        }
        assert_eq!(
            ra.list_records(POST, None, false, 100).await.unwrap().len(),
            10
        );
        assert_eq!(ra.log(100).await.unwrap().len(), 11);
    });
}
