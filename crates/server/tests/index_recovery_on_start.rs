//! A writer server started on a store where an import's index rebuild was
//! interrupted (its commit landed, its indexes did not follow) answers 503
//! to the queries that need those indexes, finishes the rebuild in the
//! background (`Server::spawn_index_recovery`), and then answers as the
//! records say.

use crate::common;

use std::{collections::BTreeMap, sync::Arc};

use common::{DID, TestServer};
use keycodec::{
    RecordType,
    records::{DecodedKey, decode_key, index_epoch_key},
};
use repo::{IndexKind, Repos, Write};
use serde_json::{Value, json};
use store::{Kv, MemoryKv, Store, WriteOp};

const POSTS: &str = "app.test.post";
const LANGS: [&str; 3] = ["en", "fr", "pt"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_index_rebuild_is_finished_when_a_writer_starts() {
    finished_on_start(MemoryKv::new()).await;
    // SlateDB's writer, which reads the epoch only after its cache was
    // emptied (it is the one process that changes it).
    let tmp = testkit::tempdir("index-recovery");
    let location: store::Location = tmp.path().to_str().unwrap().parse().unwrap();
    let kv = store::SlateKv::open(&location).await.unwrap();
    assert!(kv.sole_writer());
    finished_on_start(kv.clone()).await;
    kv.close().await.unwrap();
}

async fn finished_on_start<K: Kv + Clone + 'static>(kv: K) {
    let model: BTreeMap<String, Value> = (0..120)
        .map(|i| (format!("p{i:04}"), json!({"lang": LANGS[i % 3]})))
        .collect();
    {
        let repos = Repos::new(Arc::new(Store::new(kv.clone())), common::env());
        let repo = repos.create(DID).await.unwrap();
        repo.apply_writes(
            model
                .iter()
                .map(|(rkey, value)| Write::Create {
                    collection: POSTS.into(),
                    rkey: Some(rkey.clone()),
                    value: value.clone(),
                })
                .collect(),
            None,
        )
        .await
        .unwrap();
        repo.add_index(POSTS, "lang", IndexKind::Keyword, |_| {})
            .await
            .unwrap();
    }
    // The state an interrupted import leaves: index data that no longer
    // describes the records (here: none), and the epoch's pending mark
    // (`docs/storage-keys.md`: the number, then 01).
    let mut ops: Vec<WriteOp> = kv
        .scan(&RecordType::Bitmap.range(), false, usize::MAX)
        .await
        .unwrap()
        .into_iter()
        .filter(|(k, _)| matches!(decode_key(k), Ok(DecodedKey::Bitmap { .. })))
        .map(|(k, _)| WriteOp::Delete(k.to_vec()))
        .collect();
    assert!(!ops.is_empty());
    ops.push(WriteOp::Put(
        index_epoch_key(DID),
        bytes::Bytes::from_static(b"\0\0\0\0\0\0\0\x09\x01"),
    ));
    kv.write(ops).await.unwrap();

    let repos = Arc::new(Repos::new(Arc::new(Store::new(kv)), common::env()));
    let server = server::Server::new(repos, common::config());
    let http = TestServer::start_router(server.router()).await;
    let count = |lang: &'static str| {
        let http = &http;
        async move {
            let filter = format!("lang = {lang:?}");
            http.get(
                "dev.datarepo.countRecords",
                &[("repo", DID), ("collection", POSTS), ("where", &filter)],
            )
            .await
        }
    };
    let (status, body) = count("en").await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"], "ServiceUnavailable");
    assert!(
        body["message"].as_str().unwrap().contains("index rebuild"),
        "{body}"
    );

    server.spawn_index_recovery().await.unwrap();
    for lang in LANGS {
        let (status, body) = count(lang).await;
        assert_eq!(status, 200, "{body}");
        let expected = model.values().filter(|v| v["lang"] == lang).count();
        assert_eq!(body["count"], expected, "{lang}");
    }
    http.stop().await;
}
