//! A local store's superseded manifests and compaction records are
//! collected once `LOCAL_METADATA_MIN_AGE` (30 s) old, with no settings
//! file, not after SlateDB's 5 minutes: every writer's open lists and
//! `stat`s both folders, so in a loop of one-shot CLI writes each write
//! grew slower with 5 minutes of them. Younger ones stay.
//!
//! Ages are made by setting the files' modification times (SlateDB reads
//! an object's age from them); a pass of garbage collection runs when a
//! writer closes after large writes (`large_writes_are_flushed_at_close`).

use std::time::{Duration, SystemTime};

use crate::common;
use store::{Kv, SlateKv};

fn files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .map_or_else(|_| Vec::new(), |d| d.flatten().map(|e| e.path()).collect());
    out.sort();
    out
}

#[allow(clippy::disallowed_methods)] // file ages are wall-clock times
fn age(path: &std::path::Path, by: Duration) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - by).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manifests_and_compaction_records_go_after_30_seconds() {
    let tmp = testkit::tempdir("metadata-min-age");
    let dir = tmp.path().join("data");
    // A few one-shot writers, each leaving manifests and compaction records.
    for i in 0..6u8 {
        let kv = SlateKv::open_local(&dir).await.unwrap();
        common::durable_put(&kv, vec![b'k', i], vec![i]).await;
        kv.close().await.unwrap();
    }
    let db = dir.join("db");
    let mut old = Vec::new();
    let mut young = Vec::new();
    for kind in ["manifest", "compactions"] {
        let all = files(&db.join(kind));
        assert!(all.len() > 3, "{kind}: {all:?}");
        // The newest of each may be the latest, which is never collected.
        let (older, newest) = all.split_at(all.len() - 1);
        let (first, second) = older.split_at(older.len() / 2);
        for f in first {
            age(f, Duration::from_secs(40));
        }
        for f in second {
            age(f, Duration::from_secs(15));
        }
        old.extend_from_slice(first);
        young.extend_from_slice(second);
        young.extend_from_slice(newest);
    }
    // Large writes, so that the close flushes and collects.
    let kv = SlateKv::open_local(&dir).await.unwrap();
    let big = usize::try_from(store::WAL_REPLAY_BYTES).unwrap() + 1024;
    common::durable_put(&kv, b"big".to_vec(), vec![7; big]).await;
    kv.close().await.unwrap();

    let kept: Vec<_> = old.iter().filter(|f| f.exists()).collect();
    assert!(kept.is_empty(), "files 40 s old were kept: {kept:?}");
    let gone: Vec<_> = young.iter().filter(|f| !f.exists()).collect();
    assert!(
        gone.is_empty(),
        "files 15 s old or newer were deleted: {gone:?}"
    );
    // Every write is still there.
    let kv = SlateKv::open_local(&dir).await.unwrap();
    for i in 0..6u8 {
        assert_eq!(kv.get(&[b'k', i]).await.unwrap().as_deref(), Some(&[i][..]));
    }
    kv.close().await.unwrap();
}
