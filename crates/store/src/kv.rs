//! [`Kv`]: the small ordered key/value interface datarepo needs, with an
//! in-memory implementation for tests and a SlateDB one.

use std::{
    collections::BTreeMap,
    future::Future,
    ops::Bound,
    path::{Path, PathBuf},
    sync::{Arc, RwLock},
};

use bytes::Bytes;
use keycodec::KeyRange;
use slatedb::{
    Db, DbReader, DbReaderMode, IterationOrder, WriteBatch,
    config::{DbReaderOptions, DurabilityLevel, ReadOptions, ScanOptions},
    object_store::{
        ObjectStore, RetryConfig, aws::AmazonS3Builder, local::LocalFileSystem,
        path::Path as ObjectPath,
    },
};

use slatedb_common::metrics::DefaultMetricsRecorder;

use crate::error::Error;

/// One change in an atomic write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteOp {
    /// Set `key` to `value`.
    Put(Vec<u8>, Bytes),
    /// Remove `key`.
    Delete(Vec<u8>),
    /// Fold a change into the bitmap container at `key` (record type
    /// `0x6`) without reading it: the value is a
    /// [`ContainerDelta`](crate::bitmap::ContainerDelta) that later reads and
    /// compactions compose with what is stored.
    Merge(Vec<u8>, Bytes),
}

/// An ordered key/value store.
pub trait Kv: Send + Sync {
    /// The value under `key`.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when the store cannot be read.
    fn get(&self, key: &[u8]) -> impl Future<Output = Result<Option<Bytes>, Error>> + Send;

    /// Applies `ops` atomically: later reads see all of them or none. The
    /// returned [`Durability`] resolves once they survive a crash; await it
    /// before reporting success.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when the store cannot be written.
    fn apply(&self, ops: Vec<WriteOp>) -> impl Future<Output = Result<Durability, Error>> + Send;

    /// [`Kv::apply`], then waits until the write is durable.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when the store cannot be written.
    fn write(&self, ops: Vec<WriteOp>) -> impl Future<Output = Result<(), Error>> + Send {
        async move { self.apply(ops).await?.wait().await }
    }

    /// Up to `limit` entries in `range`, ascending or (with `reverse`) descending.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when the store cannot be read.
    fn scan(
        &self,
        range: &KeyRange,
        reverse: bool,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<(Bytes, Bytes)>, Error>> + Send;

    /// [`Kv::get`], seeing only writes that are already durable: a write
    /// still waiting for its flush (which a crash would lose) is invisible,
    /// and the value before it, if durable, is returned instead. The
    /// default suits a store whose writes are durable once applied.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when the store cannot be read.
    fn get_durable(&self, key: &[u8]) -> impl Future<Output = Result<Option<Bytes>, Error>> + Send {
        self.get(key)
    }

    /// [`Kv::scan`], seeing only writes that are already durable, as
    /// [`Kv::get_durable`] does.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when the store cannot be read.
    fn scan_durable(
        &self,
        range: &KeyRange,
        reverse: bool,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<(Bytes, Bytes)>, Error>> + Send {
        self.scan(range, reverse, limit)
    }

    /// Whether this handle is the store's one writer, so that nothing but
    /// this process changes what it holds (SlateDB's writer: a lock file or
    /// fencing keeps every other process to reading). `false` (the default)
    /// for a reader, and for a store that other handles may share.
    fn sole_writer(&self) -> bool {
        false
    }

    /// The size, in key and value bytes, above which this store would
    /// rather take a large write as several batches; `None` when one batch
    /// of any size is best. [`Store::bulk_commit`](crate::store::Store::bulk_commit)
    /// writes a large commit's blocks ahead in batches of about this size.
    fn bulk_batch_bytes(&self) -> Option<usize> {
        None
    }

    /// The local directory the store keeps its files in, if it is one (to
    /// check whether it can be written when a write stalls).
    fn local_dir(&self) -> Option<Arc<PathBuf>> {
        None
    }

    /// The storage engine's own measurements, read now; empty for a store
    /// that keeps none.
    fn engine_metrics(&self) -> Vec<EngineMetric> {
        Vec::new()
    }
}

/// One of the storage engine's own measurements (for SlateDB: memtable
/// bytes, L0 SSTs and stalls, flushes, compactions, cache hits, object
/// store requests), as read at one moment; a server exports them next to
/// its own metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineMetric {
    /// The engine's dotted name, e.g. `slatedb.db.l0_sst_count`.
    pub name: String,
    /// What it measures, in the engine's words.
    pub help: String,
    /// Labels telling apart the series of one name.
    pub labels: Vec<(String, String)>,
    /// Its value.
    pub value: EngineMetricValue,
}

/// An [`EngineMetric`]'s value.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineMetricValue {
    /// A count that only grows.
    Counter(u64),
    /// A level that goes up and down.
    Gauge(i64),
    /// A distribution of observations.
    Histogram {
        /// Observations made.
        count: u64,
        /// Their sum.
        sum: f64,
        /// Per bucket, its upper bound and the observations in it (not
        /// cumulative); the last bucket's bound is `f64::INFINITY`.
        buckets: Vec<(f64, u64)>,
    },
}

