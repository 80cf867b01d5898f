//! [`SlateOptions`]: SlateDB's settings as datarepo chooses them, and
//! a settings file over them.

use crate::error::Error;

/// How to open a SlateDB database.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SlateOptions {
    /// A SlateDB settings file (`.toml`, `.json` or `.yaml`) whose fields
    /// override datarepo's defaults; fields it omits keep them.
    pub settings_file: Option<std::path::PathBuf>,
    /// Bytes each range scan fetches ahead from an SST file (default
    /// [`DEFAULT_SCAN_READ_AHEAD`]).
    pub scan_read_ahead_bytes: Option<usize>,
    /// The WAL flush interval when no settings file is given (default
    /// [`DEFAULT_FLUSH_INTERVAL`] for a local directory,
    /// [`DEFAULT_S3_FLUSH_INTERVAL`] on S3).
    pub flush_interval: Option<std::time::Duration>,
    /// The size of the batches in which a bulk commit (an import) writes
    /// its blocks ahead of the repository's state (default
    /// [`DEFAULT_BULK_BATCH_BYTES`]).
    pub bulk_batch_bytes: Option<usize>,
    /// A reader of a local store opens the database itself even when the
    /// store's writer answers reads on its socket
    /// ([`READ_SOCKET`](crate::READ_SOCKET)).
    pub direct_reads: bool,
    /// The block and metadata cache, shared with the other databases this
    /// process opens (a partitioned store's partitions); default: a cache
    /// of SlateDB's default size for this database alone.
    pub shared_cache: Option<SharedCache>,
    /// How many databases this process keeps open together (a partitioned
    /// store's partitions): memtables, unflushed bytes and the shard cache
    /// are that many times smaller (with floors), so that the process's
    /// memory stays about one database's. Default 1.
    pub databases_open: Option<u32>,
}

/// One SlateDB block and metadata cache for several databases of a process:
/// a process holding 64 partitions caches 640 MiB, not 64 times that.
#[derive(Clone)]
pub struct SharedCache {
    cache: std::sync::Arc<dyn slatedb::db_cache::DbCache>,
    next_scope: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl SharedCache {
    /// A cache of `block_bytes` of data blocks and `meta_bytes` of indexes
    /// and filters.
    #[must_use]
    pub fn new(block_bytes: u64, meta_bytes: u64) -> Self {
        use slatedb::db_cache::moka::{MokaCache, MokaCacheOptions};
        let part = |max_capacity| -> Option<std::sync::Arc<dyn slatedb::db_cache::DbCache>> {
            Some(std::sync::Arc::new(MokaCache::new_with_opts(
                MokaCacheOptions {
                    max_capacity,
                    ..MokaCacheOptions::default()
                },
            )))
        };
        let cache = slatedb::db_cache::SplitCache::new()
            .with_block_cache(part(block_bytes))
            .with_meta_cache(part(meta_bytes))
            .build();
        Self {
            cache: std::sync::Arc::new(cache),
            next_scope: std::sync::Arc::default(),
        }
    }

    /// The cache and a scope of it no other database of this process uses.
    pub(crate) fn scope(&self) -> (std::sync::Arc<dyn slatedb::db_cache::DbCache>, u64) {
        let scope = self
            .next_scope
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        (std::sync::Arc::clone(&self.cache), scope)
    }
}

impl std::fmt::Debug for SharedCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedCache").finish_non_exhaustive()
    }
}

impl PartialEq for SharedCache {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.next_scope, &other.next_scope)
    }
}

impl Eq for SharedCache {}

/// A partitioned process's block cache ([`SharedCache`]), all partitions
/// together: half SlateDB's default for one database.
pub const PARTITIONS_BLOCK_CACHE_BYTES: u64 = 256 << 20;

/// A partitioned process's metadata cache, all partitions together.
pub const PARTITIONS_META_CACHE_BYTES: u64 = 64 << 20;

/// The smallest memtable a database shares memory down to
/// ([`SlateOptions::databases_open`]).
pub const MIN_L0_SST_SIZE_BYTES: usize = 8 << 20;

/// SlateDB's bound on a writer's unflushed memtables, for one database.
const MAX_UNFLUSHED_BYTES: usize = 1 << 30;

/// Bytes a range scan fetches ahead from an SST file. SlateDB's default
/// fetches one 4 KiB block per request; a 100-record page spans several, so
/// 16 KiB halves cold page latency locally and makes it 3-4x faster on
/// S3-compatible storage, where 64 KiB and more fetch too much
/// (`docs/benchmarks.md`, `store-scan`).
pub const DEFAULT_SCAN_READ_AHEAD: usize = 16 << 10;

/// The size of a block in the SST files a writer makes (SlateDB's default
/// is 4 KiB). An SST's index holds one entry per block, and a reader loads
/// and verifies the whole index of each SST it touches: on a
/// 1,000,000-record store a `datarepo query --count` process spent a third
/// of its time there. With 16 KiB blocks that process took 0.57 of its
/// time, random block gets from SST files ran 40–60% faster (the block
/// cache holds more of them) and pages of records never read before took
/// as long (`docs/benchmarks.md`, "Measurements behind defaults"). 32 KiB
/// blocks open a reader faster still but read each cold record's block
/// slower (just-opened queries 10–25% slower, measured twice). Each SST
/// records its own block size, so SSTs written before keep theirs.
pub const SST_BLOCK_BYTES: slatedb::SstBlockSize = slatedb::SstBlockSize::Block16Kib;

