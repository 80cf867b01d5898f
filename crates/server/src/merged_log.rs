//! The sequencer of a partitioned store's merged event logs
//! (`store::MergedLog`): one order over every partition's events, for one
//! `subscribeRepos` stream and one `/subscribe` stream.
//!
//! Each partition keeps its own events: firehose events under its own
//! sequence numbers, stream events under its own times. The process
//! writing partition 0 runs the sequencer: every [`POLL`] it reads each
//! partition's durable events after the mark it has reached in each, orders
//! the round by commit time (ties by partition, each partition's own order
//! kept whatever its clock said), and appends them to the log in partition
//! 0 with the marks they move, in one durable write per log. A firehose
//! entry's place is the next sequence number; a stream entry's is its
//! event's own time, or one microsecond after the previous entry when that
//! is later (so the merged times strictly increase and are never before
//! an event's own).
//!
//! A position in a merged log is the same on every server, and survives a
//! partition changing writers (its events and their numbers stay in its
//! database; the mark says how far the log has read them) and partition 0
//! changing writers (the next sequencer starts from the marks and the log
//! the last one made durable).

use std::{sync::Arc, time::Duration};

use store::{Kv, MergedEvent, MergedLog};

use crate::Server;

/// How often the sequencer looks for new events, and a merged stream's
/// consumer at the end of the log for new entries.
pub(crate) const POLL: Duration = Duration::from_millis(50);

/// Entries read from a merged log at once.
pub(crate) const BATCH: usize = 1024;

/// Events taken from each partition per round.
const ROUND: usize = 1024;

/// Sequencer rounds between prunings of the merged logs (about a minute).
const PRUNE_EVERY: u64 = 1200;

const LOGS: [MergedLog; 2] = [MergedLog::Firehose, MergedLog::Stream];

/// Runs the sequencer while this process writes partition 0, until the
/// servers stop.
pub(crate) fn spawn_sequencer<K: Kv + 'static>(servers: &[Server<K>]) {
    let weak: Vec<_> = servers.iter().map(|s| Arc::downgrade(&s.app)).collect();
    tokio::spawn(async move {
        // Per log, `None`: not read since this process last became the writer.
        let mut marks: [Option<Vec<u64>>; 2] = [None, None];
        let mut rounds = 0u64;
        loop {
            tokio::time::sleep(POLL).await;
            let Some(apps) = weak
                .iter()
                .map(std::sync::Weak::upgrade)
                .collect::<Option<Vec<_>>>()
            else {
                return;
            };
            let closing = apps[0].closing.subscribe();
            if *closing.borrow() {
                return;
            }
            if !apps[0].roles.may_acknowledge() {
                marks = [None, None];
                continue;
            }
            let stores: Vec<_> = apps.iter().map(|a| Arc::clone(a.repos.store())).collect();
            drop(apps);
            for (log, marks) in LOGS.into_iter().zip(&mut marks) {
                if log == MergedLog::Stream && !stores[0].keeps_stream_events() {
                    continue;
                }
                if let Err(e) = sequence_round(log, &stores, marks).await {
                    if *closing.borrow() {
                        return;
                    }
                    tracing::warn!(?log, error = %e, "merged log: cannot sequence events; retrying");
                    *marks = None;
                }
            }
            rounds += 1;
            if rounds.is_multiple_of(PRUNE_EVERY) {
                for log in LOGS {
                    match prune(log, &stores).await {
                        Ok(0) => {}
                        Ok(n) => tracing::info!(
                            ?log,
                            entries = n,
                            "merged log: pruned entries past retention"
                        ),
                        Err(e) => tracing::warn!(?log, error = %e, "merged log: cannot prune"),
                    }
                }
            }
        }
    });
}

/// Partition `store`'s events in `log` after `after`: each one's commit
/// time (nanoseconds; `None` when it says none) and its place there.
async fn events_after<K: Kv>(
    log: MergedLog,
    store: &store::Store<K>,
    after: u64,
) -> Result<Vec<(Option<i128>, u64)>, store::Error> {
    Ok(match log {
        MergedLog::Firehose => store
            .events(after, ROUND)
            .await?
            .into_iter()
            .map(|(seq, stored)| {
                let time = repo::stored_event_time(&stored)
                    .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                    .map(jiff::Timestamp::as_nanosecond);
                (time, seq)
            })
            .collect(),
        MergedLog::Stream => store
            .stream_events(after, ROUND)
            .await?
            .into_iter()
            .map(|(time_us, _)| (Some(i128::from(time_us) * 1000), time_us))
            .collect(),
    })
}

/// Whether partition `store` still keeps its event at `place` in `log`.
async fn kept<K: Kv>(
    log: MergedLog,
    store: &store::Store<K>,
    place: u64,
) -> Result<bool, store::Error> {
    Ok(look_up(log, store, place).await?.is_some())
}

