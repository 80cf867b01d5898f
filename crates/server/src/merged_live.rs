//! The newest entries of a partitioned store's merged logs, read once per
//! process and shared by every connection of the merged streams: a
//! publisher per log (started by its first subscriber) polls the log in
//! partition 0 every [`POLL`], reads each new entry's event from its
//! partition once (and, for the firehose, frames it once under the merged
//! sequence number), and keeps the newest in memory ([`Live`], bounded as
//! an unpartitioned server's). A connection reads the store until it has
//! reached what memory covers, then memory; one that falls behind memory
//! reads the store again.

use std::sync::{
    Arc, OnceLock,
    atomic::{AtomicBool, Ordering},
};

use store::{Kv, MergedLog};

use crate::Server;
use crate::frames::{Framed, Live};
use crate::merged_log::{BATCH, Entry, POLL, read_entry};

/// The shared newest entries of both merged logs.
pub(crate) struct MergedLive {
    pub(crate) firehose: SharedLog,
    pub(crate) stream: SharedLog,
}

/// One merged log's newest entries in memory.
pub(crate) struct SharedLog {
    pub(crate) live: Live,
    /// The entry the publisher started after: later entries are in `live`
    /// (until they leave it). Unset until the publisher has started.
    start: OnceLock<u64>,
    started: AtomicBool,
}

impl MergedLive {
    pub(crate) fn new(buffer_bytes: usize) -> Self {
        let log = || SharedLog {
            live: Live::new(buffer_bytes),
            start: OnceLock::new(),
            started: AtomicBool::new(false),
        };
        Self {
            firehose: log(),
            stream: log(),
        }
    }

    fn log(&self, log: MergedLog) -> &SharedLog {
        match log {
            MergedLog::Firehose => &self.firehose,
            MergedLog::Stream => &self.stream,
        }
    }
}

impl SharedLog {
    /// Whether a connection that has sent every entry up to `last` finds
    /// every later one in memory.
    pub(crate) fn covers(&self, last: u64) -> bool {
        self.start.get().is_some_and(|start| last >= *start) && last >= self.live.dropped_through()
    }