/// How often SlateDB flushes its write-ahead log to a local directory, and so
/// how long a commit waits to become durable (commits arriving together share
/// one flush). SlateDB's own default is 100 ms, which caps a single writer at
/// 10 commits/s; `docs/benchmarks.md` has the measurement behind this choice.
pub const DEFAULT_FLUSH_INTERVAL: std::time::Duration = std::time::Duration::from_millis(1);

/// The WAL flush interval on S3-compatible storage, where every flush is a
/// PUT request: longer, so that a trickle of writes does not become a stream
/// of requests. (Not yet chosen by measurement on object storage.)
pub const DEFAULT_S3_FLUSH_INTERVAL: std::time::Duration = std::time::Duration::from_millis(10);

/// How large a memtable grows before SlateDB freezes it and writes it to an
/// L0 SST (SlateDB's own default is 64 MiB). Every commit carried ~11 KB of
/// Pail shard versions when this was measured (about 2 KB since shard
/// versions are stored as deltas), so a write-heavy server filled 64 MiB memtables in
/// under a second; their L0 SSTs then fill SlateDB's L0 slots faster than
/// the compactor merges them, and writers stall. 256 MiB memtables mean a
/// quarter as many L0 SSTs and compactions for the same bytes (sustained
/// `createRecord` over 60 s: 3,698–5,147/s with 64 MiB, 7,018–8,068/s with
/// 256 MiB, `docs/benchmarks.md`). Unflushed memtables stay bounded by SlateDB's
/// `max_unflushed_bytes` (1 GiB).
pub const DEFAULT_L0_SST_SIZE_BYTES: usize = 256 << 20;

/// How often, on a local directory, SlateDB's compactor looks for work to
/// schedule and its worker for scheduled work to run (SlateDB's default for
/// both is 5 s). A write that finds L0 full waits for a compaction, and a
/// short-lived process (one CLI command) flushes its memtable to L0 when
/// it closes: with 5 s polls, a compaction scheduled by one process ran only
/// when a later one happened to live 5 s, and single `put`s stalled 3-8 s
/// in `close` waiting for it. A poll here reads one small local file.
pub const LOCAL_COMPACTION_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// How old an empty WAL fence file on a local store must be before garbage
/// collection deletes it.
pub const LOCAL_WAL_FENCE_MIN_AGE: std::time::Duration = std::time::Duration::from_secs(3600);

/// How old a superseded manifest or compactions record on a local store
/// must be before garbage collection deletes it (SlateDB's default is 5
/// minutes). Every writer's open lists both folders several times, each
/// file `stat`ed, and a one-record `put` writes about three manifests: a
/// loop of CLI writes kept 5 minutes of them, and each put grew slower
/// with the count (`docs/benchmarks.md`, "CLI: one-record `datarepo
/// put`"). What is still read is safe: the latest of each is never
/// deleted, a checkpoint's manifest neither, and SlateDB lists again when
/// a manifest it listed is gone before it reads it.
pub const LOCAL_METADATA_MIN_AGE: std::time::Duration = std::time::Duration::from_secs(30);

/// [`SlateKv`](crate::kv::slate::SlateKv)'s bulk write batches: SlateDB holds a whole batch (its
/// operations, the WAL buffer and the memtable) in memory at once, so a
/// 1,000,000-record import written as one batch peaked at several times the
/// data's size; 8 MiB batches measured the same as 32 MiB
/// (`docs/benchmarks.md`).
pub const DEFAULT_BULK_BATCH_BYTES: usize = 32 << 20;

/// Where the database lives, for the defaults that depend on it.
#[derive(Clone, Copy)]
pub(super) enum Medium {
    /// A local directory.
    Local,
    /// S3-compatible object storage.
    ObjectStore,
    /// An object store given by the caller (wrapped for tests): the local
    /// WAL flush interval, SlateDB's compactor and collector settings.
    Given,
}

impl SlateOptions {
    /// `whole` divided among the databases open together
    /// ([`SlateOptions::databases_open`]), at least `floor` (and at most
    /// `whole`).
    #[must_use]
    pub fn share(&self, whole: usize, floor: usize) -> usize {
        let open = usize::try_from(self.databases_open.unwrap_or(1).max(1)).unwrap_or(1);
        (whole / open).max(floor).min(whole)
    }