impl From<slatedb_common::metrics::Metric> for EngineMetric {
    fn from(metric: slatedb_common::metrics::Metric) -> Self {
        use slatedb_common::metrics::MetricValue;
        let value = match metric.value {
            MetricValue::Counter(n) => EngineMetricValue::Counter(n),
            MetricValue::Gauge(n) | MetricValue::UpDownCounter(n) => EngineMetricValue::Gauge(n),
            MetricValue::Histogram {
                count,
                sum,
                boundaries,
                bucket_counts,
                ..
            } => EngineMetricValue::Histogram {
                count,
                sum,
                // `bucket_counts` has one more entry than `boundaries`: the
                // observations above the last boundary.
                buckets: boundaries
                    .into_iter()
                    .chain(std::iter::once(f64::INFINITY))
                    .zip(bucket_counts)
                    .collect(),
            },
        };
        Self {
            name: metric.name,
            help: metric.description,
            labels: metric.labels,
            value,
        }
    }
}

/// A pending write's durability; see [`Kv::apply`].
#[must_use = "await the write's durability before reporting success"]
pub struct Durability(Option<slatedb::WriteHandle>);

impl std::fmt::Debug for Durability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Durability")
            .field(&self.0.is_some())
            .finish()
    }
}

impl Durability {
    /// Waits until the write survives a crash.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when the store failed to make it durable.
    pub async fn wait(self) -> Result<(), Error> {
        match self.0 {
            Some(handle) => handle.await_durable().await.map_err(Error::from),
            None => Ok(()),
        }
    }
}

/// A key held inline (no separate allocation, so a search touches only
/// the map's own nodes) up to 40 bytes, in 48 bytes: a block's key (38
/// bytes for a SHA-256 CID) fits. Blocks arrive in random key order, so
/// their inserts are the map's cache misses, and small inline keys keep
/// its nodes small; longer keys (index rows, commit log) live on the heap,
/// but a commit's arrive in order and their searches stay on a warm path.
/// (`apply_writes` of 1,000,000 records is 2–14% faster than with 64
/// inline bytes in an 80-byte key, `docs/benchmarks.md`.)
///
/// Ordered as its bytes are, compared 8 bytes at a time: datarepo's keys
/// share long prefixes (a repository's index keys agree on their first
/// ~30 bytes), so a search spends most of its time comparing them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct InlineKey(smallvec::SmallVec<[u8; 40]>);

const _: () = assert!(std::mem::size_of::<InlineKey>() == 48);

impl InlineKey {
    fn from_slice(key: &[u8]) -> Self {
        Self(smallvec::SmallVec::from_slice(key))
    }
}

impl std::ops::Deref for InlineKey {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl std::borrow::Borrow<[u8]> for InlineKey {
    fn borrow(&self) -> &[u8] {
        &self.0
    }
}

impl Ord for InlineKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        compare_bytes(&self.0, &other.0)
    }
}

impl PartialOrd for InlineKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// `a.cmp(b)` for byte strings, a word at a time.
fn compare_bytes(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let (mut wa, mut wb) = (a.chunks_exact(8), b.chunks_exact(8));
    for (x, y) in wa.by_ref().zip(wb.by_ref()) {
        let x = u64::from_be_bytes(x.try_into().unwrap_or_default());
        let y = u64::from_be_bytes(y.try_into().unwrap_or_default());
        if x != y {
            return x.cmp(&y);
        }
    }
    let equal = a.len().min(b.len()) / 8 * 8;
    a[equal..].cmp(&b[equal..])
}

