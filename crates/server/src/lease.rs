//! The writer's lease, kept: a writer renews it and stops acknowledging
//! writes when it cannot; a standby watches it and takes it over when it
//! has not been renewed for its time to live.
//!
//! The timing (`docs/server.md`, "High availability"): a standby takes
//! over a lease only after the version it read has stayed the same for
//! `ttl` on its own clock, and it read that version after it was written,
//! so after the writer *started* that renewal. The writer acknowledges
//! nothing after the start of its last successful renewal plus `ttl` less
//! a margin ([`LeaseTiming::margin`]). So, with clocks that run at the same
//! rate within the margin's share of `ttl`, the writer has stopped before a
//! standby can take over. SlateDB's fencing stands behind it: once the new
//! writer opens the database, the old one's writes fail.

use std::{sync::Arc, time::Duration};

use store::{Lease, LeaseHolder, LeaseVersion};
use tokio::time::Instant;

use crate::role::{Role, Roles};

/// How often a lease is renewed, and for how long it holds unrenewed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseTiming {
    /// How often the writer renews (and a standby reads) the lease.
    pub renew: Duration,
    /// How long after its last renewal a lease may be taken over.
    pub ttl: Duration,
}

impl LeaseTiming {
    /// What a writer takes off its lease's time to live: a fifth of it
    /// (covers clock-rate differences up to 20% and the time between
    /// checking the lease and answering).
    #[must_use]
    pub fn margin(&self) -> Duration {
        self.ttl / 5
    }

    /// When a writer whose renewal started at `started` stops
    /// acknowledging unless it renews again.
    #[must_use]
    pub fn acknowledge_until(&self, started: Instant) -> Instant {
        started + self.ttl - self.margin()
    }
}

/// A lease this process holds: who it says holds it, and its version.
#[derive(Debug, Clone)]
pub struct HeldLease {
    /// What the lease object says.
    pub holder: LeaseHolder,
    /// Its version, for the next renewal.
    pub version: LeaseVersion,
    /// When the write that took or renewed it started.
    pub started: Instant,
}

/// Why a writer stopped holding its lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseEnd {
    /// Another process holds it now.
    TakenOver {
        /// Who, when it could be read.
        by: Option<LeaseHolder>,
    },
    /// It could not be renewed before it lapsed.
    Lapsed {
        /// The last renewal's error.
        error: String,
    },
}

impl std::fmt::Display for LeaseEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::TakenOver { by: Some(by) } => write!(
                f,
                "the writer lease was taken over by {} at {} (term {})",
                by.id, by.address, by.term
            ),
            Self::TakenOver { by: None } => write!(f, "the writer lease was taken over"),
            Self::Lapsed { error } => write!(
                f,
                "the writer lease could not be renewed before it lapsed ({error})"
            ),
        }
    }
}

/// Takes the lease for `me` whatever holds it now, the term one past the
/// last: a writer started by its operator (it then fences the database's
/// writer, if any, by opening it).
///
/// # Errors
///
/// The object store's error when the lease cannot be read or written.
pub async fn take(lease: &Lease, me: &LeaseHolder) -> Result<HeldLease, store::Error> {
    loop {
        let started = Instant::now();
        let current = lease.read().await?;
        let mut holder = me.clone();
        holder.renewal = 0;
        let written = match &current {
            None => {
                holder.term = 1;
                lease.create(&holder).await?
            }
            Some((previous, version)) => {
                holder.term = previous.term + 1;
                lease.replace(version, &holder).await?
            }
        };
        if let Some(version) = written {
            return Ok(HeldLease {
                holder,
                version,
                started,
            });
        }
        // Renewed or taken between the read and the write: read again.
    }
}

