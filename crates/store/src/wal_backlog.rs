//! The WAL a reader would replay, kept short.
//!
//! Every commit is durable in SlateDB's write-ahead log when it is
//! acknowledged; it reaches an L0 SST only when the memtable is flushed,
//! which SlateDB does by size alone (256 MiB here). Any process that opens
//! the database (a CLI read beside a server, the next server) replays every
//! WAL SST written since the last memtable flush, about 1 ms each: a server
//! that took 1,400 small commits left 600 of them, and fresh reads took
//! 0.4–2.3 s instead of 20 ms.
//!
//! So a writer counts the WAL SSTs written since the last memtable flush
//! (SlateDB's own counters: its manifest's WAL ids move only at memtable
//! flushes), and a task flushes the memtable when that backlog reaches
//! [`WAL_REPLAY_LIMIT`] (at most once per [`MIN_FLUSH_GAP`], so a write
//! storm does not become a storm of L0 SSTs) or when any backlog is older
//! than [`MAX_BACKLOG_AGE`] (so a quiet server leaves nothing to replay).
//!
//! It counts the backlog's bytes too: a few large writes (an import, an
//! `index add`, written in 32 MiB batches) are a few WAL SSTs holding
//! hundreds of MiB, and a closing writer that left them made every later
//! open replay them into memory (a `query --count` on a 1,000,000-record
//! store right after its import: 0.4-1.1 s and 600 MB of memory, against
//! 20 ms and 66 MB once flushed). A writer closes with a memtable flush
//! when the backlog holds more than [`WAL_REPLAY_LIMIT`] WAL SSTs or
//! [`WAL_REPLAY_BYTES`] bytes.

use std::{
    sync::{Arc, Mutex, Weak},
    time::Duration,
};

use slatedb::{
    Db,
    object_store::{ObjectStore, ObjectStoreExt as _},
};
use slatedb_common::metrics::{DefaultMetricsRecorder, MetricValue};
use tokio::time::Instant;

/// How many WAL SSTs a reopen may have to replay before the writer
/// flushes its memtable to an L0 SST (while it runs, and when it closes).
/// A one-shot command (a CLI `put`) below it closes without a flush: no L0
/// SST, no compaction and no wait for one.
pub const WAL_REPLAY_LIMIT: u64 = 32;

/// How many bytes of WAL SSTs a reopen may have to replay before a
/// closing writer flushes its memtable to an L0 SST.
pub const WAL_REPLAY_BYTES: u64 = 4 << 20;

/// The shortest time between two memtable flushes the backlog's size asks
/// for.
pub const MIN_FLUSH_GAP: Duration = Duration::from_secs(1);

/// How long a backlog of any size may wait for a memtable flush.
pub const MAX_BACKLOG_AGE: Duration = Duration::from_secs(5);

/// How often the writer looks at its backlog.
const CHECK_EVERY: Duration = Duration::from_millis(200);

const WAL_FLUSHES: &str = "slatedb.wal.wal_buffer_flushes";
const WAL_FLUSH_BYTES: &str = "slatedb.wal.wal_flush_bytes";
const MEMTABLE_FLUSHES: &str = "slatedb.db.immutable_memtable_flushes";

/// A writer's count of WAL SSTs written since its memtable was last
/// flushed, from SlateDB's counters.
pub(crate) struct WalBacklog {
    metrics: Arc<DefaultMetricsRecorder>,
    state: Mutex<Counted>,
}

struct Counted {
    /// WAL SSTs and their bytes counted before the counters' bases (those
    /// the open found).
    carried: Wal,
    /// The WAL counters at the last memtable flush seen.
    wal_base: Wal,
    /// The memtable-flush counter then.
    memtable_base: u64,
    /// The WAL counters at the previous look.
    wal_seen: Wal,
    /// When the memtable was last flushed (or the database opened).
    flushed_at: Instant,
}

/// WAL SSTs and the bytes they hold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Wal {
    ssts: u64,
    bytes: u64,
}

impl Wal {
    fn counted(metrics: &DefaultMetricsRecorder) -> Self {
        Self {
            ssts: counter(metrics, WAL_FLUSHES),
            bytes: counter(metrics, WAL_FLUSH_BYTES),
        }
    }

    fn since(self, base: Self) -> Self {
        Self {
            ssts: self.ssts.saturating_sub(base.ssts),
            bytes: self.bytes.saturating_sub(base.bytes),
        }
    }

    fn plus(self, other: Self) -> Self {
        Self {
            ssts: self.ssts.saturating_add(other.ssts),
            bytes: self.bytes.saturating_add(other.bytes),
        }
    }

    /// Whether a reopen replaying this much is worth a memtable flush at
    /// close.
    pub(crate) fn worth_flushing(self) -> bool {
        self.ssts > WAL_REPLAY_LIMIT || self.bytes > WAL_REPLAY_BYTES
    }
}

