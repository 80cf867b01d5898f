//! One `subscribeRepos` stream over every partition of a partitioned
//! store.
//!
//! Each partition keeps its own firehose events under its own sequence
//! numbers. The process writing partition 0 runs the **sequencer**: it
//! reads every partition's durable events after the mark it has reached in
//! each, orders a round of them by their commit time (ties by partition,
//! then by each partition's order), and appends them to the merged event
//! log in partition 0 (`store::MergedEvent`) with the marks they move, in
//! one durable write. The merged stream's sequence number (its cursor, an
//! integer as AT Protocol has it) is an entry's place in that log: the
//! same whichever process serves the stream, and kept across a partition
//! changing writers (its events and their sequence numbers stay in its
//! database, and the mark says how far the log has read them) or
//! partition 0 changing writers (the next sequencer starts from the marks
//! the last one wrote). So a consumer resuming from its cursor on any
//! server neither skips nor repeats an event.
//!
//! Any server streams the merged log: it reads the log (partition 0, as
//! writer or replica) and each entry's event from its partition, and
//! frames it under the merged sequence number.

use std::{sync::Arc, time::Duration};

use axum::{
    extract::ws::{Message, WebSocket, WebSocketUpgrade},
    http::request::Parts,
    response::{IntoResponse, Response},
};
use futures_util::SinkExt;
use store::{Kv, MergedEvent};

use crate::{Server, XrpcError};

/// How often the sequencer looks for new events, and a consumer at the
/// end of the merged log for new entries.
const POLL: Duration = Duration::from_millis(50);

/// Events taken from each partition per round.
const ROUND: usize = 1024;

/// Entries read from the merged log at once.
const BATCH: usize = 1024;

/// Runs the sequencer while this process writes partition 0, until the
/// servers are dropped.
pub(crate) fn spawn_sequencer<K: Kv + 'static>(servers: &[Server<K>]) {
    let weak: Vec<_> = servers.iter().map(|s| Arc::downgrade(&s.app)).collect();
    tokio::spawn(async move {
        // `None`: not read since this process last became the writer.
        let mut marks: Option<Vec<u64>> = None;
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
                marks = None;
                continue;
            }
            let stores: Vec<_> = apps.iter().map(|a| Arc::clone(a.repos.store())).collect();
            drop(apps);
            if let Err(e) = sequence_round(&stores, &mut marks).await {
                if *closing.borrow() {
                    return;
                }
                tracing::warn!(error = %e, "merged firehose: cannot sequence events; retrying");
                marks = None;
            }
            rounds += 1;
            if rounds.is_multiple_of(PRUNE_EVERY) {
                match prune(&stores).await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(
                        entries = n,
                        "merged firehose: pruned entries past retention"
                    ),
                    Err(e) => tracing::warn!(error = %e, "merged firehose: cannot prune"),
                }
            }
        }
    });
}

