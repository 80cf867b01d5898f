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

use std::{
    sync::{Arc, Mutex, Weak},
    time::Duration,
};

use slatedb::Db;
use slatedb_common::metrics::{DefaultMetricsRecorder, MetricValue};
use tokio::time::Instant;

/// How many WAL SSTs a reopen may have to replay before the writer
/// flushes its memtable to an L0 SST (while it runs, and when it closes).
/// A one-shot command (a CLI `put`) below it closes without a flush: no L0
/// SST, no compaction and no wait for one.
pub const WAL_REPLAY_LIMIT: u64 = 32;

/// The shortest time between two memtable flushes the backlog's size asks
/// for.
pub const MIN_FLUSH_GAP: Duration = Duration::from_secs(1);

/// How long a backlog of any size may wait for a memtable flush.
pub const MAX_BACKLOG_AGE: Duration = Duration::from_secs(5);

/// How often the writer looks at its backlog.
const CHECK_EVERY: Duration = Duration::from_millis(200);

const WAL_FLUSHES: &str = "slatedb.wal.wal_buffer_flushes";
const MEMTABLE_FLUSHES: &str = "slatedb.db.immutable_memtable_flushes";

/// A writer's count of WAL SSTs written since its memtable was last
/// flushed, from SlateDB's counters.
pub(crate) struct WalBacklog {
    metrics: Arc<DefaultMetricsRecorder>,
    state: Mutex<Counted>,
}

struct Counted {
    /// WAL SSTs counted before the counters' bases (those the open found).
    carried: u64,
    /// The WAL-flush counter at the last memtable flush seen.
    wal_base: u64,
    /// The memtable-flush counter then.
    memtable_base: u64,
    /// The WAL-flush counter at the previous look.
    wal_seen: u64,
    /// When the memtable was last flushed (or the database opened).
    flushed_at: Instant,
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
    /// The backlog of a writer that has just opened `db`.
    pub(crate) fn new(db: &Db, metrics: Arc<DefaultMetricsRecorder>) -> Self {
        let manifest = db.manifest();
        let carried = manifest
            .next_wal_sst_id()
            .saturating_sub(manifest.replay_after_wal_id() + 1);
        let wal = counter(&metrics, WAL_FLUSHES);
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

    /// WAL SSTs a reopen would replay now (an upper bound: a memtable flush
    /// seen between two looks counts the WAL SSTs written between them as
    /// still pending), and how long ago the memtable was last flushed.
    pub(crate) fn now(&self) -> (u64, Duration) {
        let wal = counter(&self.metrics, WAL_FLUSHES);
        let memtable = counter(&self.metrics, MEMTABLE_FLUSHES);
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if memtable != s.memtable_base {
            s.memtable_base = memtable;
            s.wal_base = s.wal_seen;
            s.carried = 0;
            s.flushed_at = Instant::now();
        }
        s.wal_seen = wal;
        (
            s.carried + wal.saturating_sub(s.wal_base),
            s.flushed_at.elapsed(),
        )
    }

    /// Notes a memtable flush that began when the WAL-flush counter was
    /// `wal_before`: only WAL SSTs written since can be pending.
    fn flushed(&self, wal_before: u64) {
        let memtable = counter(&self.metrics, MEMTABLE_FLUSHES);
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.carried = 0;
        s.wal_base = wal_before;
        s.wal_seen = wal_before;
        s.memtable_base = memtable;
        s.flushed_at = Instant::now();
    }

    /// Whether the memtable should be flushed now.
    fn due(&self) -> bool {
        let (backlog, age) = self.now();
        (backlog >= WAL_REPLAY_LIMIT && age >= MIN_FLUSH_GAP)
            || (backlog > 0 && age >= MAX_BACKLOG_AGE)
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
                let wal_before = counter(&self.metrics, WAL_FLUSHES);
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