/// A `BTreeMap` behind a lock: for tests, and as a model.
#[derive(Debug, Default, Clone)]
pub struct MemoryKv {
    map: Arc<RwLock<BTreeMap<InlineKey, Bytes>>>,
}

impl MemoryKv {
    /// An empty store.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }
}

fn bounds(range: &KeyRange) -> (Bound<InlineKey>, Bound<InlineKey>) {
    (
        Bound::Included(InlineKey::from_slice(&range.start)),
        range.end.as_deref().map_or(Bound::Unbounded, |e| {
            Bound::Excluded(InlineKey::from_slice(e))
        }),
    )
}

impl Kv for MemoryKv {
    fn get(&self, key: &[u8]) -> impl Future<Output = Result<Option<Bytes>, Error>> + Send {
        let map = self
            .map
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        std::future::ready(Ok(map.get(key).cloned()))
    }

    fn apply(&self, ops: Vec<WriteOp>) -> impl Future<Output = Result<Durability, Error>> + Send {
        let mut map = self
            .map
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // A batch of puts as large as the map is merged in one pass (sorted
        // and bulk-built), not inserted key by key.
        let bulk = ops.len() >= 4096
            && ops.len() * 2 >= map.len()
            && ops.iter().all(|op| matches!(op, WriteOp::Put(..)));
        if bulk {
            let mut puts = Vec::with_capacity(ops.len());
            puts.extend(ops.into_iter().filter_map(|op| match op {
                WriteOp::Put(k, v) => Some((InlineKey::from_slice(&k), v)),
                WriteOp::Delete(_) | WriteOp::Merge(..) => None,
            }));
            let mut batch: BTreeMap<InlineKey, Bytes> = puts.into_iter().collect();
            // `append` keeps `batch`'s value for keys in both: later writes win.
            map.append(&mut batch);
        } else {
            for op in ops {
                match op {
                    WriteOp::Put(k, v) => {
                        map.insert(InlineKey::from_slice(&k), v);
                    }
                    WriteOp::Delete(k) => {
                        map.remove(k.as_slice());
                    }
                    WriteOp::Merge(k, operand) => {
                        let key = InlineKey::from_slice(&k);
                        let merged = crate::bitmap::merge_values(
                            map.get(&key).map(AsRef::as_ref),
                            [operand.as_ref()],
                        );
                        match merged {
                            Ok(value) => {
                                map.insert(key, value);
                            }
                            // SlateDB fails the read of a key whose operand does
                            // not merge; here the write fails instead.
                            Err(e) => {
                                return std::future::ready(Err(Error::Malformed {
                                    what: "bitmap container",
                                    reason: e.to_string(),
                                }));
                            }
                        }
                    }
                }
            }
        }
        std::future::ready(Ok(Durability(None)))
    }

    fn scan(
        &self,
        range: &KeyRange,
        reverse: bool,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<(Bytes, Bytes)>, Error>> + Send {
        let map = self
            .map
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let iter = map.range(bounds(range));
        let pick = |(k, v): (&InlineKey, &Bytes)| (Bytes::copy_from_slice(k), v.clone());
        let out: Vec<_> = if reverse {
            iter.rev().take(limit).map(pick).collect()
        } else {
            iter.take(limit).map(pick).collect()
        };
        std::future::ready(Ok(out))
    }
}

/// SlateDB on an object store: today a local directory.
///
/// Writes return once SlateDB reports them durable (written to its WAL in
/// object storage), so concurrent writers share WAL flushes: commits that
/// arrive together are made durable by one write (group commit).
///
/// One writer per database: opening a second writer on the same location
/// fences the first, whose writes then fail with [`Error::Fenced`]. Any
/// number of read-only openers ([`SlateKv::open_reader`]) may follow it.
#[derive(Clone)]
pub struct SlateKv {
    db: Handle,
    /// A writer's path and object store, for the garbage collection pass
    /// after a close that flushed the memtable.
    collect: Option<Collect>,
    /// The directory of a local store.
    local_dir: Option<Arc<PathBuf>>,
    read_ahead: usize,
    bulk_batch_bytes: usize,
    /// SlateDB's metrics (a writer's; a reader records none).
    metrics: Option<Arc<DefaultMetricsRecorder>>,
    /// A writer's WAL SSTs not yet in an L0 SST.
    backlog: Option<Arc<WalBacklog>>,
}

#[derive(Clone)]
struct Collect {
    path: String,
    store: Arc<dyn ObjectStore>,
    options: slatedb::config::GarbageCollectorOptions,
}

pub use crate::wal_backlog::WAL_REPLAY_LIMIT;
use crate::wal_backlog::WalBacklog;

#[derive(Clone)]
enum Handle {
    Writer(Arc<Db>),
    Reader(Arc<DbReader>),
}

impl std::fmt::Debug for SlateKv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlateKv").finish_non_exhaustive()
    }
}

