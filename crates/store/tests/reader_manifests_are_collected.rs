//! A local store's readers collect the manifests readers leave (two per
//! opening: one naming its checkpoint, one dropping it) once
//! `READER_MANIFESTS_COLLECTED_AT` of them are `LOCAL_METADATA_MIN_AGE`
//! old, so that a store read by one command after another with no writer
//! running does not gather thousands, each listed by every opening.
//! Younger manifests stay, and so do old ones below that count.
//!
//! Ages are made by setting the files' modification times (SlateDB reads
//! an object's age from them).

use std::{
    path::{Path, PathBuf},
    time::{Duration, SystemTime},
};

use store::{Kv, SlateKv};

use crate::common;

fn manifests(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<_> = std::fs::read_dir(dir.join("db").join("manifest"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "manifest"))
        .collect();
    out.sort();
    out
}

#[allow(clippy::disallowed_methods)] // file ages are wall-clock times
fn age_all_but_newest(dir: &Path) {
    let all = manifests(dir);
    for path in &all[..all.len() - 1] {
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_modified(SystemTime::now() - Duration::from_secs(40))
            .unwrap();
    }
}

async fn read_once(dir: &Path) {
    let kv = SlateKv::open_reader(
        &store::Location::Local(dir.to_path_buf()),
        Duration::from_secs(1),
    )
    .await
    .unwrap();
    assert_eq!(kv.get(b"k").await.unwrap().as_deref(), Some(&b"v"[..]));
    kv.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_collect_old_manifests_once_there_are_enough() {
    let tmp = testkit::tempdir("reader-manifests");
    let dir = tmp.path().join("data");
    let kv = SlateKv::open_local(&dir).await.unwrap();
    common::durable_put(&kv, b"k".to_vec(), b"v".to_vec()).await;
    kv.close().await.unwrap();

    // Enough readers to leave more manifests than the count: all young,
    // so all stay.
    let enough = store::READER_MANIFESTS_COLLECTED_AT;
    for _ in 0..enough.div_ceil(2) + 8 {
        read_once(&dir).await;
    }
    let before = manifests(&dir).len();
    assert!(before > enough + 16, "{before} manifests");

    // Old ones, fewer than the count: they stay.
    let all = manifests(&dir);
    let few = &all[..enough / 2];
    for path in few {
        let file = std::fs::File::options().write(true).open(path).unwrap();
        #[allow(clippy::disallowed_methods)] // file ages are wall-clock times
        let old = SystemTime::now() - Duration::from_secs(40);
        file.set_modified(old).unwrap();
    }
    read_once(&dir).await;
    assert!(
        few.iter().all(|p| p.exists()),
        "fewer than the count were collected"
    );
    assert_eq!(manifests(&dir).len(), before + 2);

    // Enough old ones: the next reader's close collects them all, and
    // only them (the newest, which the reader wrote, is young).
    age_all_but_newest(&dir);
    let aged = manifests(&dir);
    read_once(&dir).await;
    let left = manifests(&dir);
    let kept_old: Vec<_> = aged[..aged.len() - 1]
        .iter()
        .filter(|p| p.exists())
        .collect();
    assert!(
        kept_old.len() <= 1,
        "{} old manifests kept (the latest may be), the first {:?}",
        kept_old.len(),
        kept_old.first()
    );
    assert!(left.len() <= 4, "{} manifests left", left.len());

    // The store reads and writes as before.
    read_once(&dir).await;
    let kv = SlateKv::open_local(&dir).await.unwrap();
    assert_eq!(kv.get(b"k").await.unwrap().as_deref(), Some(&b"v"[..]));
    common::durable_put(&kv, b"k2".to_vec(), b"v2".to_vec()).await;
    kv.close().await.unwrap();
}
