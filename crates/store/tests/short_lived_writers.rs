//! Short-lived writers (one CLI command each) on a local store: every
//! acknowledged write survives the next open, closing does not wait for
//! compaction, and SlateDB's garbage collection removes the manifests,
//! compaction records and WAL files they leave once they are old enough
//! (on a local directory its boundary files cannot be rewritten, and with
//! them nothing was ever collected after the first pass).

use store::{Kv, Location, SlateKv, SlateOptions, WriteOp};

fn files_in(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir).map_or_else(|_| Vec::new(), |d| d.flatten().map(|e| e.path()).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_lived_writers_keep_their_writes_and_leave_no_pile_of_files() {
    let tmp = testkit::tempdir("short-lived-writers");
    let dir = tmp.path().join("data");
    // Files are collectable once a second old (by default: 5 min, an hour
    // for WAL fences).
    let settings = tmp.path().join("settings.toml");
    let mut text = String::new();
    for kind in ["manifest", "wal", "wal_fence", "compacted", "compactions"] {
        text.push_str(&format!(
            "[garbage_collector_options.{kind}_options]\nmin_age = \"1s\"\n"
        ));
    }
    std::fs::write(&settings, text).unwrap();
    let mut options = SlateOptions::default();
    options.settings_file = Some(settings);
    let location = Location::Local(dir.clone());
    let db = dir.join("db");
    // Flushing closes come every `WAL_REPLAY_LIMIT / 2` writers or so (each
    // writes two WAL files: its fence and its commit); each runs a pass.
    let phase = store::WAL_REPLAY_LIMIT as usize;
    let mut written = 0;
    let mut old_files = Vec::new();
    for round in 0..2 {
        for _ in 0..phase {
            let kv = SlateKv::open_with(&location, &options).await.unwrap();
            // Every earlier writer's value is there.
            if written > 0 {
                let previous = format!("k{:04}", written - 1);
                assert_eq!(
                    kv.get(previous.as_bytes()).await.unwrap().as_deref(),
                    Some(previous.as_bytes()),
                    "writer {written}"
                );
            }
            let key = format!("k{written:04}");
            kv.apply(vec![WriteOp::Put(key.clone().into(), key.into())])
                .await
                .unwrap()
                .wait()
                .await
                .unwrap();
            kv.close().await.unwrap();
            written += 1;
        }
        if round == 0 {
            for kind in ["manifest", "compactions", "wal"] {
                old_files.extend(files_in(&db.join(kind)));
            }
            // What exists now becomes old enough for the next pass.
            tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
        }
    }
    let kv = SlateKv::open_with(&location, &options).await.unwrap();
    let all = kv
        .scan(&keycodec::KeyRange::prefix(b"k"), false, usize::MAX)
        .await
        .unwrap();
    assert_eq!(all.len(), written);
    kv.close().await.unwrap();
    // The first round's manifests, compaction records and WAL files (about
    // seven per writer) are gone but for the few still current.
    let left: Vec<_> = old_files.iter().filter(|f| f.exists()).collect();
    assert!(
        old_files.len() > phase && left.len() <= 8,
        "of the {} files the first {phase} writers left, {} remain: {left:?}",
        old_files.len(),
        left.len()
    );
}
