//! Garbage collection while the server runs: one collection at a time,
//! `interval` after the previous one ended, alongside the writes
//! (`store::Store::gc` is safe while commits continue), skipped when no
//! commit landed since the last one that succeeded.

use std::{sync::Arc, time::Duration};

use store::{Kv, Retention};
use tokio::task::JoinHandle;

use crate::App;

/// When a running server collects garbage, and what it keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcSchedule {
    /// Time from the end of one collection to the start of the next (the
    /// first starts one interval after the server does).
    pub interval: Duration,
    /// The commits whose blocks stay.
    pub retention: Retention,
}

/// A server's garbage-collection loop, from [`crate::Server::spawn_gc`].
#[derive(Debug)]
pub struct GcTask {
    handle: JoinHandle<()>,
}

impl GcTask {
    /// Ends the loop and waits until it has ended. A collection in progress
    /// stops where it is: what it deleted was unreachable, and what it had
    /// yet to delete waits for the next collection.
    pub async fn stop(self) {
        self.handle.abort();
        // The loop never returns, so this is its cancellation (or a panic,
        // which the panic hook has already reported).
        let _ = self.handle.await;
    }
}

pub(crate) fn spawn<K: Kv + 'static>(app: Arc<App<K>>, schedule: GcSchedule) -> GcTask {
    let handle = tokio::spawn(async move {
        // Commits acknowledged when the last successful collection started:
        // with none since, there is nothing new to collect (blocks become
        // garbage only through commits, and this server is the writer).
        let mut commits_at_last = None;
        loop {
            tokio::time::sleep(schedule.interval).await;
            let commits = app.metrics.commits.get();
            if commits_at_last == Some(commits) {
                app.metrics.gc.count_run("skipped");
                continue;
            }
            if collect(&app, schedule.retention).await {
                commits_at_last = Some(commits);
            }
        }
    });
    GcTask { handle }
}

/// One collection: its outcome goes to the metrics and the log, never to a
/// client; a failed collection deleted nothing reachable and is tried again
/// at the next interval. Whether it succeeded.
async fn collect<K: Kv + 'static>(app: &App<K>, retention: Retention) -> bool {
    let clock = tokio::time::Instant::now();
    let result = app.repos.store().gc(retention, |_| {}).await;
    let seconds = clock.elapsed().as_secs_f64();
    let metrics = &app.metrics.gc;
    metrics.last_duration_seconds.set(seconds);
    match result {
        Ok(report) => {
            metrics.count_run("ok");
            metrics.blocks_deleted.inc_by(report.deleted as u64);
            metrics.bytes_freed.inc_by(report.bytes_freed);
            metrics
                .commits_dropped
                .inc_by(report.commits_dropped as u64);
            metrics
                .blocks_reachable
                .set(i64::try_from(report.reachable).unwrap_or(i64::MAX));
            tracing::info!(
                listed = report.listed,
                reachable = report.reachable,
                deleted = report.deleted,
                bytes_freed = report.bytes_freed,
                commits_dropped = report.commits_dropped,
                seconds,
                "garbage collection done"
            );
            true
        }
        Err(e) => {
            metrics.count_run("failed");
            tracing::warn!(
                error = %e,
                seconds,
                "garbage collection failed (nothing reachable was deleted); trying again at the next interval"
            );
            false
        }
    }
}
