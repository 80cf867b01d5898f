//! The stream's state the server holds for every connection (the newest
//! events in memory, the filtering passes connections share), apart from
//! the handlers that serve it.

use std::{
    collections::HashMap,
    sync::{Arc, Weak},
};

use tokio::sync::Notify;

use super::filters::PassKey;
use crate::frames::Live;

/// The stream's shared state.
pub(crate) struct Stream {
    pub(crate) live: Live,
    /// Woken when a commit is acknowledged.
    pub(super) commits: Arc<Notify>,
    pub(super) publishing: std::sync::atomic::AtomicBool,
    /// The filtering passes that connections with the same filters share.
    pub(super) passes: std::sync::Mutex<HashMap<PassKey, Weak<Pass>>>,
    pub(super) buffer_bytes: usize,
}

impl Stream {
    pub(crate) fn new(buffer_bytes: usize) -> Self {
        Self {
            live: Live::new(buffer_bytes),
            commits: Arc::new(Notify::new()),
            publishing: std::sync::atomic::AtomicBool::new(false),
            passes: std::sync::Mutex::default(),
            buffer_bytes,
        }
    }

    /// What tells the publisher that a commit is durable.
    pub(crate) fn notifier(&self) -> Arc<Notify> {
        Arc::clone(&self.commits)
    }
}

/// One filtering pass over the stream, shared by the connections whose
/// filters are the same: it reads each event once and keeps those they
/// want, so that each connection wakes only for its own events (100
/// connections asking for a rare collection otherwise wake and filter
/// every event 100 times). It ends with its last connection.
pub(crate) struct Pass {
    /// The events the filters let through, in stream order.
    pub(super) live: Live,
    /// The stream time it started after: a connection reads from the pass
    /// only once past it (and past what the pass has dropped).
    pub(super) start: u64,
    pub(super) task: tokio::task::AbortHandle,
}

impl Drop for Pass {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Pass {
    /// Whether a connection that has sent everything up to `last` finds
    /// every later event it wants in this pass.
    pub(super) fn covers(&self, last: u64) -> bool {
        last >= self.start && last >= self.live.dropped_through()
    }
}
