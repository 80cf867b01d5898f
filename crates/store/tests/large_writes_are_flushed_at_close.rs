//! A writer that closes after a few large writes (an import, an `index
//! add`: a few WAL SSTs holding many MiB) flushes its memtable to an L0
//! SST, so the next open replays none of it; one that closes after a small
//! write does not (a one-shot `put` writes no L0 SST). Before, the backlog
//! was counted in WAL SSTs alone, and a 1,000,000-record store's import
//! left hundreds of MiB of WAL that every later command replayed into
//! memory (a `query --count` took 0.4-1.1 s and 600 MB instead of 20 ms).
//!
//! What the store holds is read from its directory: L0 SSTs are files
//! under `db/compacted/`, WAL SSTs under `db/wal/`.

use std::path::Path;

use crate::common;
use store::{Kv, SlateKv};

fn l0_files(store_dir: &Path) -> usize {
    std::fs::read_dir(store_dir.join("db").join("compacted")).map_or(0, |d| d.flatten().count())
}

/// `bytes` that LZ4 cannot shrink (xorshift), so the WAL holds them all.
fn incompressible(bytes: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..bytes)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()[0]
        })
        .collect()
}

/// Two durable commits of `each` bytes.
async fn write_two(kv: &SlateKv, each: usize) {
    for i in 0..2u8 {
        common::durable_put(kv, vec![b'k', i], incompressible(each, u64::from(i) + 7)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_after_large_writes_flushes_and_after_small_ones_does_not() {
    let each = usize::try_from(store::WAL_REPLAY_BYTES).unwrap() * 3 / 4;

    let tmp = testkit::tempdir("large-writes-close");
    let small = tmp.path().join("small");
    let kv = SlateKv::open_local(&small).await.unwrap();
    write_two(&kv, 1024).await;
    kv.close().await.unwrap();
    assert_eq!(l0_files(&small), 0, "a small backlog was flushed at close");

    let large = tmp.path().join("large");
    let kv = SlateKv::open_local(&large).await.unwrap();
    write_two(&kv, each).await;
    assert_eq!(l0_files(&large), 0, "flushed before the close");
    kv.close().await.unwrap();
    assert!(
        l0_files(&large) > 0,
        "{} bytes in two WAL SSTs left for the next open to replay",
        2 * each
    );
    let kv = SlateKv::open_local(&large).await.unwrap();
    assert_eq!(kv.get(b"k\x01").await.unwrap().map(|v| v.len()), Some(each));
    kv.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_closes_with_a_flush_when_it_opened_on_a_large_backlog() {
    let each = usize::try_from(store::WAL_REPLAY_BYTES).unwrap() * 3 / 4;
    let tmp = testkit::tempdir("large-writes-carried");
    let dir = tmp.path().join("data");
    // A writer that stops without closing (a crash, a kill) leaves its
    // WAL unflushed.
    let first = SlateKv::open_local(&dir).await.unwrap();
    write_two(&first, each).await;
    std::mem::forget(first);
    // The next writer replays it, writes nothing, and closes.
    let next = SlateKv::open_local(&dir).await.unwrap();
    assert_eq!(l0_files(&dir), 0, "the first writer's WAL was flushed");
    next.close().await.unwrap();
    assert!(
        l0_files(&dir) > 0,
        "the WAL the writer found ({} bytes) was left for the next open",
        2 * each
    );
}