/// Where a database lives: a local directory or an S3-compatible bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A local directory (created if missing).
    Local(std::path::PathBuf),
    /// `s3://bucket/prefix`: endpoint, region, credentials and plain-HTTP
    /// permission come from the standard `AWS_*` environment variables
    /// (`AWS_ENDPOINT`, `AWS_REGION`, `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_ALLOW_HTTP`); addressing is path-style.
    S3 {
        /// The bucket.
        bucket: String,
        /// The path of the database inside the bucket (may be empty).
        prefix: String,
    },
}

impl std::str::FromStr for Location {
    type Err = Error;

    /// `s3://bucket[/prefix]`, `file:///path`, or a plain path.
    fn from_str(s: &str) -> Result<Self, Error> {
        let invalid = |reason: &str| Error::Location {
            location: s.to_owned(),
            reason: reason.to_owned(),
        };
        if let Some(rest) = s.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                return Err(invalid("no bucket name after s3://"));
            }
            return Ok(Self::S3 {
                bucket: bucket.to_owned(),
                prefix: prefix.trim_matches('/').to_owned(),
            });
        }
        if let Some(path) = s.strip_prefix("file://") {
            if !path.starts_with('/') {
                return Err(invalid(
                    "a file:// URL needs an absolute path (file:///...)",
                ));
            }
            return Ok(Self::Local(path.into()));
        }
        if s.contains("://") {
            return Err(invalid(
                "unsupported scheme (use a path, file:///path or s3://bucket/prefix)",
            ));
        }
        if s.is_empty() {
            return Err(invalid("empty location"));
        }
        Ok(Self::Local(s.into()))
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Local(p) => write!(f, "{}", p.display()),
            Self::S3 { bucket, prefix } => write!(f, "s3://{bucket}/{prefix}"),
        }
    }
}

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
}

/// Bytes a range scan fetches ahead from an SST file. SlateDB's default
/// fetches one 4 KiB block per request; a 100-record page spans several, so
/// 16 KiB halves cold page latency locally and makes it 3-4x faster on
/// S3-compatible storage, where 64 KiB and more fetch too much
/// (`docs/benchmarks.md`, `store-scan`).
pub const DEFAULT_SCAN_READ_AHEAD: usize = 16 << 10;

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

/// Where the database lives, for the defaults that depend on it.
#[derive(Clone, Copy)]
enum Medium {
    /// A local directory.
    Local,
    /// S3-compatible object storage.
    ObjectStore,
    /// An object store given by the caller (wrapped for tests): the local
    /// WAL flush interval, SlateDB's compactor and collector settings.
    Given,
}