    pub(super) fn settings(&self, medium: Medium) -> Result<slatedb::Settings, Error> {
        let (default_flush, compactor_options, local_gc) = match medium {
            Medium::Local => (
                DEFAULT_FLUSH_INTERVAL,
                slatedb::config::CompactorOptions {
                    poll_interval: LOCAL_COMPACTION_POLL,
                    worker: Some(slatedb::config::CompactionWorkerOptions {
                        compactions_poll_interval: LOCAL_COMPACTION_POLL,
                        ..slatedb::config::CompactionWorkerOptions::default()
                    }),
                    ..slatedb::config::CompactorOptions::default()
                },
                true,
            ),
            Medium::ObjectStore => (
                DEFAULT_S3_FLUSH_INTERVAL,
                slatedb::config::CompactorOptions::default(),
                false,
            ),
            Medium::Given => (
                DEFAULT_FLUSH_INTERVAL,
                slatedb::config::CompactorOptions::default(),
                false,
            ),
        };
        let mut gc = slatedb::config::GarbageCollectorOptions::default();
        if local_gc {
            // SlateDB's GC boundary files are rewritten with a conditional
            // update, which `object_store`'s local file system does not
            // implement: with them every pass after the first failed, and
            // manifests and compaction records piled up for ever (hundreds
            // after a few dozen CLI writes). Readers hold checkpoints, which
            // the collector honours without boundary files.
            gc.boundary_files_enabled = false;
            // Every writer's open leaves an empty WAL "fence" file, which
            // SlateDB keeps by default (deleting one under a writer that
            // has been stalled since before it was written could let that
            // writer's next WAL write land). A local store has one writing
            // process (the CLI and the server take a lock on the
            // directory), so fences an hour old go.
            gc.wal_fence_options = Some(slatedb::config::GarbageCollectorDirectoryOptions {
                min_age: LOCAL_WAL_FENCE_MIN_AGE,
                dry_run: false,
                ..slatedb::config::GarbageCollectorDirectoryOptions::default()
            });
            let metadata = slatedb::config::GarbageCollectorDirectoryOptions {
                min_age: LOCAL_METADATA_MIN_AGE,
                dry_run: false,
                ..slatedb::config::GarbageCollectorDirectoryOptions::default()
            };
            gc.manifest_options = Some(metadata);
            gc.compactions_options = Some(metadata);
        }
        let defaults = slatedb::Settings {
            flush_interval: Some(self.flush_interval.unwrap_or(default_flush)),
            compactor_options: Some(compactor_options),
            garbage_collector_options: Some(gc),
            l0_sst_size_bytes: self.share(DEFAULT_L0_SST_SIZE_BYTES, MIN_L0_SST_SIZE_BYTES),
            max_unflushed_bytes: self.share(MAX_UNFLUSHED_BYTES, 2 * MIN_L0_SST_SIZE_BYTES),
            // LZ4: less than half the bytes on disk for record blocks at
            // about the same speed (docs/benchmarks.md).
            compression_codec: Some(slatedb::config::CompressionCodec::Lz4),
            ..slatedb::Settings::default()
        };
        let Some(path) = &self.settings_file else {
            return Ok(defaults);
        };
        // The file's fields override datarepo's defaults; fields it omits
        // keep them.
        use figment::providers::Format as _;
        let unreadable = |reason: String| Error::Settings {
            file: path.display().to_string(),
            reason,
        };
        let base = figment::Figment::from(defaults);
        let merged = match path.extension().and_then(|e| e.to_str()) {
            Some("json") => base.merge(figment::providers::Json::file(path)),
            Some("toml") => base.merge(figment::providers::Toml::file(path)),
            Some("yaml" | "yml") => base.merge(figment::providers::Yaml::file(path)),
            _ => {
                return Err(unreadable(
                    "the name must end in .toml, .json, .yaml or .yml".into(),
                ));
            }
        };
        if !path.is_file() {
            return Err(unreadable("no such file".into()));
        }
        merged.extract().map_err(|e| unreadable(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_settings_file_overrides_only_what_it_names() {
        let dir = testkit::tempdir("settings");
        let file = dir.path().join("slatedb.toml");
        std::fs::write(&file, "l0_sst_size_bytes = 1234\n").unwrap();
        let options = SlateOptions {
            settings_file: Some(file.clone()),
            ..SlateOptions::default()
        };
        let settings = options.settings(Medium::Local).unwrap();
        assert_eq!(settings.l0_sst_size_bytes, 1234);
        assert_eq!(settings.flush_interval, Some(DEFAULT_FLUSH_INTERVAL));
        assert_eq!(
            settings.compression_codec,
            Some(slatedb::config::CompressionCodec::Lz4)
        );
        std::fs::write(&file, "flush_interval = \"50ms\"\n").unwrap();
        let settings = options.settings(Medium::Local).unwrap();
        assert_eq!(
            settings.flush_interval,
            Some(std::time::Duration::from_millis(50))
        );
        assert_eq!(settings.l0_sst_size_bytes, DEFAULT_L0_SST_SIZE_BYTES);
        std::fs::write(&file, "l0_sst_size_bytes = \"many\"\n").unwrap();
        let err = options.settings(Medium::Local).unwrap_err();
        assert!(
            matches!(&err, Error::Settings { reason, .. } if reason.contains("many")),
            "{err}"
        );
        let missing = SlateOptions {
            settings_file: Some(dir.path().join("missing.toml")),
            ..SlateOptions::default()
        };
        assert!(missing.settings(Medium::Local).is_err());
    }
}
