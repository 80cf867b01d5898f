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
    pub(crate) async fn start(&self) {
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

/// Keeps this process's membership object fresh (every lease renewal) and
/// its fair share of `partitions` set from the live members: rounded up,
/// so that every partition has a place.
pub(crate) async fn share_fairly(
    members: store::Members,
    me: String,
    partitions: u32,
    timing: server::lease::LeaseTiming,
    gate: Arc<server::lease::TakeGate>,
) {
    loop {
        if let Err(e) = members.heartbeat(&me).await {
            tracing::warn!(error = %e, "cannot write this server's membership");
        }
        match members.live(timing.ttl).await {
            Ok(live) => {
                let live = u32::try_from(live.len().max(1)).unwrap_or(u32::MAX);
                gate.set_fair(partitions.div_ceil(live));
            }
            Err(e) => tracing::warn!(error = %e, "cannot list the live servers"),
        }
        tokio::time::sleep(timing.renew).await;
    }
}

/// What a writer does when it loses its lease.
#[derive(Debug, Clone, Copy)]
pub(crate) enum OnLoss {
    /// Stops the process: its one store is another process's now.
    Stop,
    /// Reopens the store (a partition) as a reader and stands by again,
    /// the process's other partitions untouched.
    StandBy {
        /// How often the reader looks for new commits.
        refresh: std::time::Duration,
    },
}

/// A store's (or partition's) tenure as this process's: waits for the
/// writer's lease to lapse, takes it, opens the store as its writer, and
/// becomes the writer; when it loses the lease, as [`OnLoss`] says.
pub(crate) struct Takeover {
    pub(crate) lease: store::Lease,
    pub(crate) me: store::LeaseHolder,
    pub(crate) timing: server::lease::LeaseTiming,
    pub(crate) kv: store::SlateKv,
    pub(crate) location: store::Location,
    pub(crate) options: store::SlateOptions,
    pub(crate) fatal: tokio::sync::watch::Sender<Option<String>>,
    /// How many leases this process may hold (`--max-partitions`, its
    /// fair share); a partition's tenure lets its lease go when the process
    /// holds more.
    pub(crate) gate: Option<Arc<server::lease::TakeGate>>,
    pub(crate) on_loss: OnLoss,
}

impl Takeover {
    /// A standby's: from waiting for the lease.
    pub(crate) async fn run(self, tasks: WriterTasks) {
        self.run_from(None, tasks).await;
    }

    /// From `renewing`, the renewal of a lease this process already
    /// writes under (its writer tasks started) and its place in the gate,
    /// else from waiting for the lease.
    pub(crate) async fn run_from(
        self,
        mut renewing: Option<(
            tokio::task::JoinHandle<server::lease::LeaseEnd>,
            Option<server::lease::HeldSlot>,
        )>,
        tasks: WriterTasks,
    ) {
        let roles = tasks.server.roles();
        let mut tasks_started = renewing.is_some();
        loop {
            let (mut renewal, mut slot) = match renewing.take() {
                Some(renewing) => renewing,
                None => {
                    tracing::info!(store = %self.location, "standing by: watching the writer lease");
                    let (held, slot) = server::lease::wait_for_takeover_within(
                        &self.lease,
                        &self.me,
                        self.timing,
                        &roles,
                        self.gate.as_ref(),
                    )
                    .await;
                    let term = held.holder.term;
                    let started = tokio::time::Instant::now();
                    // Renewed while the store opens too.
                    let renewal = tokio::spawn(server::lease::keep(
                        self.lease.clone(),
                        held,
                        self.timing,
                        Arc::clone(&roles),
                    ));
                    if let Err(e) = self.kv.promote(&self.location, &self.options).await {
                        let message = format!(
                            "took the writer lease of {} but cannot open it as its writer: {e}",
                            self.location
                        );
                        tracing::error!("{message}");
                        self.fatal.send_replace(Some(message));
                        return;
                    }
                    tasks.server.promote().await;
                    tracing::warn!(
                        store = %self.location,
                        term,
                        open_ms = started.elapsed().as_millis(),
                        "took over as the writer"
                    );
                    if !tasks_started {
                        tasks.start().await;
                        tasks_started = true;
                    }
                    (renewal, slot)
                }
            };
            // Until the lease is lost, or let go because the process holds
            // more than its share.
            let ended = loop {
                tokio::select! {
                    end = &mut renewal => break Some(end),
                    () = tokio::time::sleep(self.timing.renew) => {
                        if let Some(held) = slot.take() {
                            match held.release_if_over() {
                                Ok(()) => break None,
                                Err(held) => slot = Some(held),
                            }
                        }
                    }
                }
            };
            match ended {
                Some(Ok(end)) => {
                    drop(slot);
                    if !self.lost(end, &tasks).await {
                        return;
                    }
                }
                Some(Err(e)) => {
                    self.fatal
                        .send_replace(Some(format!("renewing the writer lease failed: {e}")));
                    return;
                }
                None => {
                    renewal.abort();
                    tracing::warn!(
                        store = %self.location,
                        "letting this partition's lease lapse: this server holds more than its share"
                    );
                    if !self.stand_by(&tasks).await {
                        return;
                    }
                }
            }
        }
    }

    /// Acts on the lease's loss as [`OnLoss`] says: whether to stand by
    /// again.
    async fn lost(&self, end: server::lease::LeaseEnd, tasks: &WriterTasks) -> bool {
        match self.on_loss {
            OnLoss::Stop => {
                let message = format!("{end}: this server acknowledges no more writes and stops");
                tracing::error!("{message}");
                self.fatal.send_replace(Some(message));
                false
            }
            OnLoss::StandBy { .. } => {
                tracing::warn!(
                    store = %self.location,
                    "{end}: this partition takes no more writes here and stands by"
                );
                self.stand_by(tasks).await
            }
        }
    }

    /// Reopens the store as a reader and makes its server a standby:
    /// whether that worked (else the process stops).
    async fn stand_by(&self, tasks: &WriterTasks) -> bool {
        let refresh = match self.on_loss {
            OnLoss::StandBy { refresh } => refresh,
            OnLoss::Stop => std::time::Duration::from_secs(1),
        };
        // No more acknowledgements from here on.
        tasks.server.demote().await;
        if let Err(e) = self.kv.demote(&self.location, refresh, &self.options).await {
            let message = format!(
                "stopped writing {} and cannot reopen it to read: {e}",
                self.location
            );
            tracing::error!("{message}");
            self.fatal.send_replace(Some(message));
            return false;
        }
        // Again: what was read through the writer meanwhile is forgotten.
        tasks.server.demote().await;
        true
    }
}