/// Renews `held` every `timing.renew` until it is taken over or lapses,
/// keeping `roles`' acknowledgement deadline; returns why it stopped (the
/// process must then stop taking writes: it no longer acknowledges any).
pub async fn keep(
    lease: Lease,
    mut held: HeldLease,
    timing: LeaseTiming,
    roles: Arc<Roles>,
) -> LeaseEnd {
    let mut deadline = timing.acknowledge_until(held.started);
    roles.acknowledge_until(deadline);
    let mut last_error = None;
    loop {
        tokio::time::sleep(timing.renew).await;
        let started = Instant::now();
        if started >= deadline {
            return LeaseEnd::Lapsed {
                error: last_error.unwrap_or_else(|| {
                    format!(
                        "no renewal was attempted for {} ms: the process was paused or starved",
                        started.duration_since(held.started).as_millis()
                    )
                }),
            };
        }
        let mut next = held.holder.clone();
        next.renewal += 1;
        // A renewal that takes past the deadline is as good as failed.
        let renewal = tokio::time::timeout_at(deadline, lease.replace(&held.version, &next)).await;
        match renewal {
            Ok(Ok(Some(version))) => {
                held = HeldLease {
                    holder: next,
                    version,
                    started,
                };
                deadline = timing.acknowledge_until(started);
                roles.acknowledge_until(deadline);
            }
            Ok(Ok(None)) => {
                let by = lease.read().await.ok().flatten().map(|(h, _)| h);
                return LeaseEnd::TakenOver { by };
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "cannot renew the writer lease; retrying");
                last_error = Some(e.to_string());
            }
            Err(_) => {
                return LeaseEnd::Lapsed {
                    error: "the renewal did not finish in time".to_owned(),
                };
            }
        }
    }
}

/// How many partitions' leases one process may hold: at most `max`, and
/// at most its fair share among the live servers (set as they come and
/// go); `held` counts the leases it holds, each by a [`HeldSlot`].
#[derive(Debug)]
pub struct TakeGate {
    held: std::sync::atomic::AtomicU32,
    fair: std::sync::atomic::AtomicU32,
    max: u32,
}

/// One lease counted by a [`TakeGate`]; dropping it gives the place back.
#[derive(Debug)]
pub struct HeldSlot(Option<Arc<TakeGate>>);

impl Drop for HeldSlot {
    fn drop(&mut self) {
        if let Some(gate) = self.0.take() {
            gate.held.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
        }
    }
}

impl HeldSlot {
    /// Gives the place back if the process holds more leases than its
    /// limit (its lease should then be let go), else keeps it. Of several
    /// slots released at once, only as many as are over the limit go.
    ///
    /// # Errors
    ///
    /// The slot, kept, when the process is not over its limit.
    pub fn release_if_over(mut self) -> Result<(), Self> {
        let Some(gate) = self.0.take() else {
            return Ok(());
        };
        let limit = gate.limit();
        let released = gate
            .held
            .fetch_update(
                std::sync::atomic::Ordering::AcqRel,
                std::sync::atomic::Ordering::Acquire,
                |held| (held > limit).then(|| held - 1),
            )
            .is_ok();
        if released {
            Ok(())
        } else {
            self.0 = Some(gate);
            Err(self)
        }
    }
}

impl TakeGate {
    /// A gate allowing `max` leases, none held yet, no fair share set.
    #[must_use]
    pub fn new(max: u32) -> Arc<Self> {
        Arc::new(Self {
            held: std::sync::atomic::AtomicU32::new(0),
            fair: std::sync::atomic::AtomicU32::new(u32::MAX),
            max,
        })
    }

    fn limit(&self) -> u32 {
        self.max
            .min(self.fair.load(std::sync::atomic::Ordering::Acquire))
    }

    /// A place for one more lease if the process holds fewer than its limit.
    pub fn try_take(self: &Arc<Self>) -> Option<HeldSlot> {
        let limit = self.limit();
        self.held
            .fetch_update(
                std::sync::atomic::Ordering::AcqRel,
                std::sync::atomic::Ordering::Acquire,
                |held| (held < limit).then_some(held + 1),
            )
            .ok()
            .map(|_| HeldSlot(Some(Arc::clone(self))))
    }

    /// A place for a lease taken whatever the limit (one named by
    /// `--partitions-owned`).
    #[must_use]
    pub fn take_anyway(self: &Arc<Self>) -> HeldSlot {
        self.held.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        HeldSlot(Some(Arc::clone(self)))
    }

    /// Sets the fair share: the partitions over the live servers, rounded up.
    pub fn set_fair(&self, fair: u32) {
        self.fair.store(fair, std::sync::atomic::Ordering::Release);
    }

    /// How many leases the process holds.
    #[must_use]
    pub fn held(&self) -> u32 {
        self.held.load(std::sync::atomic::Ordering::Acquire)
    }
}