fn counter(metrics: &DefaultMetricsRecorder, name: &str) -> u64 {
    metrics
        .snapshot()
        .by_name(name)
        .iter()
        .map(|m| match m.value {
            MetricValue::Counter(n) => n,
            _ => 0,
        })
        .sum()
}

impl WalBacklog {
    /// The backlog of a writer that has just opened, finding `carried`
    /// ([`WalBacklog::carried`]).
    pub(crate) fn new(metrics: Arc<DefaultMetricsRecorder>, carried: Wal) -> Self {
        let wal = Wal::counted(&metrics);
        let memtable = counter(&metrics, MEMTABLE_FLUSHES);
        Self {
            state: Mutex::new(Counted {
                carried,
                wal_base: wal,
                memtable_base: memtable,
                wal_seen: wal,
                flushed_at: Instant::now(),
            }),
            metrics,
        }
    }

    /// The WAL SSTs `db` replayed as it opened and their bytes: those in
    /// its `wal/` folder in `store` (database path `path`) after the last
    /// one its manifest says a memtable flush covered, numbered on from
    /// it. (The manifest's next WAL id is the one of its last write, not
    /// the open's: it cannot count them.) Each is looked up by name, up to
    /// one past [`WAL_REPLAY_LIMIT`] (a close then flushes whatever their
    /// bytes), not listed: the folder holds the few hundred WAL files
    /// SlateDB keeps for a while, and listing them would cost a one-record
    /// `put` ~6%.
    pub(crate) async fn carried(db: &Db, store: &dyn ObjectStore, path: &str) -> Wal {
        let after = db.manifest().replay_after_wal_id();
        let mut carried = Wal::default();
        for id in (after + 1..).take(WAL_REPLAY_LIMIT as usize + 1) {
            let name = slatedb::object_store::path::Path::from(format!("{path}/wal/{id:020}.sst"));
            match store.head(&name).await {
                Ok(meta) => {
                    carried = carried.plus(Wal {
                        ssts: 1,
                        bytes: meta.size,
                    });
                }
                Err(_) => break,
            }
        }
        carried
    }

    /// What a reopen would replay now (an upper bound: a memtable flush
    /// seen between two looks counts the WAL written between them as still
    /// pending), and how long ago the memtable was last flushed.
    pub(crate) fn now(&self) -> (Wal, Duration) {
        let wal = Wal::counted(&self.metrics);
        let memtable = counter(&self.metrics, MEMTABLE_FLUSHES);
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if memtable != s.memtable_base {
            s.memtable_base = memtable;
            s.wal_base = s.wal_seen;
            s.carried = Wal::default();
            s.flushed_at = Instant::now();
        }
        s.wal_seen = wal;
        (
            s.carried.plus(wal.since(s.wal_base)),
            s.flushed_at.elapsed(),
        )
    }

    /// Notes a memtable flush that began when the WAL counters were
    /// `wal_before`: only WAL SSTs written since can be pending.
    fn flushed(&self, wal_before: Wal) {
        let memtable = counter(&self.metrics, MEMTABLE_FLUSHES);
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.carried = Wal::default();
        s.wal_base = wal_before;
        s.wal_seen = wal_before;
        s.memtable_base = memtable;
        s.flushed_at = Instant::now();
    }

    /// Whether the memtable should be flushed now (by the count of WAL
    /// SSTs and their age alone: flushing a running writer by bytes would
    /// cut an import's memtable into many small L0 SSTs for compaction to
    /// merge again).
    fn due(&self) -> bool {
        let (backlog, age) = self.now();
        (backlog.ssts >= WAL_REPLAY_LIMIT && age >= MIN_FLUSH_GAP)
            || (backlog.ssts > 0 && age >= MAX_BACKLOG_AGE)
    }

    /// Runs until `db` is dropped or closed: flushes its memtable when
    /// [`WalBacklog`]'s rules say so.
    pub(crate) fn spawn_flusher(self: Arc<Self>, db: Weak<Db>) {
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(CHECK_EVERY);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                let Some(db) = db.upgrade() else { return };
                if !self.due() {
                    continue;
                }
                let wal_before = Wal::counted(&self.metrics);
                let flushed = db
                    .flush_with_options(slatedb::config::FlushOptions {
                        flush_type: slatedb::config::FlushType::MemTable,
                    })
                    .await;
                match flushed {
                    Ok(()) => self.flushed(wal_before),
                    Err(e) => {
                        if db.status().close_reason.is_some() {
                            return;
                        }
                        tracing::warn!(error = %e, "flushing the memtable to bound the WAL failed");
                    }
                }
            }
        });
    }
}
