//! Opening the store (as its one writer, or read-only) and the commands that
//! work on it directly: `datarepo gc`.

use crate::output::outln;
use std::{
    io,
    path::{Path, PathBuf},
    process::ExitCode,
    time::Duration,
};

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use store::{GcProgress, Location, Partitions, Retention, SlateKv, SlateOptions, Store};

/// Where the data lives; global to every command that touches storage.
#[derive(Debug, Args)]
pub(crate) struct StoreArgs {
    /// Where the data lives: a directory (default ./data), file:///abs/path,
    /// or s3://bucket/prefix (settings from the AWS_* environment variables).
    #[arg(long, global = true, env = "DATAREPO_STORE", default_value = "./data")]
    store: String,
    /// A SlateDB settings file (.toml, .json or .yaml); its fields override datarepo's defaults.
    #[arg(long, global = true, env = "DATAREPO_STORE_SETTINGS")]
    store_settings: Option<PathBuf>,
    /// Reading commands open a local store themselves even when the
    /// `datarepo serve` writing it answers reads (on `datarepo.sock` in the
    /// store's directory), which is faster beside a busy server.
    #[arg(long, global = true, env = "DATAREPO_DIRECT_READS")]
    direct_reads: bool,
}

impl StoreArgs {
    /// The store location as given.
    pub(crate) fn location(&self) -> &str {
        &self.store
    }

    /// The store's directory, when it is a local one.
    pub(crate) fn local_dir(&self) -> Option<PathBuf> {
        match self.parse() {
            Ok(Location::Local(dir)) => Some(dir),
            _ => None,
        }
    }

    pub(crate) fn parse(&self) -> Result<Location, String> {
        self.store.parse().map_err(|e: store::Error| e.to_string())
    }

    /// Opens the store as its one writer. On a local directory another
    /// datarepo process writing it (a running `datarepo serve`) makes this
    /// fail at once; on S3, where there is no such lock, the writer already
    /// there is fenced and can no longer write.
    pub(crate) async fn open(&self) -> Result<SlateKv, String> {
        self.open_with(&self.options()).await
    }

    /// [`StoreArgs::open`] with `options`.
    pub(crate) async fn open_with(&self, options: &SlateOptions) -> Result<SlateKv, String> {
        let location = self.parse()?;
        if let Location::Local(dir) = &location {
            lock_for_writing(dir, &location)?;
        }
        SlateKv::open_with(&location, options)
            .await
            .map_err(|e| format!("cannot open the store at {location}: {e}"))
    }

    /// How the store is partitioned (`None`: it is not).
    pub(crate) async fn partitions(&self) -> Result<Option<Partitions>, String> {
        let location = self.parse()?;
        Partitions::read(&location)
            .await
            .map_err(|e| format!("cannot read the store at {location}: {e}"))
    }

    /// Partition `p` of this (partitioned) store, as a store of its own.
    pub(crate) fn partition(&self, p: u32) -> Self {
        let root = self
            .parse()
            .unwrap_or(Location::Local(self.store.clone().into()));
        Self {
            store: Partitions::location(&root, p).to_string(),
            store_settings: self.store_settings.clone(),
            direct_reads: self.direct_reads,
        }
    }

    /// Opens the store read-only, with SlateDB's reader: it sees every
    /// durable commit and fences no one, so it can run beside a server.
    /// Beside a server writing a local store, reads go to that server
    /// (its socket in the store's directory) unless `--direct-reads`.
    pub(crate) async fn open_reader(&self) -> Result<SlateKv, String> {
        self.open_reader_refreshing(READER_REFRESH).await
    }

    /// [`StoreArgs::open_reader`] with `options`.
    pub(crate) async fn open_reader_with_options(
        &self,
        options: &SlateOptions,
    ) -> Result<SlateKv, String> {
        self.open_reader_with(READER_REFRESH, options).await
    }

    /// [`StoreArgs::open_reader`], seeing new commits within `refresh`.
    pub(crate) async fn open_reader_refreshing(
        &self,
        refresh: Duration,
    ) -> Result<SlateKv, String> {
        self.open_reader_with(refresh, &self.options()).await
    }

    /// [`StoreArgs::open_reader_refreshing`] with `options`.
    pub(crate) async fn open_reader_with(
        &self,
        refresh: Duration,
        options: &SlateOptions,
    ) -> Result<SlateKv, String> {
        let location = self.parse()?;
        SlateKv::open_reader_with(&location, refresh, options)
            .await
            .map_err(|e| format!("cannot open the store at {location} read-only: {e}"))
    }

    pub(crate) fn options(&self) -> SlateOptions {
        let mut options = SlateOptions::default();
        options.settings_file.clone_from(&self.store_settings);
        options.direct_reads = self.direct_reads;
        options
    }
}

/// The lock file that marks a local store as being written by a datarepo
/// process (an OS file lock: released when the process ends, however).
const WRITER_LOCK_FILE: &str = "datarepo.lock";