impl SlateOptions {
    fn settings(&self, medium: Medium) -> Result<slatedb::Settings, Error> {
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
        }
        let defaults = slatedb::Settings {
            flush_interval: Some(self.flush_interval.unwrap_or(default_flush)),
            compactor_options: Some(compactor_options),
            garbage_collector_options: Some(gc),
            l0_sst_size_bytes: DEFAULT_L0_SST_SIZE_BYTES,
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

impl SlateKv {
    /// Opens (creating if needed) the database at `location` with default options.
    ///
    /// # Errors
    ///
    /// As [`SlateKv::open_with`].
    pub async fn open(location: &Location) -> Result<Self, Error> {
        Self::open_with(location, &SlateOptions::default()).await
    }

    /// Opens (creating if needed) the database at `location`.
    ///
    /// # Errors
    ///
    /// [`Error::Location`] when the location cannot be used (a directory
    /// that cannot be created, missing S3 settings), [`Error::Settings`]
    /// for an unreadable settings file, [`Error::Unavailable`] when SlateDB
    /// cannot open the database.
    pub async fn open_with(location: &Location, options: &SlateOptions) -> Result<Self, Error> {
        let (path, store) = object_store(location).await?;
        let medium = match location {
            Location::Local(_) => Medium::Local,
            Location::S3 { .. } => Medium::ObjectStore,
        };
        // SlateDB retries a failing write for ever; a directory that cannot
        // be written is said so at once instead.
        let local_dir = match location {
            Location::Local(dir) => {
                probe_writable(dir).map_err(|source| Error::NotWritable {
                    location: location.to_string(),
                    source,
                })?;
                Some(Arc::new(dir.clone()))
            }
            Location::S3 { .. } => None,
        };
        let mut kv = Self::build(&path, store, options, options.settings(medium)?).await?;
        kv.local_dir = local_dir;
        Ok(kv)
    }

    /// Opens (creating if needed) the database at `path` in any object
    /// store, e.g. one wrapped for instrumentation or fault injection.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when SlateDB cannot open the database.
    pub async fn open_object_store(path: &str, store: Arc<dyn ObjectStore>) -> Result<Self, Error> {
        Self::open_object_store_with(path, store, &SlateOptions::default()).await
    }

    /// [`SlateKv::open_object_store`] with options. The store may be
    /// anything, so SlateDB's own compactor and garbage-collector settings
    /// apply (not the local directory's), with the local WAL flush interval.
    ///
    /// # Errors
    ///
    /// [`Error::Settings`] for an unreadable settings file,
    /// [`Error::Unavailable`] when SlateDB cannot open the database.
    pub async fn open_object_store_with(
        path: &str,
        store: Arc<dyn ObjectStore>,
        options: &SlateOptions,
    ) -> Result<Self, Error> {
        Self::build(path, store, options, options.settings(Medium::Given)?).await
    }

    async fn build(
        path: &str,
        store: Arc<dyn ObjectStore>,
        options: &SlateOptions,
        settings: slatedb::Settings,
    ) -> Result<Self, Error> {
        let metrics = Arc::new(DefaultMetricsRecorder::new());
        let collect = settings
            .garbage_collector_options
            .clone()
            .map(|options| Collect {
                path: path.to_owned(),
                store: Arc::clone(&store),
                options,
            });
        let db = Db::builder(path.to_owned(), store)
            .with_settings(settings)
            .with_metrics_recorder(metrics.clone())
            .with_merge_operator(Arc::new(crate::bitmap::ContainerMerge))
            .build()
            .await?;
        let db = Arc::new(db);
        let backlog = Arc::new(WalBacklog::new(&db, Arc::clone(&metrics)));
        Arc::clone(&backlog).spawn_flusher(Arc::downgrade(&db));
        Ok(Self {
            db: Handle::Writer(db),
            collect,
            local_dir: None,
            metrics: Some(metrics),
            backlog: Some(backlog),
            read_ahead: options
                .scan_read_ahead_bytes
                .unwrap_or(DEFAULT_SCAN_READ_AHEAD),
            bulk_batch_bytes: options.bulk_batch_bytes.unwrap_or(DEFAULT_BULK_BATCH_BYTES),
        })
    }

    /// Opens the database at `location` read-only; it sees new commits
    /// within `refresh` of their becoming durable.
    ///
    /// # Errors
    ///
    /// As [`SlateKv::open`]; the database must already exist.
    pub async fn open_reader(
        location: &Location,
        refresh: std::time::Duration,
    ) -> Result<Self, Error> {
        Self::open_reader_with(location, refresh, &SlateOptions::default()).await
    }

    /// [`SlateKv::open_reader`] with `options`. A reader writes nothing, so
    /// of a settings file it uses only the local object-store cache
    /// (`object_store_cache_options`); the file is still read and checked,
    /// so a mistake in it is an error here as it is for the writer.
    ///
    /// # Errors
    ///
    /// As [`SlateKv::open_reader`], and [`Error::Settings`] for a settings
    /// file that cannot be read.
    pub async fn open_reader_with(
        location: &Location,
        refresh: std::time::Duration,
        options: &SlateOptions,
    ) -> Result<Self, Error> {
        let settings = options.settings(Medium::Local)?;
        // A reader never creates a database; say so plainly rather than
        // with SlateDB's missing-manifest error.
        if let Location::Local(dir) = location
            && !dir.join(DB_PATH).is_dir()
        {
            return Err(Error::Location {
                location: location.to_string(),
                reason: "no store here: nothing has been written to it".to_owned(),
            });
        }
        let (path, store) = object_store(location).await?;
        let reader_options = DbReaderOptions {
            manifest_poll_interval: refresh,
            object_store_cache_options: settings.object_store_cache_options,
            ..DbReaderOptions::default()
        };
        // A reader keeps a checkpoint in the manifest, so that a writer's
        // garbage collection leaves the files it reads alone. Where the
        // directory cannot be written (a read-only mount, a full disk) it
        // follows the manifest without one, writing nothing (SlateDB would
        // otherwise retry the checkpoint's write for ever).
        let mode = match location {
            Location::Local(dir) => match probe_writable(dir) {
                Ok(()) => DbReaderMode::ManagedCheckpoint,
                Err(e) => {
                    tracing::info!(
                        store = %location,
                        error = %e,
                        "the store cannot be written; reading it without a checkpoint"
                    );
                    DbReaderMode::FollowLatest
                }
            },
            Location::S3 { .. } => DbReaderMode::ManagedCheckpoint,
        };
        let reader = DbReader::builder(path, store)
            .with_options(reader_options)
            .with_reader_mode(mode)
            .with_merge_operator(Arc::new(crate::bitmap::ContainerMerge))
            .build()
            .await?;
        Ok(Self {
            db: Handle::Reader(Arc::new(reader)),
            collect: None,
            local_dir: match location {
                Location::Local(dir) => Some(Arc::new(dir.clone())),
                Location::S3 { .. } => None,
            },
            read_ahead: options
                .scan_read_ahead_bytes
                .unwrap_or(DEFAULT_SCAN_READ_AHEAD),
            bulk_batch_bytes: DEFAULT_BULK_BATCH_BYTES,
            metrics: None,
            backlog: None,
        })
    }

    /// Opens (creating if needed) a database in the local directory `dir`.
    ///
    /// # Errors
    ///
    /// [`Error::Location`] when the directory cannot be created or used,
    /// [`Error::Unavailable`] when SlateDB cannot open the database (for
    /// example because another writer holds it).
    pub async fn open_local(dir: &Path) -> Result<Self, Error> {
        Self::open(&Location::Local(dir.to_path_buf())).await
    }

    /// Makes every write applied so far durable now, rather than at the
    /// next WAL flush interval; a read-only opener has nothing to flush.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when the flush fails.
    pub async fn flush(&self) -> Result<(), Error> {
        match &self.db {
            Handle::Writer(db) => db.flush().await.map_err(Error::from),
            Handle::Reader(_) => Ok(()),
        }
    }

    /// Flushes and closes the database; later calls fail.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when the final flush fails.
    ///
    /// A writer flushes its memtable to L0 only when a reopen would
    /// otherwise replay more than [`WAL_REPLAY_LIMIT`] WAL SSTs, and then
    /// runs one pass of SlateDB's garbage collection (which otherwise runs
    /// on a timer, and not at all in a process that lives a few
    /// milliseconds): short-lived processes leave no files behind that
    /// nothing collects, and files younger than the collector's minimum
    /// age wait for a later pass.
    pub async fn close(&self) -> Result<(), Error> {
        self.close_inner(false).await
    }

    /// [`SlateKv::close`], always flushing a writer's memtable, so that the
    /// next open replays no WAL: a long-running writer's (a server's) clean
    /// shutdown.
    ///
    /// # Errors
    ///
    /// As [`SlateKv::close`].
    pub async fn close_flushed(&self) -> Result<(), Error> {
        self.close_inner(true).await
    }

    async fn close_inner(&self, always_flush: bool) -> Result<(), Error> {
        match &self.db {
            Handle::Writer(db) => {
                let backlog = self.backlog.as_ref().map_or(0, |b| b.now().0);
                let flush = always_flush || backlog > WAL_REPLAY_LIMIT;
                db.close_with_options(slatedb::config::CloseOptions {
                    flush_type: Some(if flush {
                        slatedb::config::FlushType::MemTable
                    } else {
                        slatedb::config::FlushType::Wal
                    }),
                })
                .await?;
                if flush && let Some(c) = &self.collect {
                    slatedb::admin::AdminBuilder::new(c.path.clone(), Arc::clone(&c.store))
                        .build()
                        .run_gc_once(c.options.clone())
                        .await?;
                }
                Ok(())
            }
            Handle::Reader(r) => r.close().await.map_err(Error::from),
        }
    }
}

/// The database's path inside a location (a local directory or an S3 prefix).
const DB_PATH: &str = "db";

/// How long opening a database on S3-compatible storage waits for the
/// object store to answer a first listing of the database's prefix.
pub const S3_PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The object store at `location` and the database's path in it. On S3 the
/// store must first answer a listing: SlateDB retries a failing object store
/// without end, so an unreachable endpoint, a missing bucket or bad
/// credentials would otherwise hang every command instead of failing it.
/// Whether a file can be written in `dir` now: creates one, writes and
/// syncs a few KiB (so that a full disk shows), and removes it.
///
/// # Errors
///
/// The I/O error that says why not (`StorageFull`, `ReadOnlyFilesystem`,
/// `PermissionDenied`, ...).
pub(crate) fn probe_writable(dir: &Path) -> std::io::Result<()> {
    use std::io::Write as _;
    let path = dir.join(format!(".datarepo-write-probe-{}", std::process::id()));
    let written = std::fs::File::create(&path).and_then(|mut f| {
        f.write_all(&[0; 8192])?;
        f.sync_all()
    });
    let _ = std::fs::remove_file(&path);
    written
}

async fn object_store(location: &Location) -> Result<(String, Arc<dyn ObjectStore>), Error> {
    let invalid = |reason: String| Error::Location {
        location: location.to_string(),
        reason,
    };
    match location {
        Location::Local(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| invalid(e.to_string()))?;
            // fsync files and their directories, so that an acknowledged
            // write survives power loss.
            let store = LocalFileSystem::new_with_prefix(dir)
                .map_err(|e| invalid(e.to_string()))?
                .with_fsync(true);
            Ok((DB_PATH.to_owned(), Arc::new(store)))
        }
        Location::S3 { bucket, prefix } => {
            let s3 = |retry: RetryConfig| {
                AmazonS3Builder::from_env()
                    .with_bucket_name(bucket)
                    .with_virtual_hosted_style_request(false)
                    .with_retry(retry)
                    .build()
                    .map_err(|e| invalid(e.to_string()))
            };
            let path = if prefix.is_empty() {
                DB_PATH.to_owned()
            } else {
                format!("{prefix}/{DB_PATH}")
            };
            // The probe gives up after two retries; the store SlateDB gets
            // keeps object_store's default retries.
            let probe = s3(RetryConfig {
                max_retries: 2,
                retry_timeout: S3_PROBE_TIMEOUT,
                ..RetryConfig::default()
            })?;
            let db_prefix = ObjectPath::from(path.as_str());
            let listing = probe.list_with_delimiter(Some(&db_prefix));
            let reason = match tokio::time::timeout(S3_PROBE_TIMEOUT, listing).await {
                Ok(Ok(_)) => return Ok((path, Arc::new(s3(RetryConfig::default())?))),
                Ok(Err(e)) => e.to_string(),
                Err(_) => format!("no answer within {} s", S3_PROBE_TIMEOUT.as_secs()),
            };
            Err(invalid(format!(
                "the object store did not answer a listing ({reason}); check AWS_ENDPOINT, \
                 AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, that the bucket exists, \
                 and AWS_ALLOW_HTTP=true for an http:// endpoint"
            )))
        }
    }
}

/// [`SlateKv`]'s bulk write batches: SlateDB holds a whole batch (its
/// operations, the WAL buffer and the memtable) in memory at once, so a
/// 1,000,000-record import written as one batch peaked at several times the
/// data's size; 8 MiB batches measured the same as 32 MiB
/// (`docs/benchmarks.md`).
pub const DEFAULT_BULK_BATCH_BYTES: usize = 32 << 20;

impl Kv for SlateKv {
    fn sole_writer(&self) -> bool {
        matches!(self.db, Handle::Writer(_))
    }