    /// Waits for a connection's next entries: until the publisher has one
    /// (`in_memory`, `newest` watching this log's memory), else one poll
    /// of the log in the store.
    pub(crate) async fn wait(
        &self,
        newest: &mut tokio::sync::watch::Receiver<u64>,
        in_memory: bool,
    ) {
        if in_memory && newest.changed().await.is_ok() {
            return;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Starts the publisher of `log` (once per process), until the servers
/// stop.
pub(crate) fn start<K: Kv + 'static>(
    shared: &Arc<MergedLive>,
    log: MergedLog,
    servers: &[Server<K>],
) {
    if shared.log(log).started.swap(true, Ordering::AcqRel) {
        return;
    }
    let shared = Arc::clone(shared);
    let apps: Vec<_> = servers.iter().map(|s| Arc::downgrade(&s.app)).collect();
    tokio::spawn(async move {
        let anchors: Vec<_> = apps.iter().map(|_| store::AnchorMemo::default()).collect();
        let mut last = None;
        loop {
            let Some(apps) = apps
                .iter()
                .map(std::sync::Weak::upgrade)
                .collect::<Option<Vec<_>>>()
            else {
                return;
            };
            let head = apps[0].repos.store();
            let from = match last {
                Some(last) => last,
                None => match head.newest_merged_event(log).await {
                    Ok(newest) => {
                        let newest = newest.unwrap_or(0);
                        let _ = shared.log(log).start.set(newest);
                        last = Some(newest);
                        newest
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "merged stream: cannot read the newest entry");
                        drop(apps);
                        tokio::time::sleep(POLL).await;
                        continue;
                    }
                },
            };
            let stores: Vec<&store::Store<K>> =
                apps.iter().map(|a| a.repos.store().as_ref()).collect();
            match read_after(log, &stores, &anchors, from).await {
                Ok(batch) => {
                    for framed in batch.entries {
                        shared.log(log).live.publish(framed);
                    }
                    last = Some(batch.through);
                    if batch.more {
                        continue;
                    }
                }
                Err(e) => tracing::warn!(error = %e, "merged stream: cannot read entries"),
            }
            drop(apps);
            tokio::time::sleep(POLL).await;
        }
    });
}

/// What a connection sends next.
pub(crate) struct Next {
    /// Entries, each under its place in the log.
    pub(crate) entries: Vec<(u64, bytes::Bytes)>,
    /// The place the connection has sent everything through once these are
    /// sent.
    pub(crate) through: u64,
    /// Read from memory (so the connection waits on it for the next).
    pub(crate) in_memory: bool,
    /// Whether to read again at once.
    pub(crate) again: bool,
}

/// The next entries of `log` for a connection that has sent everything
/// through `last`: from memory when it holds everything after `last`, else
/// from the store (the connection is behind memory, or before it began).
///
/// # Errors
///
/// As [`read_after`].
pub(crate) async fn next_for<K: Kv>(
    shared: &SharedLog,
    log: MergedLog,
    stores: &[&store::Store<K>],
    anchors: &[store::AnchorMemo],
    last: u64,
) -> Result<Next, repo::Error> {
    if shared.covers(last)
        && let Ok(batch) = shared
            .live
            .after(last, crate::jetstream::CONSUMER_BATCH_BYTES)
    {
        let through = batch.last().map_or(last, |f| f.seq);
        return Ok(Next {
            again: !batch.is_empty(),
            entries: batch.iter().map(|f| (f.seq, f.frame.clone())).collect(),
            through,
            in_memory: true,
        });
    }
    let read = read_after(log, stores, anchors, last).await?;
    Ok(Next {
        entries: read.entries.into_iter().map(|f| (f.seq, f.frame)).collect(),
        through: read.through,
        in_memory: false,
        again: read.more || shared.covers(read.through),
    })
}

/// Entries of a merged log as connections send them.
pub(crate) struct Batch {
    /// Each entry's event under its place in the log: the firehose's
    /// framed, the stream's as stored.
    pub(crate) entries: Vec<Framed>,
    /// The place read through.
    pub(crate) through: u64,
    /// Whether more may follow at once (a full batch, none waiting for its
    /// partition).
    pub(crate) more: bool,
}

/// The entries of `log` after `last` (one batch), each event read from its
/// partition's store (`stores[p]`; `anchors[p]` for framing the
/// firehose's): skipped when its partition no longer keeps it (or it is
/// malformed), and the batch ends before one this process's replica of its
/// partition has not seen yet.
///
/// # Errors
///
/// The store's, reading the log or an event.
pub(crate) async fn read_after<K: Kv>(
    log: MergedLog,
    stores: &[&store::Store<K>],
    anchors: &[store::AnchorMemo],
    mut last: u64,
) -> Result<Batch, repo::Error> {
    let read = stores[0].merged_events(log, last, BATCH).await?;
    let mut entries = Vec::with_capacity(read.len());
    for entry in &read {
        let p = usize::try_from(entry.partition).unwrap_or(usize::MAX);
        let Some(store) = stores.get(p) else {
            last = entry.seq;
            continue;
        };
        match read_entry(log, store, entry).await? {
            Entry::Event(stored) => {
                let frame = match log {
                    MergedLog::Stream => Some(stored),
                    MergedLog::Firehose => {
                        match repo::frame_event(store, &anchors[p], entry.seq, &stored).await {
                            Ok(frame) => Some(frame.into()),
                            Err(repo::Error::InvalidRecord(e)) => {
                                tracing::error!(seq = entry.seq, error = %e, "merged firehose: skipping a malformed event");
                                None
                            }
                            Err(e) => return Err(e),
                        }
                    }
                };
                if let Some(frame) = frame {
                    entries.push(Framed {
                        seq: entry.seq,
                        frame,
                    });
                }
            }
            Entry::NotYet => {
                return Ok(Batch {
                    entries,
                    through: last,
                    more: false,
                });
            }
            Entry::Pruned => {}
        }
        last = entry.seq;
    }
    Ok(Batch {
        entries,
        through: last,
        more: read.len() == BATCH,
    })
}
