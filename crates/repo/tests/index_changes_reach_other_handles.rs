//! A second handle on the same store (as `serve --replica` is another
//! process on it) that has answered queries before sees an index declared,
//! dropped or declared again by the writer at its next query, although
//! none of these moves the repository's head: its cached declarations and
//! rows are of the old index epoch.

use crate::common;

use std::{collections::BTreeMap, sync::Arc};

use repo::{Error, IndexKind, Repos, Write};
use serde_json::{Value, json};
use store::{MemoryKv, Store};

const DID: &str = "did:example:index-epoch";
const POSTS: &str = "app.test.post";
const LANGS: [&str; 3] = ["en", "fr", "pt"];

/// How many records of the model `f` holds for: the records themselves,
/// not an index.
fn count(model: &BTreeMap<String, Value>, f: impl Fn(&Value) -> bool) -> u64 {
    model.values().filter(|v| f(v)).count() as u64
}

#[test]
fn index_changes_reach_a_handle_with_cached_answers() {
    common::rt().block_on(async {
        let kv = MemoryKv::new();
        let writer_side = Repos::new(Arc::new(Store::new(kv.clone())), common::env());
        let reader_side = Repos::new(Arc::new(Store::new(kv)), common::env());

        let writer = writer_side.create(DID).await.unwrap();
        let model: BTreeMap<String, Value> = (0..300)
            .map(|i| (format!("p{i:04}"), json!({"lang": LANGS[i % 3], "n": i})))
            .collect();
        let writes = common::creates(POSTS, &model);
        writer.apply_writes(writes, None).await.unwrap();
        let english = Some(r#"lang = "en""#);
        let is_english = |v: &Value| v["lang"] == "en";

        let reader = reader_side.open(DID).await.unwrap();
        assert!(matches!(
            reader.count(POSTS, english).await,
            Err(Error::InvalidQuery(_))
        ));
        assert_eq!(reader.count(POSTS, None).await.unwrap(), 300);

        // Declared, dropped, declared again: at each step the reader's
        // cached answer ("no index", then the declaration and its rows)
        // must not answer.
        for again in [false, true] {
            writer
                .add_index(POSTS, "lang", IndexKind::Keyword, |_| {})
                .await
                .unwrap();
            assert_eq!(
                reader.count(POSTS, english).await.unwrap(),
                count(&model, is_english)
            );
            if !again {
                writer.drop_index(POSTS, "lang").await.unwrap();
                assert!(matches!(
                    reader.count(POSTS, english).await,
                    Err(Error::InvalidQuery(_))
                ));
            }
        }

        // Records changed by a commit (the head moves); then another index
        // in place of this one under the same head (the same scope number,
        // columns numbered afresh).
        let mut model = model;
        let mut updates = Vec::new();
        for i in 0..30 {
            let (rkey, value) = (format!("p{:04}", i * 3 + 1), json!({"lang": "en", "n": i}));
            model.insert(rkey.clone(), value.clone());
            updates.push(Write::Update {
                collection: POSTS.into(),
                rkey,
                value,
                swap_record: None,
            });
        }
        writer.apply_writes(updates, None).await.unwrap();
        assert_eq!(
            reader.count(POSTS, english).await.unwrap(),
            count(&model, is_english)
        );
        writer.drop_index(POSTS, "lang").await.unwrap();
        writer
            .add_index(POSTS, "n", IndexKind::Integer, |_| {})
            .await
            .unwrap();
        assert_eq!(
            reader.count(POSTS, Some("n < 10")).await.unwrap(),
            count(&model, |v| v["n"].as_u64().unwrap() < 10)
        );
        assert!(matches!(
            reader.count(POSTS, english).await,
            Err(Error::InvalidQuery(_))
        ));
    });
}