    fn bulk_batch_bytes(&self) -> Option<usize> {
        Some(self.bulk_batch_bytes)
    }

    fn local_dir(&self) -> Option<Arc<PathBuf>> {
        self.local_dir.clone()
    }

    fn engine_metrics(&self) -> Vec<EngineMetric> {
        self.metrics.as_ref().map_or_else(Vec::new, |recorder| {
            recorder
                .snapshot()
                .all()
                .iter()
                .cloned()
                .map(EngineMetric::from)
                .collect()
        })
    }

    async fn get(&self, key: &[u8]) -> Result<Option<Bytes>, Error> {
        self.get_at(key, DurabilityLevel::Memory).await
    }

    async fn get_durable(&self, key: &[u8]) -> Result<Option<Bytes>, Error> {
        self.get_at(key, DurabilityLevel::Remote).await
    }

    async fn scan_durable(
        &self,
        range: &KeyRange,
        reverse: bool,
        limit: usize,
    ) -> Result<Vec<(Bytes, Bytes)>, Error> {
        self.scan_at(range, reverse, limit, DurabilityLevel::Remote)
            .await
    }

    async fn apply(&self, ops: Vec<WriteOp>) -> Result<Durability, Error> {
        let mut batch = WriteBatch::new();
        for op in ops {
            match op {
                WriteOp::Put(k, v) => batch.put_bytes(Bytes::from(k), v),
                WriteOp::Delete(k) => batch.delete(k),
                WriteOp::Merge(k, v) => batch.merge(k, v),
            }
        }
        match &self.db {
            Handle::Writer(db) => Ok(Durability(Some(db.write(batch).await?))),
            Handle::Reader(_) => Err(Error::ReadOnly),
        }
    }

