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
            match publish(&shared.log(log).live, log, &apps, &anchors, from).await {
                Ok((through, more)) => {
                    last = Some(through);
                    if more {
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

/// Publishes the entries after `last` (one batch) into `live`: the entry
/// read through, and whether more may follow at once (a full batch, none
/// waiting for its partition).
async fn publish<K: Kv>(
    live: &Live,
    log: MergedLog,
    apps: &[Arc<crate::app::App<K>>],
    anchors: &[store::AnchorMemo],
    mut last: u64,
) -> Result<(u64, bool), repo::Error> {
    let entries = apps[0]
        .repos
        .store()
        .merged_events(log, last, BATCH)
        .await?;
    for entry in &entries {
        let p = usize::try_from(entry.partition).unwrap_or(usize::MAX);
        let Some(app) = apps.get(p) else {
            last = entry.seq;
            continue;
        };
        let store = app.repos.store();
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
                    live.publish(Framed {
                        seq: entry.seq,
                        frame,
                    });
                }
            }
            // Its partition's replica here has not seen it: wait.
            Entry::NotYet => return Ok((last, false)),
            Entry::Pruned => {}
        }
        last = entry.seq;
    }
    Ok((last, entries.len() == BATCH))
}
