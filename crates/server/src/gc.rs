//! Garbage collection while the server runs: one collection at a time,
//! `interval` after the previous one ended, alongside the writes
//! (`store::Store::gc` is safe while commits continue), skipped when no
//! commit landed since the last one that succeeded.
//!
//! A collection runs on a thread of its own with a runtime of its own:
//! its work (reading, hashing and decoding every block, marking millions)
//! then gets the operating system's share of the cores, not one turn
//! among every request task of the server's runtime, so it finishes under
//! any write rate. Its phase and progress are in the `datarepo_gc_*`
//! metrics, and each phase's end is logged.

use std::{sync::Arc, time::Duration};

use store::{GcProgress, GcReport, Kv, Retention};
use tokio::{sync::oneshot, task::JoinHandle, time::Instant};

use crate::app::App;

/// When a running server collects garbage, and what it keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcSchedule {
    /// Time from the end of one collection to the start of the next (the
    /// first starts one interval after the server does).
    pub interval: Duration,
    /// The commits whose blocks stay.
    pub retention: Retention,
}

/// A server's garbage-collection loop, from `Server::spawn_gc`.
#[derive(Debug)]
pub struct GcTask {
    handle: JoinHandle<()>,
    /// The thread of the collection under way, if any.
    thread: CollectionThread,
}

/// The thread a collection runs on, while it runs.
type CollectionThread = Arc<std::sync::Mutex<Option<std::thread::JoinHandle<()>>>>;

impl GcTask {
    /// Ends the loop and waits until it has ended. A collection in progress
    /// stops where it is: what it deleted was unreachable, and what it had
    /// yet to delete waits for the next collection.
    pub async fn stop(self) {
        self.handle.abort();
        // The loop never returns, so this is its cancellation (or a panic,
        // which the panic hook has already reported).
        let _ = self.handle.await;
        // Its collection's thread sees the loop gone at its next step.
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(thread) = thread {
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
    }
}

pub(crate) fn spawn<K: Kv + 'static>(app: Arc<App<K>>, schedule: GcSchedule) -> GcTask {
    let thread = CollectionThread::default();
    let current = Arc::clone(&thread);
    let handle = tokio::spawn(async move {
        // Commits acknowledged when the last successful collection started:
        // with none since, there is nothing new to collect (blocks become
        // garbage only through commits, and this server is the writer).
        let mut commits_at_last = None;
        loop {
            tokio::time::sleep(schedule.interval).await;
            let commits = app.metrics.commits.get();
            // Only the writer collects (a partition this process no longer
            // writes is another's).
            if commits_at_last == Some(commits) || !app.roles.may_acknowledge() {
                app.metrics.gc.count_run("skipped");
                continue;
            }
            if collect(&app, schedule.retention, &current).await {
                commits_at_last = Some(commits);
            }
        }
    });
    GcTask { handle, thread }
}

/// One collection: its outcome goes to the metrics and the log, never to a
/// client; a failed collection deleted nothing reachable and is tried again
/// at the next interval. Whether it succeeded.
async fn collect<K: Kv + 'static>(
    app: &Arc<App<K>>,
    retention: Retention,
    thread: &CollectionThread,
) -> bool {
    let clock = Instant::now();
    let result = on_own_thread(Arc::clone(app), retention, thread).await;
    let seconds = clock.elapsed().as_secs_f64();
    let metrics = &app.metrics.gc;
    metrics.idle();
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

/// Runs one collection on a thread of its own (see the module's
/// documentation). Dropping the returned future (the server stopping)
/// stops the collection where it is.
async fn on_own_thread<K: Kv + 'static>(
    app: Arc<App<K>>,
    retention: Retention,
    thread: &CollectionThread,
) -> Result<GcReport, store::Error> {
    let (done, outcome) = oneshot::channel();
    // Dropped with this future: the thread's collection then stops.
    let (_running, stopped) = oneshot::channel::<()>();
    let spawned = std::thread::Builder::new()
        .name("datarepo-gc".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(e) => {
                    let _ = done.send(Err(store::Error::Unavailable(Box::new(e))));
                    return;
                }
            };
            runtime.block_on(async move {
                let clock = Instant::now();
                let metrics = &app.metrics.gc;
                let mut phase = PhaseLog::default();
                let blob_ttl = app.config.limits.blob_temp_ttl.as_secs();
                let gc = async {
                    let report = app
                        .repos
                        .store()
                        .gc(retention, |p| {
                            metrics.progress(p, clock.elapsed());
                            phase.note(p, clock);
                        })
                        .await?;
                    // Then the blobs no repository holds any more.
                    match app.repos.collect_blobs(blob_ttl, false).await {
                        Ok(blobs) => tracing::info!(
                            temporary = blobs.temporary_dropped,
                            released = blobs.released_dropped,
                            objects = blobs.objects_deleted,
                            bytes = blobs.bytes_freed,
                            "blobs collected"
                        ),
                        Err(e) => tracing::warn!(error = %e, "collecting blobs failed"),
                    }
                    Ok(report)
                };
                tokio::select! {
                    result = gc => {
                        let _ = done.send(result);
                    }
                    _ = stopped => {}
                }
            });
        });
    match spawned {
        Ok(handle) => {
            // The previous collection's thread has ended: it sent its
            // outcome, or this loop stopped waiting for it only by ending.
            *thread
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(handle);
        }
        Err(e) => return Err(store::Error::Unavailable(Box::new(e))),
    }
    outcome.await.unwrap_or_else(|_| {
        Err(store::Error::Unavailable(
            "the garbage collection thread ended without an outcome".into(),
        ))
    })
}

/// Logs each phase of a collection as the next one starts.
#[derive(Default)]
struct PhaseLog {
    /// The phase under way (its name) and its count so far.
    current: Option<(&'static str, usize)>,
}

impl PhaseLog {
    fn note(&mut self, p: GcProgress, started: Instant) {
        let (name, count) = match p {
            GcProgress::Listing { listed } => ("listing", listed),
            GcProgress::Marking { reached } => ("marking", reached),
            GcProgress::Sweeping { done, total } => ("sweeping", done.max(total)),
        };
        if let Some((previous, n)) = self.current
            && previous != name
        {
            tracing::info!(
                phase = previous,
                blocks = n,
                seconds = started.elapsed().as_secs_f64(),
                next = name,
                "garbage collection phase done"
            );
        }
        self.current = Some((name, count));
    }
}