/// Appends one round of every partition's new events to the merged log:
/// how many.
async fn sequence_round<K: Kv>(
    stores: &[Arc<store::Store<K>>],
    marks: &mut Option<Vec<u64>>,
) -> Result<usize, store::Error> {
    let head = &stores[0];
    let known = match marks {
        Some(known) => known,
        None => {
            let mut read = vec![0; stores.len()];
            for (p, last) in head.merge_marks().await? {
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
        for (seq, stored) in store.events(known[p], ROUND).await? {
            let time = repo::stored_event_time(&stored)
                .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                .map_or(latest, |t| t.as_nanosecond());
            latest = latest.max(time);
            round.push((latest, u32::try_from(p).unwrap_or(u32::MAX), seq));
        }
    }
    if round.is_empty() {
        return Ok(0);
    }
    round.sort_unstable();
    let mut next = head.newest_merged_event().await?.unwrap_or(0);
    let mut moved = known.clone();
    let entries: Vec<MergedEvent> = round
        .iter()
        .map(|&(_, partition, event)| {
            next += 1;
            let slot = &mut moved[usize::try_from(partition).unwrap_or(0)];
            *slot = (*slot).max(event);
            MergedEvent {
                seq: next,
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
    head.append_merged_events(&entries, &changed).await?;
    *known = moved;
    Ok(entries.len())
}

/// Sequencer rounds between prunings of the merged log (about a minute).
const PRUNE_EVERY: u64 = 1200;

/// Deletes the merged log's oldest entries whose events their partitions
/// no longer keep (each partition prunes its own events by the firehose's
/// retention): how many.
async fn prune<K: Kv>(stores: &[Arc<store::Store<K>>]) -> Result<u64, store::Error> {
    let head = &stores[0];
    let mut gone_through = None;
    let mut after = 0;
    'scan: loop {
        let entries = head.merged_events(after, BATCH).await?;
        for entry in &entries {
            let Some(store) = stores.get(usize::try_from(entry.partition).unwrap_or(usize::MAX))
            else {
                break 'scan;
            };
            let kept = store
                .events(entry.event.saturating_sub(1), 1)
                .await?
                .first()
                .is_some_and(|(seq, _)| *seq == entry.event);
            if kept {
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
        Some(through) => head.delete_merged_events_through(through).await,
        None => Ok(0),
    }
}

/// `subscribeRepos` over the merged log, answered by the front.
pub(crate) async fn subscribe<K: Kv + 'static>(
    servers: Vec<Server<K>>,
    mut parts: Parts,
) -> Response {
    match upgrade(servers, &mut parts).await {
        Ok(response) => response,
        Err(e) => e.into_response(),
    }
}

async fn upgrade<K: Kv + 'static>(
    servers: Vec<Server<K>>,
    parts: &mut Parts,
) -> Result<Response, XrpcError> {
    use axum::extract::FromRequestParts as _;
    let head = Arc::clone(&servers[0].app);
    head.authorize_read(&parts.headers).await?;
    let cursor = parts
        .uri
        .query()
        .and_then(|q| {
            form_urlencoded::parse(q.as_bytes())
                .find(|(k, _)| k == "cursor")
                .map(|(_, v)| v.into_owned())
        })
        .map(|c| {
            c.parse::<u64>()
                .map_err(|_| XrpcError::invalid(format!("cursor {c:?} is not a sequence number")))
        })
        .transpose()?;
    let ws = WebSocketUpgrade::from_request_parts(parts, &())
        .await
        .map_err(|rejection| {
            XrpcError::new(
                rejection.status(),
                "InvalidRequest",
                format!(
                    "subscribeRepos is a WebSocket stream: connect with a WebSocket client; {}",
                    rejection.body_text()
                ),
            )
        })?;
    let connection = parts
        .extensions
        .get::<crate::connections::ConnectionSlot>()
        .cloned();
    let client = parts
        .extensions
        .get::<crate::connections::ClientIp>()
        .map(|crate::connections::ClientIp(ip)| *ip);
    let admitted = head.firehose.admit(client, connection)?;
    // "From now on" is fixed before the handshake answers.
    let now = newest(&servers)
        .await
        .map_err(|e| XrpcError::from(repo::Error::from(e)))?;
    Ok(ws.on_upgrade(move |socket| async move {
        let _admitted = admitted;
        if let Err(e) = stream(servers, socket, cursor, now).await {
            tracing::debug!(error = %e, "merged firehose connection ended");
        }
    }))
}

/// The merged log's newest durable entry (0: none yet).
async fn newest<K: Kv>(servers: &[Server<K>]) -> Result<u64, store::Error> {
    Ok(servers[0]
        .app
        .repos
        .store()
        .newest_merged_event()
        .await?
        .unwrap_or(0))
}

async fn stream<K: Kv + 'static>(
    servers: Vec<Server<K>>,
    mut socket: WebSocket,
    cursor: Option<u64>,
    now: u64,
) -> Result<(), axum::Error> {
    let head = Arc::clone(servers[0].app.repos.store());
    let failed = axum::Error::new;
    let mut last = match cursor {
        None => now,
        Some(cursor) => {
            let newest = newest(&servers).await.map_err(failed)?;
            if cursor > newest {
                let message = format!("cursor {cursor} is ahead of the newest event ({newest})");
                socket
                    .send(Message::Binary(
                        repo::error_frame("FutureCursor", &message).into(),
                    ))
                    .await?;
                return socket.send(Message::Close(None)).await;
            }
            if let Some(oldest) = head.merged_events(0, 1).await.map_err(failed)?.first()
                && cursor + 1 < oldest.seq
            {
                let message = format!(
                    "events before {} are no longer kept; replaying from {}",
                    oldest.seq, oldest.seq
                );
                socket
                    .send(Message::Binary(
                        repo::info_frame("OutdatedCursor", &message).into(),
                    ))
                    .await?;
            }
            cursor
        }
    };
    let anchors: Vec<_> = servers
        .iter()
        .map(|_| store::AnchorMemo::default())
        .collect();
    let mut closing = servers[0].app.closing.subscribe();
    loop {
        let entries = head.merged_events(last, BATCH).await.map_err(failed)?;
        // Whether every entry read was sent (or was past retention).
        let mut caught_up = true;
        for entry in &entries {
            let p = usize::try_from(entry.partition).unwrap_or(usize::MAX);
            let Some(server) = servers.get(p) else {
                last = entry.seq;
                continue;
            };
            let store = server.app.repos.store();
            let stored = store
                .events(entry.event.saturating_sub(1), 1)
                .await
                .map_err(failed)?;
            match stored.first() {
                Some((seq, stored)) if *seq == entry.event => {
                    match repo::frame_event(store, &anchors[p], entry.seq, stored).await {
                        Ok(frame) => socket.feed(Message::Binary(frame.into())).await?,
                        Err(repo::Error::InvalidRecord(e)) => {
                            tracing::error!(seq = entry.seq, error = %e, "merged firehose: skipping a malformed event");
                        }
                        Err(e) => return Err(axum::Error::new(e)),
                    }
                }
                // This process's replica of the partition has not seen the
                // event yet (the sequencer read it elsewhere): wait for it.
                _ if store.newest_event().await.map_err(failed)?.unwrap_or(0) < entry.event => {
                    caught_up = false;
                    break;
                }
                // Pruned from its partition since: past retention.
                _ => {}
            }
            last = entry.seq;
        }
        socket.flush().await?;
        if caught_up && entries.len() == BATCH {
            continue;
        }
        tokio::select! {
            () = tokio::time::sleep(POLL) => {}
            _ = async { closing.wait_for(|closing| *closing).await.is_ok() } => {
                return socket.send(crate::jetstream::going_away()).await;
            },
            incoming = socket.recv() => match incoming {
                Some(Ok(Message::Close(_)) | Err(_)) | None => return Ok(()),
                Some(Ok(_)) => {}
            },
        }
    }
}
