//! [`SlateKv`]: the [`Kv`](super::interface::Kv) over SlateDB.

use std::{
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use bytes::Bytes;
use keycodec::KeyRange;
use slatedb::{
    Db, DbReader, DbReaderMode, IterationOrder, WriteBatch,
    config::{DbReaderOptions, DurabilityLevel, ReadOptions, ScanOptions},
    object_store::ObjectStore,
};
use slatedb_common::metrics::DefaultMetricsRecorder;

#[cfg(unix)]
use super::read_socket::SocketReads;
use super::{
    interface::{Durability, EngineMetric, Kv, ReadStamp, WriteOp},
    location::{DB_PATH, Location, object_store, probe_writable},
    options::{
        DEFAULT_BULK_BATCH_BYTES, DEFAULT_SCAN_READ_AHEAD, Medium, SST_BLOCK_BYTES, SlateOptions,
    },
    reader_manifests::ManifestCollector,
};
use crate::error::Error;
use crate::partitions::Partitions;
use crate::wal_backlog::WalBacklog;

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
    /// The database as opened; every clone shares it, so that a reader
    /// promoted to writer ([`SlateKv::promote`]) is one for all of them.
    opened: Arc<std::sync::RwLock<Arc<Opened>>>,
    /// The directory of a local store.
    local_dir: Option<Arc<PathBuf>>,
    read_ahead: usize,
    /// Blob bytes, beside the database in the same object store.
    blobs: crate::Blobs,
}

/// A database handle and what comes with a writer's.
struct Opened {
    db: Handle,
    /// A writer's path and object store, for the garbage collection pass
    /// after a close that flushed the memtable.
    collect: Option<Collect>,
    /// A local reader's collection of the manifests readers leave.
    reader_manifests: Option<ManifestCollector>,
    bulk_batch_bytes: usize,
    /// SlateDB's metrics (a writer's; a reader records none).
    metrics: Option<Arc<DefaultMetricsRecorder>>,
    /// A writer's WAL SSTs not yet in an L0 SST.
    backlog: Option<Arc<WalBacklog>>,
    /// Which opening this is, for [`ReadStamp`]s: unique in the process.
    opening: u64,
    /// A writer's writes applied, each counted once reads can see it.
    writes: AtomicU64,
}

/// For how long a reader trusts a value read under an unchanged stamp.
/// SlateDB's reader publishes a refresh's sequence number a moment before
/// it installs the refresh for reads, so a read made in that moment is of
/// the view before; re-reading it this often bounds what that costs to a
/// small part of the refresh interval (which is 1 s for a CLI reader).
const READER_TRUST_MICROS: u64 = 10_000;

/// Openings made by this process, numbering each [`Opened`].
static OPENINGS: AtomicU64 = AtomicU64::new(0);

impl Opened {
    fn new(db: Handle) -> Self {
        Self {
            db,
            collect: None,
            reader_manifests: None,
            bulk_batch_bytes: DEFAULT_BULK_BATCH_BYTES,
            metrics: None,
            backlog: None,
            opening: OPENINGS.fetch_add(1, Ordering::Relaxed),
            writes: AtomicU64::new(0),
        }
    }

    fn read_stamp(&self) -> Option<ReadStamp> {
        match &self.db {
            Handle::Writer(_) => Some(ReadStamp::exact(
                self.opening,
                (self.writes.load(Ordering::SeqCst), 0),
            )),
            Handle::Reader(r) => {
                // Its durable sequence number and manifest, read in place
                // (`status()` would copy the manifest).
                let status = r.subscribe();
                let status = status.borrow();
                Some(ReadStamp::settling(
                    self.opening,
                    (status.durable_seq, status.current_manifest.id()),
                    READER_TRUST_MICROS,
                ))
            }
            // Reads through a writer's socket see its commits at once.
            #[cfg(unix)]
            Handle::Socket(_) => None,
        }
    }
}

/// The blobs of the database at `path` (`<prefix>/db`): `<prefix>/blobs`.
/// SlateDB's default bound on a reader's replayed-WAL memtables.
const READER_MEMTABLE_BYTES: usize = 64 << 20;

