//! Collecting the manifests that a local store's readers leave behind.
//!
//! A reader keeps a checkpoint in the manifest while it is open, so every
//! opening writes two manifests (one naming the checkpoint, one dropping
//! it), and only a writer collects superseded ones. A store read by one
//! command after another with no server running gathered thousands, and
//! each opening lists and `stat`s them all to find the latest: 5,346 of
//! them made `datarepo query --count` on a 1,000,000-record store take
//! 71 ms instead of 24 ms (`docs/benchmarks.md`, "Measurements behind
//! defaults"). So a reader's close collects them once enough are old
//! enough to go, with the writer's manifest settings (by default
//! [`LOCAL_METADATA_MIN_AGE`](super::options::LOCAL_METADATA_MIN_AGE)):
//! every collector of a store must use the same minimum age, so that a
//! stalled writer cannot recreate a manifest one of them deleted.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, SystemTime},
};

use slatedb::{config::GarbageCollectorOptions, object_store::ObjectStore};

use super::location::DB_PATH;

/// How many manifests old enough to collect a reader's close leaves
/// before it collects them: a pass lists and `stat`s every manifest, so
/// it is made once per this many rather than at every close.
pub const COLLECT_AT: usize = 256;

/// Retries of a pass's object-store calls (SlateDB's default retries for
/// ever): a close that cannot collect leaves the manifests to a later one.
const RETRIES: u32 = 2;

/// What a reader needs to collect its store's manifests.
pub(crate) struct ManifestCollector {
    /// The store's directory.
    dir: PathBuf,
    /// The database's path in its object store, and the store.
    path: String,
    store: Arc<dyn ObjectStore>,
    /// The manifests' minimum age, and the pass: the writer's, over
    /// manifests only.
    min_age: Duration,
    options: GarbageCollectorOptions,
}

impl ManifestCollector {
    /// A collector with the writer's collection settings `writer`; none
    /// where the writer does not collect manifests.
    pub(crate) fn new(
        dir: &Path,
        path: String,
        store: Arc<dyn ObjectStore>,
        writer: &GarbageCollectorOptions,
    ) -> Option<Self> {
        let min_age = writer.manifest_options?.min_age;
        Some(Self {
            dir: dir.to_path_buf(),
            path,
            store,
            min_age,
            options: GarbageCollectorOptions {
                wal_options: None,
                wal_fence_options: None,
                compacted_options: None,
                compactions_options: None,
                detach_options: None,
                object_store_max_retries: Some(RETRIES),
                ..writer.clone()
            },
        })
    }

    /// Collects superseded manifests when at least [`COLLECT_AT`] are old
    /// enough. Failures are logged, not returned: the reads the reader made
    /// stand, and a later close tries again.
    pub(crate) async fn collect_if_many(&self) {
        let dir = self.dir.join(DB_PATH).join("manifest");
        let min_age = self.min_age;
        let old = tokio::task::spawn_blocking(move || old_manifests(&dir, min_age))
            .await
            .unwrap_or(0);
        if old < COLLECT_AT {
            return;
        }
        if let Err(e) =
            slatedb::admin::AdminBuilder::new(self.path.clone(), Arc::clone(&self.store))
                .build()
                .run_gc_once(self.options.clone())
                .await
        {
            tracing::info!(error = %e, "collecting superseded manifests failed");
        }
    }
}

/// How many of the manifests in `dir` were written at least `min_age`
/// before the newest: ids are given in order, so those are the first ones
/// by name, found by a binary search over their modification times (a few
/// `stat`s, not one per manifest). The newest is the one the closing
/// reader has just written, so its time stands for now, by the file
/// system's clock, which is the one the collector compares ages with.
fn old_manifests(dir: &Path, min_age: Duration) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| name.ends_with(".manifest"))
        .collect();
    // Zero-padded ids: their names sort as the ids do.
    names.sort_unstable();
    let modified = |name: &String| -> Option<SystemTime> {
        std::fs::metadata(dir.join(name)).ok()?.modified().ok()
    };
    let Some(newest) = names.last().and_then(modified) else {
        return 0;
    };
    let Some(before) = newest.checked_sub(min_age) else {
        return 0;
    };
    // A manifest gone since the listing (collected by another process)
    // counts as old: it sorts among them.
    names.partition_point(|name| modified(name).is_none_or(|t| t <= before))
}