/// A standby's wait: reads the lease every `timing.renew` (keeping the
/// writer's address in `roles`) until it has not changed for the lease's
/// time to live (the larger of the holder's and `timing.ttl`), then takes
/// it over for `me`; returns once it holds it. Several standbys may try
/// at once: exactly one wins, and the others go on watching the winner.
pub async fn wait_for_takeover(
    lease: &Lease,
    me: &LeaseHolder,
    timing: LeaseTiming,
    roles: &Roles,
) -> HeldLease {
    wait_for_takeover_within(lease, me, timing, roles, None)
        .await
        .0
}

/// [`wait_for_takeover`], taking a lapsed lease only while `gate` has a
/// place (a process holding several partitions' leases takes at most so
/// many: `serve --max-partitions`, its fair share): the lease and its
/// place, to keep for as long as the lease is held. Without a place it
/// goes on watching (and naming the writer).
pub async fn wait_for_takeover_within(
    lease: &Lease,
    me: &LeaseHolder,
    timing: LeaseTiming,
    roles: &Roles,
    gate: Option<&Arc<TakeGate>>,
) -> (HeldLease, Option<HeldSlot>) {
    // The version last read (`None`: no lease object) and when it was
    // first read.
    let mut seen: Option<(Option<LeaseVersion>, Instant)> = None;
    loop {
        let now = Instant::now();
        match lease.read().await {
            Err(e) => tracing::warn!(error = %e, "cannot read the writer lease"),
            Ok(current) => {
                let version = current.as_ref().map(|(_, v)| v.clone());
                let changed = seen.as_ref().is_none_or(|(v, _)| *v != version);
                if changed {
                    seen = Some((version, now));
                    roles.set(Role::Standby {
                        writer: current.as_ref().map(|(h, _)| h.address.clone()),
                    });
                }
                let ttl = current.as_ref().map_or(timing.ttl, |(h, _)| {
                    timing.ttl.max(Duration::from_millis(h.ttl_ms))
                });
                let since = seen.as_ref().map_or(now, |(_, t)| *t);
                let permit = match gate {
                    _ if now.duration_since(since) < ttl => Err(()),
                    None => Ok(None),
                    Some(gate) => gate.try_take().map(Some).ok_or(()),
                };
                if let Ok(permit) = permit {
                    let mut holder = me.clone();
                    holder.renewal = 0;
                    let started = Instant::now();
                    let written = match &current {
                        None => {
                            holder.term = 1;
                            lease.create(&holder).await
                        }
                        Some((previous, version)) => {
                            holder.term = previous.term + 1;
                            tracing::warn!(
                                writer = %previous.address,
                                term = previous.term,
                                "the writer lease has not been renewed for {} ms; taking it over",
                                ttl.as_millis()
                            );
                            lease.replace(version, &holder).await
                        }
                    };
                    match written {
                        Ok(Some(version)) => {
                            return (
                                HeldLease {
                                    holder,
                                    version,
                                    started,
                                },
                                permit,
                            );
                        }
                        Ok(None) => tracing::info!("another standby took the writer lease first"),
                        Err(e) => tracing::warn!(error = %e, "cannot take the writer lease"),
                    }
                }
            }
        }
        tokio::time::sleep(timing.renew).await;
    }
}

#[cfg(test)]
mod gate_tests {
    use super::TakeGate;

    #[test]
    fn a_gate_admits_up_to_its_limit_and_releases_only_the_excess() {
        let gate = TakeGate::new(3);
        let slots: Vec<_> = (0..3).map(|_| gate.try_take().unwrap()).collect();
        assert!(gate.try_take().is_none(), "past --max-partitions");
        gate.set_fair(1);
        assert_eq!(gate.held(), 3);
        // Two over the fair share: two of the three let go, one kept.
        let kept: Vec<_> = slots
            .into_iter()
            .filter_map(|s| s.release_if_over().err())
            .collect();
        assert_eq!((kept.len(), gate.held()), (1, 1));
        assert!(gate.try_take().is_none());
        gate.set_fair(2);
        let again = gate.try_take().unwrap();
        assert_eq!(gate.held(), 2);
        drop(again);
        drop(kept);
        assert_eq!(gate.held(), 0);
        let anyway = gate.take_anyway();
        assert_eq!(gate.held(), 1);
        drop(anyway);
    }
}
