//! `datarepo serve`'s part in high availability on object storage: a
//! writer renews its lease and stops when it loses it; a standby takes
//! the lease over and becomes the writer (`docs/server.md`, "High
//! availability"; the lease itself is `store::Lease`, its timing
//! `server::lease`).

use std::{sync::Arc, time::Duration};

use crate::storage;

/// This process's name in the writer lease: its process id and random
/// bytes, unique per start.
pub(crate) fn holder_id() -> String {
    let mut bytes = [0u8; 32];
    crate::key_files::os_random(&mut bytes);
    let host = std::env::var("HOSTNAME").unwrap_or_default();
    let random: String = bytes[..6].iter().map(|b| format!("{b:02x}")).collect();
    if host.is_empty() {
        format!("{}-{random}", std::process::id())
    } else {
        format!("{host}-{}-{random}", std::process::id())
    }
}

/// What only the writer runs: pruning old stream events, finishing
/// interrupted index rebuilds, garbage collection when asked for.
pub(crate) struct WriterTasks {
    pub(crate) server: server::Server<store::SlateKv>,
    pub(crate) retention: server::Retention,
    pub(crate) gc_interval_secs: Option<u64>,
    pub(crate) gc_keep_last: Option<u64>,
    pub(crate) gc: Arc<tokio::sync::Mutex<Option<server::GcTask>>>,
}

impl WriterTasks {
    pub(crate) async fn start(self) {
        self.server.spawn_firehose_pruner(self.retention);
        self.server.spawn_index_recovery();
        if let Some(secs) = self.gc_interval_secs {
            let schedule = server::GcSchedule {
                interval: Duration::from_secs(secs),
                retention: storage::retention(self.gc_keep_last),
            };
            tracing::info!(
                every_secs = secs,
                keep_last = self.gc_keep_last,
                "collecting garbage while serving"
            );
            *self.gc.lock().await = Some(self.server.spawn_gc(schedule));
        }
    }
}

/// Renews the writer lease until it is lost, then says why the process
/// must stop.
pub(crate) async fn keep_lease(
    lease: store::Lease,
    held: server::lease::HeldLease,
    timing: server::lease::LeaseTiming,
    roles: Arc<server::Roles>,
    fatal: tokio::sync::watch::Sender<Option<String>>,
) {
    let end = server::lease::keep(lease, held, timing, roles).await;
    let message = format!("{end}: this server acknowledges no more writes and stops");
    tracing::error!("{message}");
    fatal.send_replace(Some(message));
}

/// A standby's takeover: waits for the writer's lease to lapse, takes it,
/// opens the store as its writer, and becomes the writer.
pub(crate) struct Takeover {
    pub(crate) lease: store::Lease,
    pub(crate) me: store::LeaseHolder,
    pub(crate) timing: server::lease::LeaseTiming,
    pub(crate) kv: store::SlateKv,
    pub(crate) location: store::Location,
    pub(crate) options: store::SlateOptions,
    pub(crate) fatal: tokio::sync::watch::Sender<Option<String>>,
    /// The leases this process may still take (`--max-partitions`).
    pub(crate) slots: Option<Arc<tokio::sync::Semaphore>>,
}

impl Takeover {
    pub(crate) async fn run(self, tasks: WriterTasks) {
        let roles = tasks.server.roles();
        tracing::info!("standing by: watching the writer lease");
        let (held, permit) = server::lease::wait_for_takeover_within(
            &self.lease,
            &self.me,
            self.timing,
            &roles,
            self.slots.as_ref(),
        )
        .await;
        // Taken for good: a lease once held is held until the process ends.
        if let Some(permit) = permit {
            permit.forget();
        }
        let term = held.holder.term;
        // Renewed from now on, while the store opens too.
        tokio::spawn(keep_lease(
            self.lease,
            held,
            self.timing,
            Arc::clone(&roles),
            self.fatal.clone(),
        ));
        let started = tokio::time::Instant::now();
        if let Err(e) = self.kv.promote(&self.location, &self.options).await {
            let message =
                format!("took the writer lease but cannot open the store as its writer: {e}");
            tracing::error!("{message}");
            self.fatal.send_replace(Some(message));
            return;
        }
        tasks.server.promote().await;
        tracing::warn!(
            term,
            open_ms = started.elapsed().as_millis(),
            "took over as the writer"
        );
        tasks.start().await;
    }
}
