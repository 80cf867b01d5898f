//! A server that collects garbage on a schedule does so while writes
//! continue and loses nothing: afterwards every acknowledged write reads
//! back, and with only the newest commit retained the store holds exactly
//! the blocks `sync.getRepo` exports from the head. Once nothing is
//! committed, collections are skipped.

use crate::common;

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use common::{DID, TestServer, config, env, sample};
use keycodec::records::RecordType;
use repo::Repos;
use serde_json::{Value, json};
use server::{GcSchedule, Server};
use store::{Kv, MemoryKv, Retention, Store};

const POST: &str = "app.bsky.feed.post";
const WRITERS: usize = 3;
const KEYS_PER_WRITER: usize = 4;

/// How many collections ended with `outcome` (`ok`, `failed`, `skipped`).
async fn collections(srv: &TestServer, outcome: &str) -> f64 {
    let labels = format!(r#"outcome="{outcome}""#);
    sample(&srv.scrape().await, "datarepo_gc_runs_total", &labels).unwrap()
}

/// Waits until `n` more collections than `after` ended with `outcome`.
async fn wait_for(srv: &TestServer, outcome: &str, after: f64, n: f64) {
    for _ in 0..600 {
        if collections(srv, outcome).await >= after + n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no {n} more {outcome} collections within 12 s");
}

/// Blocks in the store, counted with a range scan over their record type.
async fn stored_blocks(kv: &MemoryKv) -> usize {
    kv.scan(&RecordType::Block.range(), false, usize::MAX)
        .await
        .unwrap()
        .len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn collections_alongside_writes_keep_every_acknowledged_write() {
    let kv = MemoryKv::new();
    let repos = Arc::new(Repos::new(Arc::new(Store::new(kv.clone())), env()));
    let server = Server::new(Arc::clone(&repos), config());
    let gc = server.spawn_gc(GcSchedule {
        interval: Duration::from_millis(30),
        retention: Retention::Last(1),
    });
    let srv = Arc::new(TestServer::start_router(server.router()).await);

    // Writers rewrite their own few records until the server has finished
    // at least three collections, so some overlap the writes; each keeps
    // the last value it was acknowledged for every key.
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let srv = Arc::clone(&srv);
            tokio::spawn(async move {
                let start = collections(&srv, "ok").await;
                let mut last: BTreeMap<String, Value> = BTreeMap::new();
                let mut round = 0;
                while round < 20 || collections(&srv, "ok").await < start + 3.0 {
                    for k in 0..KEYS_PER_WRITER {
                        let rkey = format!("w{w}k{k}");
                        let record = json!({"$type": POST, "text": format!("{rkey} round {round}")});
                        let (status, body) = srv
                            .post(
                                "com.atproto.repo.putRecord",
                                &json!({"repo": DID, "collection": POST, "rkey": rkey, "record": record}),
                            )
                            .await;
                        assert_eq!(status, 200, "{body}");
                        last.insert(rkey, record);
                    }
                    round += 1;
                    assert!(round < 2000, "collections stopped while writes continued");
                }
                last
            })
        })
        .collect();
    let mut model = BTreeMap::new();
    for writer in writers {
        model.extend(writer.await.unwrap());
    }

    // A collection is skipped only when no commit landed since the last
    // successful one started: that one saw the final head.
    let skipped = collections(&srv, "skipped").await;
    wait_for(&srv, "skipped", skipped, 1.0).await;
    let text = srv.scrape().await;
    assert_eq!(
        sample(&text, "datarepo_gc_runs_total", r#"outcome="failed""#),
        Some(0.0)
    );
    assert!(sample(&text, "datarepo_gc_blocks_deleted_total", "").unwrap() > 0.0);
    assert!(sample(&text, "datarepo_gc_freed_bytes_total", "").unwrap() > 0.0);
    assert!(sample(&text, "datarepo_gc_commits_dropped_total", "").unwrap() > 0.0);

    // Every acknowledged write reads back, and nothing else is there.
    for (rkey, value) in &model {
        let (status, body) = srv
            .get(
                "com.atproto.repo.getRecord",
                &[("repo", DID), ("collection", POST), ("rkey", rkey)],
            )
            .await;
        assert_eq!(status, 200, "{rkey}: {body}");
        assert_eq!(&body["value"], value, "{rkey}");
    }
    let (_, list) = srv
        .get(
            "com.atproto.repo.listRecords",
            &[("repo", DID), ("collection", POST), ("limit", "100")],
        )
        .await;
    assert_eq!(list["records"].as_array().unwrap().len(), model.len());

    // With only the head retained, what is stored is exactly what an export
    // from the head holds: the collections deleted every older version.
    let (status, car) = srv
        .get_bytes("com.atproto.sync.getRepo", &[("did", DID)])
        .await;
    assert_eq!(status, 200);
    let mut reader = iroh_car::CarReader::new(&car[..]).await.unwrap();
    let mut exported = 0;
    while reader.next_block().await.unwrap().is_some() {
        exported += 1;
    }
    assert_eq!(stored_blocks(&kv).await, exported);
    assert_eq!(
        sample(&text, "datarepo_gc_reachable_blocks", "").map(|n| n as usize),
        Some(exported)
    );

    // With no commit since, every later collection is skipped.
    let (ok, skipped) = (
        collections(&srv, "ok").await,
        collections(&srv, "skipped").await,
    );
    wait_for(&srv, "skipped", skipped, 2.0).await;
    assert_eq!(collections(&srv, "ok").await, ok);

    // Stopping ends the loop even while it waits for its next interval.
    tokio::time::timeout(Duration::from_secs(10), gc.stop())
        .await
        .expect("the collection loop stopped");
    let idle = server.spawn_gc(GcSchedule {
        interval: Duration::from_secs(3600),
        retention: Retention::All,
    });
    tokio::time::timeout(Duration::from_secs(10), idle.stop())
        .await
        .expect("an idle collection loop stopped");
    srv.stop().await;
}
