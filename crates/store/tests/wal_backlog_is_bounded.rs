//! A writer keeps the WAL a reader would replay short: after more than
//! `WAL_REPLAY_LIMIT` small durable commits (one WAL file each, far below
//! the memtable's size limit) it flushes its memtable to an L0 SST within
//! about `MIN_FLUSH_GAP`, and a backlog of any size within about
//! `MAX_BACKLOG_AGE`. Before, only a full 256 MiB memtable was flushed, and
//! a server that took 1,400 small commits left 600 WAL files for every
//! fresh reader to replay (0.4–2.3 s per CLI read).

use std::time::Duration;

use crate::common;
use store::{EngineMetricValue, Kv, SlateKv};

fn memtable_flushes(kv: &SlateKv) -> u64 {
    kv.engine_metrics()
        .iter()
        .filter(|m| m.name == "slatedb.db.immutable_memtable_flushes")
        .map(|m| match m.value {
            EngineMetricValue::Counter(n) => n,
            _ => 0,
        })
        .sum()
}

async fn commit(kv: &SlateKv, i: u64) {
    let key = format!("k{i:05}");
    common::durable_put(kv, key.clone().into_bytes(), key.into_bytes()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_small_commits_are_flushed_to_l0_soon() {
    let tmp = testkit::tempdir("wal-backlog-count");
    let kv = SlateKv::open_local(&tmp.path().join("data")).await.unwrap();
    let before = memtable_flushes(&kv);
    for i in 0..3 * store::WAL_REPLAY_LIMIT {
        commit(&kv, i).await;
    }
    let deadline = tokio::time::Instant::now() + store::MIN_FLUSH_GAP + Duration::from_secs(3);
    while memtable_flushes(&kv) == before && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        memtable_flushes(&kv) > before,
        "{} commits, no memtable flush",
        3 * store::WAL_REPLAY_LIMIT
    );
    kv.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_few_commits_are_flushed_once_the_writer_is_quiet() {
    let tmp = testkit::tempdir("wal-backlog-age");
    let kv = SlateKv::open_local(&tmp.path().join("data")).await.unwrap();
    let before = memtable_flushes(&kv);
    for i in 0..3 {
        commit(&kv, i).await;
    }
    // Too few to flush for their number.
    tokio::time::sleep(store::MIN_FLUSH_GAP + Duration::from_millis(500)).await;
    assert_eq!(memtable_flushes(&kv), before);
    let deadline = tokio::time::Instant::now() + store::MAX_BACKLOG_AGE + Duration::from_secs(3);
    while memtable_flushes(&kv) == before && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(memtable_flushes(&kv) > before, "no flush of an old backlog");
    kv.close().await.unwrap();
}
