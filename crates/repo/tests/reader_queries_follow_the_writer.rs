//! A SlateDB reader (as `serve --replica` or a CLI beside a server opens
//! the store) that has answered queries from its cache answers the next
//! ones from the writer's new commits and index changes once it has
//! refreshed: its cache is kept only while the reader's view is unchanged.
//! The reader's clock stands still, so nothing here expires by age.

use crate::common;

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use repo::{Env, Error, IndexKind, Repos, Repository};
use serde_json::{Value, json};
use store::{Location, SlateKv, Store};

const DID: &str = "did:example:reader-cache";
const POSTS: &str = "app.test.post";
const ENGLISH: Option<&str> = Some(r#"lang = "en""#);

fn english(model: &BTreeMap<String, Value>) -> u64 {
    model.values().filter(|v| v["lang"] == "en").count() as u64
}

/// Queries `reader` until `want` holds of its answer (the reader refreshes
/// every 50 ms); fails after 10 s, naming `what`.
async fn eventually<T: std::fmt::Debug>(
    reader: &Repository<SlateKv>,
    what: &str,
    query: impl AsyncFn(&Repository<SlateKv>) -> Result<T, Error>,
    want: impl Fn(&Result<T, Error>) -> bool,
) {
    let mut last = None;
    for _ in 0..200 {
        let got = query(reader).await;
        if want(&got) {
            return;
        }
        last = Some(got);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the reader never saw {what}: it still answers {last:?}");
}

#[test]
fn a_reader_with_cached_answers_follows_the_writer() {
    common::rt().block_on(async {
        let dir = testkit::tempdir("reader-cache");
        let location = Location::Local(dir.path().to_path_buf());
        let kv = SlateKv::open(&location).await.unwrap();
        let writers = Repos::new(Arc::new(Store::new(kv.clone())), common::env());
        let writer = writers.create(DID).await.unwrap();
        let mut model: BTreeMap<String, Value> = (0..60)
            .map(|i| {
                let lang = if i % 3 == 0 { "en" } else { "fr" };
                (format!("p{i:04}"), json!({"lang": lang, "n": i}))
            })
            .collect();
        writer
            .apply_writes(common::creates(POSTS, &model), None)
            .await
            .unwrap();
        writer
            .add_index(POSTS, "lang", IndexKind::Keyword, |_| {})
            .await
            .unwrap();

        let reader_kv = SlateKv::open_reader(&location, Duration::from_millis(50))
            .await
            .unwrap();
        let stopped_clock = Env::new(|| 1_767_225_600_000_000, 8);
        let readers = Repos::new(Arc::new(Store::new(reader_kv.clone())), stopped_clock);
        let reader = readers.open(DID).await.unwrap();
        // Answered twice: the second from what the first cached.
        for _ in 0..2 {
            assert_eq!(reader.count(POSTS, ENGLISH).await.unwrap(), english(&model));
        }

        // A commit moves the head.
        let more: BTreeMap<String, Value> = (60..75)
            .map(|i| (format!("p{i:04}"), json!({"lang": "en", "n": i})))
            .collect();
        writer
            .apply_writes(common::creates(POSTS, &more), None)
            .await
            .unwrap();
        model.extend(more);
        let want = english(&model);
        eventually(
            &reader,
            "the new commit",
            async |r| r.count(POSTS, ENGLISH).await,
            |got| matches!(got, Ok(n) if *n == want),
        )
        .await;

        // An index declared leaves the head where it was.
        writer
            .add_index(POSTS, "n", IndexKind::Integer, |_| {})
            .await
            .unwrap();
        eventually(
            &reader,
            "the new index",
            async |r| r.count(POSTS, Some("n < 10")).await,
            |got| matches!(got, Ok(10)),
        )
        .await;
        writer.drop_index(POSTS, "lang").await.unwrap();
        eventually(
            &reader,
            "the index dropped",
            async |r| r.count(POSTS, ENGLISH).await,
            |got| matches!(got, Err(Error::InvalidQuery(_))),
        )
        .await;

        drop((reader, readers));
        reader_kv.close().await.unwrap();
        drop((writer, writers));
        kv.close().await.unwrap();
    });
}