/// This process's lock on the local store it writes, held until it exits.
static WRITER_LOCK: std::sync::OnceLock<std::fs::File> = std::sync::OnceLock::new();

/// Takes the writer lock of the local store in `dir` for this process, or
/// says who holds it. Without it a second writer would fence the first:
/// a `datarepo put` would leave a running server refusing every write.
fn lock_for_writing(dir: &Path, location: &Location) -> Result<(), String> {
    if WRITER_LOCK.get().is_some() {
        return Ok(());
    }
    let cannot = |e: io::Error| format!("cannot lock the store at {location} for writing: {e}");
    std::fs::create_dir_all(dir).map_err(cannot)?;
    let file = std::fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(WRITER_LOCK_FILE))
        .map_err(cannot)?;
    match file.try_lock() {
        Ok(()) => {
            let _ = WRITER_LOCK.set(file);
            Ok(())
        }
        Err(std::fs::TryLockError::WouldBlock) => Err(format!(
            "the store at {location} is being written by another datarepo process \
             (a running `datarepo serve`?): stop it first, or send the command through it \
             with `--server URL` (put, rm, index add|drop|rebuild, lexicon add|rm, \
             collection define); reading commands (get, ls, query, log, diff, export, stats, \
             check) work beside it"
        )),
        Err(std::fs::TryLockError::Error(e)) => Err(cannot(e)),
    }
}

/// How often a read-only command's reader would look for new commits; a
/// command reads what was durable when it opened and is done long before.
const READER_REFRESH: std::time::Duration = std::time::Duration::from_secs(1);

/// `datarepo gc`.
#[derive(Debug, Args)]
pub(crate) struct GcArgs {
    /// Keep only the newest N commits of each repository (and what they
    /// reach); by default every commit in each repository's log is kept.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    keep_last: Option<u64>,
    /// Report what would leave the log and be deleted, changing nothing.
    #[arg(long)]
    dry_run: bool,
    /// Firehose events to keep (as `serve --firehose-retention`): a count
    /// (100000) or an age (30m, 72h, 7d); older ones are deleted too.
    #[arg(long, default_value = "72h", value_parser = parse_events_retention)]
    firehose_retention: server::Retention,
    /// Seconds an uploaded blob no commit refers to is kept (and an
    /// upload's leftover object); blobs no retained commit refers to any
    /// more go whatever this is.
    #[arg(long, default_value_t = repo::DEFAULT_BLOB_TEMP_TTL_SECS)]
    blob_temp_ttl_secs: u64,
}

fn parse_events_retention(s: &str) -> Result<server::Retention, String> {
    s.parse()
}

/// The commits a collection keeps: the newest `keep_last` of each
/// repository, or all.
pub(crate) fn retention(keep_last: Option<u64>) -> Retention {
    match keep_last {
        Some(n) => Retention::Last(usize::try_from(n).unwrap_or(usize::MAX)),
        None => Retention::All,
    }
}

