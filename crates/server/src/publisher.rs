//! The task that moves durable events into memory for the connections
//! following the present, shared by the firehose and the
//! Jetstream-compatible stream: it reads the events after the last it
//! published, in order, as soon as a commit is acknowledged (and every
//! 100 ms, for commits another process made, such as a replica's
//! writer), until the server closes its streams or is dropped.

use std::{
    sync::{Arc, atomic::AtomicBool},
    time::Duration,
};

use tokio::sync::{Notify, watch};

use crate::frames::Live;

/// How often a publisher looks for events nobody told it about.
const POLL: Duration = Duration::from_millis(100);

/// The durable events one stream publishes.
pub(crate) trait Events: Send + Sync + 'static {
    /// What the log calls the stream.
    const NAME: &'static str;

    /// The newest durable event's position (sequence or time), if any.
    fn newest(&self) -> impl Future<Output = Result<Option<u64>, store::Error>> + Send;

    /// Publishes into `live`, in order, the durable events after `last`
    /// (one batch at most), moving `last` to each as it goes: whether a
    /// whole batch was read (there may be more). An event that cannot be
    /// published now stops the batch with `last` before it, to be tried
    /// again at the next wake-up: none is skipped but a malformed one.
    fn publish_after(&self, live: &Live, last: &mut u64) -> impl Future<Output = bool> + Send;
}

/// Starts the publisher of `events` into the [`Live`] that `live` finds
/// in `owner`, unless `publishing` says one runs: woken by `commits`,
/// stopped when `closing` turns true or `owner` is dropped. It starts
/// after the newest durable event (connections replay what came before).
pub(crate) fn start<T: Send + Sync + 'static, E: Events>(
    owner: &Arc<T>,
    publishing: &AtomicBool,
    live: fn(&T) -> &Live,
    commits: Arc<Notify>,
    mut closing: watch::Receiver<bool>,
    events: E,
) {
    if publishing.swap(true, std::sync::atomic::Ordering::AcqRel) {
        return;
    }
    let owner = Arc::downgrade(owner);
    tokio::spawn(async move {
        let mut last = loop {
            match events.newest().await {
                Ok(newest) => break newest.unwrap_or(0),
                Err(e) => {
                    tracing::warn!(error = %e, "{}: cannot read the newest event; retrying", E::NAME);
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        };
        loop {
            tokio::select! {
                () = commits.notified() => {}
                () = tokio::time::sleep(POLL) => {}
                _ = async { closing.wait_for(|closing| *closing).await.is_ok() } => return,
            }
            let Some(owner) = owner.upgrade() else {
                return;
            };
            while events.publish_after(live(&owner), &mut last).await {}
        }
    });
}