/// Fails when `location` is the root of a partitioned store: its
/// databases are its partitions' ([`Partitions::location`]), and a database
/// opened at the root would hold repositories no partition knows of.
async fn refuse_partitioned_root(location: &Location) -> Result<(), Error> {
    match Partitions::read(location).await? {
        None => Ok(()),
        Some(partitions) => Err(Error::Location {
            location: location.to_string(),
            reason: format!(
                "this store is split into {} partitions (p-0000/ …); open the partition \
                 a repository lives in, not the store's root",
                partitions.count()
            ),
        }),
    }
}

fn blobs_beside(path: &str, store: &Arc<dyn ObjectStore>) -> crate::Blobs {
    crate::Blobs::new(
        Arc::clone(store),
        crate::kv::location::beside_database(path, "blobs"),
    )
}

#[derive(Clone)]
struct Collect {
    path: String,
    store: Arc<dyn ObjectStore>,
    options: slatedb::config::GarbageCollectorOptions,
}

#[derive(Clone)]
enum Handle {
    Writer(Arc<Db>),
    Reader(Arc<DbReader>),
    /// A local store read through its writer's socket.
    #[cfg(unix)]
    Socket(Arc<SocketReads>),
}

impl std::fmt::Debug for SlateKv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlateKv").finish_non_exhaustive()
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
        refuse_partitioned_root(location).await?;
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
        if let Some(dir) = &local_dir {
            kv.blobs = kv.blobs.on_local_disk(dir.join("blobs"));
        }
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
        let blobs = blobs_beside(path, &store);
        let collect = settings
            .garbage_collector_options
            .clone()
            .map(|options| Collect {
                path: path.to_owned(),
                store: Arc::clone(&store),
                options,
            });
        let mut builder = Db::builder(path.to_owned(), Arc::clone(&store)).with_settings(settings);
        if let Some(shared) = &options.shared_cache {
            let (cache, scope) = shared.scope();
            builder = builder.with_db_cache(cache, scope);
        }
        let db = builder
            .with_sst_block_size(SST_BLOCK_BYTES)
            .with_metrics_recorder(metrics.clone())
            .with_merge_operator(Arc::new(crate::bitmap::ContainerMerge))
            .build()
            .await?;
        let db = Arc::new(db);
        let carried = WalBacklog::carried(&db, store.as_ref(), path).await;
        let backlog = Arc::new(WalBacklog::new(Arc::clone(&metrics), carried));
        Arc::clone(&backlog).spawn_flusher(Arc::downgrade(&db));
        let opened = Opened {
            collect,
            bulk_batch_bytes: options.bulk_batch_bytes.unwrap_or(DEFAULT_BULK_BATCH_BYTES),
            metrics: Some(metrics),
            backlog: Some(backlog),
            ..Opened::new(Handle::Writer(db))
        };
        Ok(Self {
            opened: Arc::new(std::sync::RwLock::new(Arc::new(opened))),
            local_dir: None,
            blobs,
            read_ahead: options
                .scan_read_ahead_bytes
                .unwrap_or(DEFAULT_SCAN_READ_AHEAD),
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
    /// A local store whose writer answers reads on its socket
    /// ([`READ_SOCKET`](crate::READ_SOCKET)) is read through it (unless
    /// `options.direct_reads`): the same durable data, without replaying
    /// the writer's WAL or starting from cold caches. Such a reader sees new
    /// commits at once rather than within `refresh`.
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
        refuse_partitioned_root(location).await?;
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
        let mut blobs = blobs_beside(&path, &store);
        if let Location::Local(dir) = location {
            blobs = blobs.on_local_disk(dir.join("blobs"));
        }
        #[cfg(unix)]
        if let Location::Local(dir) = location
            && !options.direct_reads
            && let Some(socket) = SocketReads::connect(dir).await
        {
            return Ok(Self {
                opened: Arc::new(std::sync::RwLock::new(Arc::new(Opened::new(
                    Handle::Socket(Arc::new(socket)),
                )))),
                local_dir: Some(Arc::new(dir.clone())),
                read_ahead: 0,
                blobs,
            });
        }
        let reader_options = DbReaderOptions {
            manifest_poll_interval: refresh,
            object_store_cache_options: settings.object_store_cache_options,
            max_memtable_bytes: u64::try_from(options.share(READER_MEMTABLE_BYTES, 4 << 20))
                .unwrap_or(u64::MAX),
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
        // Collected as the writer collects them (its settings, a settings
        // file's included): not at all where it would not.
        let reader_manifests = match (location, mode, &settings.garbage_collector_options) {
            (Location::Local(dir), DbReaderMode::ManagedCheckpoint, Some(gc)) => {
                ManifestCollector::new(dir, path.clone(), Arc::clone(&store), gc)
            }
            _ => None,
        };
        let mut builder = DbReader::builder(path, store);
        if let Some(shared) = &options.shared_cache {
            let (cache, scope) = shared.scope();
            builder = builder.with_db_cache(cache, scope);
        }
        let reader = builder
            .with_options(reader_options)
            .with_reader_mode(mode)
            .with_merge_operator(Arc::new(crate::bitmap::ContainerMerge))
            .build()
            .await?;
        Ok(Self {
            opened: Arc::new(std::sync::RwLock::new(Arc::new(Opened {
                reader_manifests,
                ..Opened::new(Handle::Reader(Arc::new(reader)))
            }))),
            local_dir: match location {
                Location::Local(dir) => Some(Arc::new(dir.clone())),
                Location::S3 { .. } => None,
            },
            read_ahead: options
                .scan_read_ahead_bytes
                .unwrap_or(DEFAULT_SCAN_READ_AHEAD),
            blobs,
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

    /// The database as opened now.
    fn opened(&self) -> Arc<Opened> {
        Arc::clone(
            &self
                .opened
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Makes this reader of the database at `location` its writer, for
    /// every clone of it: opens the database as its writer (fencing the
    /// writer there was: its next write fails with [`Error::Fenced`]),
    /// then reads and writes go to it, and the reader is closed. A
    /// standby's takeover, once it holds the writer's lease.
    ///
    /// # Errors
    ///
    /// As [`SlateKv::open_with`]; the reader is then left as it was.
    pub async fn promote(&self, location: &Location, options: &SlateOptions) -> Result<(), Error> {
        let writer = Self::open_with(location, options).await?;
        let writer = writer.opened();
        let reader = std::mem::replace(
            &mut *self
                .opened
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
            writer,
        );
        match &reader.db {
            Handle::Reader(r) => {
                if let Err(e) = r.close().await {
                    tracing::warn!(error = %e, "closing the reader after promotion");
                }
            }
            Handle::Writer(_) => {}
            #[cfg(unix)]
            Handle::Socket(_) => {}
        }
        Ok(())
    }

    /// Turns this writer into a reader of the database at `location` (the
    /// opposite of [`SlateKv::promote`]): for a process whose writer lease
    /// was taken over. The writer is closed (if another process has opened
    /// the database since, it is fenced and its close fails, which is
    /// logged); writes fail with [`Error::ReadOnly`] from then on.
    ///
    /// # Errors
    ///
    /// As [`SlateKv::open_reader_with`]; the writer is then left as it was.
    pub async fn demote(
        &self,
        location: &Location,
        refresh: std::time::Duration,
        options: &SlateOptions,
    ) -> Result<(), Error> {
        let reader = Self::open_reader_with(location, refresh, options).await?;
        let reader = reader.opened();
        let writer = std::mem::replace(
            &mut *self
                .opened
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
            reader,
        );
        if let Handle::Writer(db) = &writer.db
            && let Err(e) = db.close().await
        {
            tracing::info!(error = %e, "closing the writer after demotion");
        }
        Ok(())
    }

    /// The writer's socket this reader reads through, if it does (see
    /// [`SlateKv::open_reader_with`]).
    #[must_use]
    pub fn read_socket(&self) -> Option<PathBuf> {
        match &self.opened().db {
            #[cfg(unix)]
            Handle::Socket(socket) => Some(socket.path().to_path_buf()),
            _ => None,
        }
    }

    /// Makes every write applied so far durable now, rather than at the
    /// next WAL flush interval; a read-only opener has nothing to flush.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when the flush fails.
    pub async fn flush(&self) -> Result<(), Error> {
        match &self.opened().db {
            Handle::Writer(db) => db.flush().await.map_err(Error::from),
            Handle::Reader(_) => Ok(()),
            #[cfg(unix)]
            Handle::Socket(_) => Ok(()),
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
        let opened = self.opened();
        match &opened.db {
            Handle::Writer(db) => {
                let flush = always_flush
                    || opened
                        .backlog
                        .as_ref()
                        .is_some_and(|b| b.now().0.worth_flushing());
                db.close_with_options(slatedb::config::CloseOptions {
                    flush_type: Some(if flush {
                        slatedb::config::FlushType::MemTable
                    } else {
                        slatedb::config::FlushType::Wal
                    }),
                })
                .await?;
                if flush && let Some(c) = &opened.collect {
                    slatedb::admin::AdminBuilder::new(c.path.clone(), Arc::clone(&c.store))
                        .build()
                        .run_gc_once(c.options.clone())
                        .await?;
                }
                Ok(())
            }
            Handle::Reader(r) => {
                r.close().await?;
                if let Some(manifests) = &opened.reader_manifests {
                    manifests.collect_if_many().await;
                }
                Ok(())
            }
            #[cfg(unix)]
            Handle::Socket(_) => Ok(()),
        }
    }
}

impl SlateKv {
    /// A get that sees writes down to `level` (`Remote`: durable only). A
    /// reader sees only durable data whatever the level.
    async fn get_at(&self, key: &[u8], level: DurabilityLevel) -> Result<Option<Bytes>, Error> {
        let options = ReadOptions::new().with_durability_filter(level);
        Ok(match &self.opened().db {
            Handle::Writer(db) => db.get_with_options(key, &options).await?,
            Handle::Reader(r) => r.get_with_options(key, &options).await?,
            #[cfg(unix)]
            Handle::Socket(socket) => socket.get(key).await?,
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
        // SlateDB refuses an empty range (it panics).
        if range.end.as_ref().is_some_and(|end| *end <= range.start) {
            return Ok(Vec::new());
        }
        let start = range.start.clone();
        let end = range.end.clone();
        let mut iter = match &self.opened().db {
            Handle::Writer(db) => match end {
                Some(end) => db.scan_with_options(start..end, &options).await?,
                None => db.scan_with_options(start.., &options).await?,
            },
            Handle::Reader(r) => match end {
                Some(end) => r.scan_with_options(start..end, &options).await?,
                None => r.scan_with_options(start.., &options).await?,
            },
            #[cfg(unix)]
            Handle::Socket(socket) => return socket.scan(range, reverse, limit).await,
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

impl Kv for SlateKv {
    fn blobs(&self) -> crate::Blobs {
        self.blobs.clone()
    }

    fn sole_writer(&self) -> bool {
        matches!(self.opened().db, Handle::Writer(_))
    }

    fn read_stamp(&self) -> Option<ReadStamp> {
        self.opened().read_stamp()
    }

    fn bulk_batch_bytes(&self) -> Option<usize> {
        Some(self.opened().bulk_batch_bytes)
    }

    fn local_dir(&self) -> Option<Arc<PathBuf>> {
        self.local_dir.clone()
    }

    fn engine_metrics(&self) -> Vec<EngineMetric> {
        self.opened()
            .metrics
            .as_ref()
            .map_or_else(Vec::new, |recorder| {
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
        let opened = self.opened();
        match &opened.db {
            Handle::Writer(db) => {
                let written = db.write(batch).await;
                // Counted after the write is visible (or has failed, having
                // perhaps applied): a stamp taken before names the view before.
                opened.writes.fetch_add(1, Ordering::SeqCst);
                Ok(Durability(Some(written?)))
            }
            Handle::Reader(_) => Err(Error::ReadOnly),
            #[cfg(unix)]
            Handle::Socket(_) => Err(Error::ReadOnly),
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
