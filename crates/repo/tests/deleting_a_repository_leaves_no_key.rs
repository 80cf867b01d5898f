//! Deleting a repository removes every key stored under its name (head,
//! commit log, record index and histories, counts, collections, Lexicons,
//! field indexes and their rows, signing keys), leaves the other
//! repositories as they were, and can be run again after a crash.

use crate::common;

use std::sync::Arc;

use keycodec::{KeyRange, records::decode_key};
use repo::{Error, IndexKind, Repos, SigningKey, Write};
use rkey::KeyType;
use serde_json::json;
use store::{Kv, MemoryKv, Store};

const ALPHA: &str = "did:example:alpha";
const BETA: &str = "did:example:beta";
const POSTS: &str = "app.test.post";
const NOTES: &str = "app.test.note";

/// Every stored key, decoded and printed.
async fn keys(kv: &MemoryKv) -> Vec<String> {
    let all = KeyRange {
        start: Vec::new(),
        end: None,
    };
    kv.scan(&all, false, usize::MAX)
        .await
        .unwrap()
        .iter()
        .map(|(k, _)| format!("{:?}", decode_key(k).unwrap()))
        .collect()
}

#[test]
fn a_deleted_repository_leaves_no_key_and_the_others_stay() {
    common::rt().block_on(async {
        let kv = MemoryKv::new();
        let repos = Repos::new(Arc::new(Store::new(kv.clone())), common::env());
        let alpha = repos.create(ALPHA).await.unwrap();
        alpha
            .apply_writes(common::posts(POSTS, 50), None)
            .await
            .unwrap();
        alpha
            .define_collection(POSTS, KeyType::Any, None)
            .await
            .unwrap();
        alpha
            .add_lexicons(vec![json!({"lexicon": 1, "id": NOTES, "defs": {"main": {
                "type": "record", "key": "any",
                "record": {"type": "object", "properties": {"text": {"type": "string"}}}}}})])
            .await
            .unwrap();
        alpha
            .apply_writes(
                vec![Write::Create {
                    collection: NOTES.into(),
                    rkey: Some("n1".into()),
                    value: json!({"text": "a note"}),
                }],
                None,
            )
            .await
            .unwrap();
        alpha
            .add_index(POSTS, "text", IndexKind::Keyword, |_| {})
            .await
            .unwrap();
        let key = Arc::new(SigningKey::generate(repo::Curve::K256, |b| b.fill(9)));
        alpha
            .set_signing_key(key, "/nonexistent/alpha.key".into())
            .await
            .unwrap();
        let beta = repos.create(BETA).await.unwrap();
        beta.apply_writes(common::posts(POSTS, 10), None)
            .await
            .unwrap();
        let before = keys(&kv).await;
        assert!(before.iter().any(|k| k.contains(ALPHA)));
        assert!(before.iter().any(|k| k.starts_with("Bitmap")));
        drop(alpha);

        repos.delete(ALPHA).await.unwrap();
        let after = keys(&kv).await;
        let named: Vec<&String> = after.iter().filter(|k| k.contains(ALPHA)).collect();
        assert!(named.is_empty(), "left under its name: {named:?}");
        let index_rows: Vec<&String> = after
            .iter()
            .filter(|k| {
                [
                    "Bitmap",
                    "Column",
                    "ColumnRkey",
                    "KeywordRow",
                    "KeywordValue",
                ]
                .iter()
                .any(|t| k.starts_with(t))
            })
            .collect();
        assert!(index_rows.is_empty(), "index rows left: {index_rows:?}");
        // Beta's keys are all still there, and it reads as before.
        for k in before.iter().filter(|k| k.contains(BETA)) {
            assert!(after.contains(k), "{k} went");
        }
        assert_eq!(beta.count(POSTS, None).await.unwrap(), 10);
        assert!(matches!(
            repos.open(ALPHA).await,
            Err(Error::RepoNotFound(_))
        ));
        let listed: Vec<String> = repos
            .list()
            .await
            .unwrap()
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        assert_eq!(listed, [BETA]);
        assert!(matches!(
            repos.delete(ALPHA).await,
            Err(Error::RepoNotFound(_))
        ));

        // The name can be used again, from nothing.
        let again = repos.create(ALPHA).await.unwrap();
        assert_eq!(again.count(POSTS, None).await.unwrap(), 0);
        assert!(again.signing_keys().await.unwrap().known.is_empty());
    });
}

#[test]
fn a_deletion_cut_short_is_finished_by_the_next() {
    common::rt().block_on(async {
        const GAMMA: &str = "did:example:gamma";
        let kv = MemoryKv::new();
        let repos = Repos::new(Arc::new(Store::new(kv.clone())), common::env());
        let gamma = repos.create(GAMMA).await.unwrap();
        gamma
            .apply_writes(common::posts(POSTS, 5), None)
            .await
            .unwrap();
        drop((gamma, repos));
        // A crash right after the head went.
        kv.write(vec![store::WriteOp::Delete(keycodec::records::head_key(
            GAMMA,
        ))])
        .await
        .unwrap();
        let repos = Repos::new(Arc::new(Store::new(kv.clone())), common::env());
        assert!(keys(&kv).await.iter().any(|k| k.contains(GAMMA)));
        repos.delete(GAMMA).await.unwrap();
        assert!(!keys(&kv).await.iter().any(|k| k.contains(GAMMA)));
        assert!(matches!(
            repos.delete(GAMMA).await,
            Err(Error::RepoNotFound(_))
        ));
    });
}