/// `datarepo gc`; with `repo` (`--repo`), `--keep-last` applies to that
/// repository only. A partitioned store's partitions are collected one
/// after the other (only the repository's with `repo`), each reported on
/// its own (a JSON line each, with its `partition`).
pub(crate) fn gc(
    store_args: &StoreArgs,
    args: &GcArgs,
    repo: Option<&str>,
    json_mode: bool,
) -> io::Result<ExitCode> {
    let partitions = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(store_args.partitions())
        .map_err(io::Error::other)?;
    let Some(partitions) = partitions else {
        return gc_one(store_args, args, repo, json_mode, None);
    };
    let chosen: Vec<u32> = match repo {
        Some(id) => vec![partitions.of(id)],
        None => partitions.all().collect(),
    };
    for p in chosen {
        if !json_mode {
            eprintln!("partition {p}:");
        }
        let code = gc_one(&store_args.partition(p), args, repo, json_mode, Some(p))?;
        if code != ExitCode::SUCCESS {
            return Ok(code);
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn gc_one(
    store_args: &StoreArgs,
    args: &GcArgs,
    repo: Option<&str>,
    json_mode: bool,
    partition: Option<u32>,
) -> io::Result<ExitCode> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let result = rt.block_on(async {
        let kv = store_args.open().await?;
        let store = Store::new(kv.clone());
        let retention = retention(args.keep_last);
        let bar = ProgressBar::new_spinner();
        let counting = ProgressStyle::with_template("{spinner} {msg} {pos} blocks")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        let sweeping = crate::output::progress_style("{msg} [{bar:40}] {pos}/{len} blocks ({eta})");
        bar.set_style(counting);
        let mut options = store::GcOptions::new(retention).dry_run(args.dry_run);
        if let Some(repo) = repo {
            options = options.repo(repo);
        }
        let report = store
            .gc_with(&options, |p| match p {
                GcProgress::Listing { listed } => {
                    bar.set_message("listing");
                    bar.set_position(listed as u64);
                }
                GcProgress::Marking { reached } => {
                    bar.set_message("marking reachable");
                    bar.set_position(reached as u64);
                }
                GcProgress::Sweeping { done, total } => {
                    if bar.length() != Some(total as u64) {
                        bar.set_style(sweeping.clone());
                        bar.set_message("deleting");
                        bar.set_length(total as u64);
                    }
                    bar.set_position(done as u64);
                }
            })
            .await;
        bar.finish_and_clear();
        // Then the blobs no repository holds any more (bytes included).
        let blobs = match &report {
            Ok(_) => Some(
                repo::Repos::new(
                    std::sync::Arc::new(Store::new(kv.clone())),
                    env().map_err(|e| e.message)?,
                )
                .collect_blobs(args.blob_temp_ttl_secs, args.dry_run)
                .await,
            ),
            Err(_) => None,
        };
        let events = match &report {
            Ok(_) if !args.dry_run => {
                let now = rkey::Clock::now_micros(&rkey::SystemClock);
                server::prune_events(&store, args.firehose_retention, now).await
            }
            _ => Ok(0),
        };
        let close = kv.close().await;
        let report = report.map_err(|e| {
            format!("garbage collection failed (nothing was deleted that is reachable): {e}")
        })?;
        let events = events.map_err(|e| format!("deleting old firehose events: {e}"))?;
        let blobs = blobs
            .transpose()
            .map_err(|e| format!("collecting blobs: {e}"))?
            .unwrap_or_default();
        close.map_err(|e| e.to_string())?;
        Ok::<_, String>((report, events, blobs))
    });
    match result {
        Ok((r, events, blobs)) => {
            if events > 0 && !json_mode {
                eprintln!("deleted {events} firehose events past retention");
            }
            if !json_mode
                && blobs.objects_deleted + blobs.temporary_dropped + blobs.released_dropped > 0
            {
                eprintln!(
                    "blobs: {} temporary and {} no longer referred to {}, {} stored objects ({} bytes) {}",
                    blobs.temporary_dropped,
                    blobs.released_dropped,
                    if args.dry_run {
                        "would be dropped"
                    } else {
                        "dropped"
                    },
                    blobs.objects_deleted,
                    blobs.bytes_freed,
                    if args.dry_run {
                        "would be deleted"
                    } else {
                        "deleted"
                    },
                );
            }
            if json_mode {
                outln!(
                    "{}",
                    json!({"listed": r.listed, "reachable": r.reachable, "anchors": r.anchors,
                           "deleted": r.deleted,
                           "bytesFreed": r.bytes_freed, "missing": r.missing,
                           "commitsDropped": r.commits_dropped, "dryRun": args.dry_run,
                           "eventsDeleted": events,
                           "blobs": {"held": blobs.held, "temporaryDropped": blobs.temporary_dropped,
                                     "releasedDropped": blobs.released_dropped,
                                     "objectsDeleted": blobs.objects_deleted,
                                     "bytesFreed": blobs.bytes_freed},
                           "repo": repo, "partition": partition})
                );
            } else if args.dry_run {
                outln!(
                    "dry run: {} blocks listed, {} reachable; {} would be deleted ({} bytes); \
                     {} older commits would leave the log{}",
                    r.listed,
                    r.reachable,
                    r.deleted,
                    r.bytes_freed,
                    r.commits_dropped,
                    repo.map(|r| format!(" (of {r} only)")).unwrap_or_default()
                );
            } else {
                outln!(
                    "{} blocks listed, {} reachable{}, {} deleted ({} bytes, returned to the \
                     file system when SlateDB next compacts the files that hold them: the \
                     directory may grow until then){}{}",
                    r.listed,
                    r.reachable,
                    if r.anchors > 0 {
                        format!(", {} kept as anchors of deltas", r.anchors)
                    } else {
                        String::new()
                    },
                    r.deleted,
                    r.bytes_freed,
                    if r.commits_dropped > 0 {
                        format!(
                            "; {} older commits left the log{} (history now starts at the oldest kept)",
                            r.commits_dropped,
                            repo.map(|r| format!(" of {r}")).unwrap_or_default()
                        )
                    } else {
                        String::new()
                    },
                    if r.missing > 0 {
                        format!("; {} linked blocks were already missing", r.missing)
                    } else {
                        String::new()
                    }
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            crate::output::report_error(json_mode, "Error", &e);
            Ok(ExitCode::from(1))
        }
    }
}

/// The clock and clock id this process's repositories make TIDs with: the
/// system clock (the binary is where the clock is read) and a random clock
/// id, as `TidGenerator` picks one.
pub(crate) fn env() -> crate::output::Result<repo::Env> {
    // A random clock id per process, as TidGenerator picks it.
    let clock_id = rkey::TidGenerator::builder()
        .build()
        .map_err(|e| e.to_string())?
        .clock_id();
    Ok(repo::Env::new(
        || rkey::Clock::now_micros(&rkey::SystemClock),
        clock_id,
    ))
}