    async fn scan(
        &self,
        range: &KeyRange,
        reverse: bool,
        limit: usize,
    ) -> Result<Vec<(Bytes, Bytes)>, Error> {
        self.scan_at(range, reverse, limit, DurabilityLevel::Memory)
            .await
    }
}

impl SlateKv {
    /// A get that sees writes down to `level` (`Remote`: durable only). A
    /// reader sees only durable data whatever the level.
    async fn get_at(&self, key: &[u8], level: DurabilityLevel) -> Result<Option<Bytes>, Error> {
        let options = ReadOptions::new().with_durability_filter(level);
        Ok(match &self.db {
            Handle::Writer(db) => db.get_with_options(key, &options).await?,
            Handle::Reader(r) => r.get_with_options(key, &options).await?,
        })
    }

    async fn scan_at(
        &self,
        range: &KeyRange,
        reverse: bool,
        limit: usize,
        level: DurabilityLevel,
    ) -> Result<Vec<(Bytes, Bytes)>, Error> {
        let options = ScanOptions {
            order: if reverse {
                IterationOrder::Descending
            } else {
                IterationOrder::Ascending
            },
            read_ahead_bytes: self.read_ahead,
            durability_filter: level,
            ..ScanOptions::default()
        };
        let start = range.start.clone();
        let mut iter = match (&self.db, &range.end) {
            (Handle::Writer(db), Some(end)) => {
                db.scan_with_options(start..end.clone(), &options).await?
            }
            (Handle::Writer(db), None) => db.scan_with_options(start.., &options).await?,
            (Handle::Reader(r), Some(end)) => {
                r.scan_with_options(start..end.clone(), &options).await?
            }
            (Handle::Reader(r), None) => r.scan_with_options(start.., &options).await?,
        };
        let mut out = Vec::new();
        while out.len() < limit {
            match iter.next().await? {
                Some(kv) => out.push((kv.key, kv.value)),
                None => break,
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Word-at-a-time comparison orders keys as their bytes do (the
        /// map's lookups by `&[u8]` rely on it): keys of every length
        /// around word boundaries, mostly sharing a prefix.
        #[test]
        fn inline_keys_order_as_their_bytes(
            prefix in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40),
            a in proptest::collection::vec(0u8..4, 0..20),
            b in proptest::collection::vec(0u8..4, 0..20),
        ) {
            let a = [prefix.as_slice(), &a].concat();
            let b = [prefix.as_slice(), &b].concat();
            let (ka, kb) = (InlineKey::from_slice(&a), InlineKey::from_slice(&b));
            proptest::prop_assert_eq!(ka.cmp(&kb), a.cmp(&b));
            proptest::prop_assert_eq!(ka == kb, a == b);
        }
    }

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