/// Appends one round of every partition's new events to `log`: how many.
async fn sequence_round<K: Kv>(
    log: MergedLog,
    stores: &[Arc<store::Store<K>>],
    marks: &mut Option<Vec<u64>>,
) -> Result<usize, store::Error> {
    let head = &stores[0];
    let known = match marks {
        Some(known) => known,
        None => {
            let mut read = vec![0; stores.len()];
            for (p, last) in head.merge_marks(log).await? {
                if let Some(slot) = read.get_mut(usize::try_from(p).unwrap_or(usize::MAX)) {
                    *slot = last;
                }
            }
            marks.insert(read)
        }
    };
    let mut round = Vec::new();
    for (p, store) in stores.iter().enumerate() {
        // A partition's events keep their order whatever their clock said:
        // each sorts at the latest time of its partition's events so far.
        let mut latest = i128::MIN;
        for (time, place) in events_after(log, store, known[p]).await? {
            latest = latest.max(time.unwrap_or(latest));
            round.push((latest, u32::try_from(p).unwrap_or(u32::MAX), place));
        }
    }
    if round.is_empty() {
        return Ok(0);
    }
    round.sort_unstable();
    let mut last = head.newest_merged_event(log).await?.unwrap_or(0);
    let mut moved = known.clone();
    let entries: Vec<MergedEvent> = round
        .iter()
        .map(|&(_, partition, event)| {
            last = match log {
                MergedLog::Firehose => last + 1,
                MergedLog::Stream => event.max(last + 1),
            };
            let slot = &mut moved[usize::try_from(partition).unwrap_or(0)];
            *slot = (*slot).max(event);
            MergedEvent {
                seq: last,
                partition,
                event,
            }
        })
        .collect();
    let changed: Vec<(u32, u64)> = moved
        .iter()
        .enumerate()
        .filter(|(p, last)| known[*p] != **last)
        .map(|(p, last)| (u32::try_from(p).unwrap_or(u32::MAX), *last))
        .collect();
    head.append_merged_events(log, &entries, &changed).await?;
    *known = moved;
    Ok(entries.len())
}

/// Deletes `log`'s oldest entries whose events their partitions no longer
/// keep (each partition prunes its own events by the firehose's
/// retention): how many.
async fn prune<K: Kv>(
    log: MergedLog,
    stores: &[Arc<store::Store<K>>],
) -> Result<u64, store::Error> {
    let head = &stores[0];
    let mut gone_through = None;
    let mut after = 0;
    'scan: loop {
        let entries = head.merged_events(log, after, BATCH).await?;
        for entry in &entries {
            let Some(store) = stores.get(usize::try_from(entry.partition).unwrap_or(usize::MAX))
            else {
                break 'scan;
            };
            if kept(log, store, entry.event).await? {
                break 'scan;
            }
            gone_through = Some(entry.seq);
        }
        match entries.last() {
            Some(last) if entries.len() == BATCH => after = last.seq,
            _ => break,
        }
    }
    match gone_through {
        Some(through) => head.delete_merged_events_through(log, through).await,
        None => Ok(0),
    }
}

/// A merged log's entry as this process finds it in its partition.
pub(crate) enum Entry {
    /// The event's stored bytes.
    Event(bytes::Bytes),
    /// Its partition no longer keeps it (past retention): skip it.
    Pruned,
    /// This process's replica of the partition has not seen it yet (the
    /// sequencer read it elsewhere): wait for it.
    NotYet,
}

/// Reads `entry`'s event from its partition's `store`.
///
/// A replica's view of its partition only moves forward, and may move
/// between any two reads: "gone" is decided only by a lookup made after
/// the partition's newest event was seen at or past the entry's, so an
/// event that arrives between the first lookup and that read is found, not
/// skipped.
pub(crate) async fn read_entry<K: Kv>(
    log: MergedLog,
    store: &store::Store<K>,
    entry: &MergedEvent,
) -> Result<Entry, store::Error> {
    if let Some(bytes) = look_up(log, store, entry.event).await? {
        return Ok(Entry::Event(bytes));
    }
    // Not there: not yet seen here, or gone. Only then the newest is read.
    let newest = match log {
        MergedLog::Firehose => store.newest_event().await?,
        MergedLog::Stream => store.newest_stream_time().await?,
    };
    if newest.unwrap_or(0) < entry.event {
        return Ok(Entry::NotYet);
    }
    Ok(match look_up(log, store, entry.event).await? {
        Some(bytes) => Entry::Event(bytes),
        None => Entry::Pruned,
    })
}

/// The event at `place` in partition `store`'s `log`, if it keeps it.
async fn look_up<K: Kv>(
    log: MergedLog,
    store: &store::Store<K>,
    place: u64,
) -> Result<Option<bytes::Bytes>, store::Error> {
    let after = place.saturating_sub(1);
    let found = match log {
        MergedLog::Firehose => store.events(after, 1).await?.into_iter().next(),
        MergedLog::Stream => store.stream_events(after, 1).await?.into_iter().next(),
    };
    Ok(found.and_then(|(at, bytes)| (at == place).then_some(bytes)))
}
