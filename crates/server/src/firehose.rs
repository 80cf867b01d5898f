//! `com.atproto.sync.subscribeRepos`: the event stream of every commit.
//!
//! Events are stored with their commits under server-wide sequence numbers
//! (`store::Store::events`). One publisher task reads the durable events in
//! order, as soon as a commit is acknowledged (and every 100 ms, for
//! commits another process made, such as a replica's writer), frames each
//! once and broadcasts it. A connection replays from the store up to the
//! present, then follows the broadcast; one that falls more than the
//! broadcast's capacity behind gets `ConsumerTooSlow` and is closed (it can
//! resume from its cursor): writers never wait for consumers.

use std::{sync::Arc, time::Duration};

use axum::{
    extract::{
        Query, State,
        ws::{Message, WebSocket, WebSocketUpgrade},
    },
    http::HeaderMap,
    response::Response,
};
use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use store::Kv;
use tokio::sync::{Notify, broadcast};

use crate::{App, error::XrpcError};

/// Events a connection may fall behind the newest before it is closed.
pub(crate) const CONSUMER_BUFFER_EVENTS: usize = 4096;
/// Events read from the store per batch (replay and publishing).
const BATCH: usize = 1024;
/// Events framed at once (each reads its blocks from the store).
const FRAMING_AT_ONCE: usize = 16;
/// Frames written to a connection before it is flushed.
const FLUSH_EVERY: usize = 64;
/// How often the publisher looks for events nobody told it about.
const POLL: Duration = Duration::from_millis(100);

/// How long events are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retention {
    /// The newest this many events.
    Count(u64),
    /// Events younger than this.
    Age(Duration),
}

impl std::str::FromStr for Retention {
    type Err = String;

    /// `100000` (events) or an age: `30m`, `72h`, `7d`.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let bad =
            || format!("{s:?} is neither a number of events (100000) nor an age (30m, 72h, 7d)");
        if let Ok(n) = s.parse::<u64>() {
            return Ok(Self::Count(n));
        }
        let (number, unit) = s.split_at(s.len().saturating_sub(1));
        let n: u64 = number.parse().map_err(|_| bad())?;
        let secs = match unit {
            "s" => n,
            "m" => n * 60,
            "h" => n * 3600,
            "d" => n * 86_400,
            _ => return Err(bad()),
        };
        Ok(Self::Age(Duration::from_secs(secs)))
    }
}

/// A framed event.
#[derive(Debug)]
pub(crate) struct Framed {
    seq: u64,
    /// Shared by every connection that sends it.
    frame: bytes::Bytes,
}

/// The firehose's shared state.
pub(crate) struct Firehose {
    live: broadcast::Sender<Arc<Framed>>,
    /// Woken when a commit is acknowledged.
    commits: Arc<Notify>,
    /// Whether the publisher runs (started by the first subscriber).
    publishing: std::sync::atomic::AtomicBool,
}

impl Firehose {
    pub(crate) fn new() -> Self {
        Self {
            live: broadcast::channel(CONSUMER_BUFFER_EVENTS).0,
            commits: Arc::new(Notify::new()),
            publishing: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// What tells the publisher that a commit is durable.
    pub(crate) fn notifier(&self) -> Arc<Notify> {
        Arc::clone(&self.commits)
    }
}

/// Publishes durable events in order, from the first subscription until
/// the server is dropped.
fn start_publisher<K: Kv + 'static>(app: &Arc<App<K>>) {
    if app
        .firehose
        .publishing
        .swap(true, std::sync::atomic::Ordering::AcqRel)
    {
        return;
    }
    let weak = Arc::downgrade(app);
    let commits = app.firehose.notifier();
    let store = Arc::clone(app.repos.store());
    let anchors = Arc::new(store::AnchorMemo::default());
    tokio::spawn(async move {
        let mut last = loop {
            match store.newest_event().await {
                Ok(seq) => break seq.unwrap_or(0),
                Err(e) => {
                    tracing::warn!(error = %e, "firehose: cannot read the newest event; retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        };
        loop {
            tokio::select! {
                () = commits.notified() => {}
                () = tokio::time::sleep(POLL) => {}
            }
            let Some(app) = weak.upgrade() else {
                return;
            };
            loop {
                let events = match store.events(last, BATCH).await {
                    Ok(events) => events,
                    Err(e) => {
                        tracing::warn!(error = %e, "firehose: cannot read events");
                        break;
                    }
                };
                let n = events.len();
                let mut frames = framed(&store, &anchors, events);
                let mut failed = false;
                while let Some((seq, frame)) = frames.next().await {
                    match frame {
                        Ok(frame) => {
                            // No receiver is not an error.
                            let frame = bytes::Bytes::from(frame);
                            let _ = app.firehose.live.send(Arc::new(Framed { seq, frame }));
                        }
                        Err(repo::Error::InvalidRecord(e)) => {
                            tracing::error!(seq, error = %e, "firehose: skipping a malformed event");
                        }
                        Err(e) => {
                            // Tried again at the next poll: never skipped.
                            tracing::warn!(seq, error = %e, "firehose: cannot frame an event");
                            failed = true;
                            break;
                        }
                    }
                    last = seq;
                }
                if failed || n < BATCH {
                    break;
                }
            }
        }
    });
}

/// Deletes events outside `retention` every minute, until the server is
/// dropped.
pub(crate) fn spawn_pruner<K: Kv + 'static>(app: &Arc<App<K>>, retention: Retention) {
    let weak = Arc::downgrade(app);
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(60)).await;
            let Some(app) = weak.upgrade() else {
                return;
            };
            let now = rkey::Clock::now_micros(&rkey::SystemClock);
            match prune(app.repos.store(), retention, now).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(events = n, "firehose: deleted events past retention"),
                Err(e) => tracing::warn!(error = %e, "firehose: cannot delete old events"),
            }
        }
    });
}

/// Deletes the events `retention` does not keep, as of `now_micros`;
/// returns how many.
///
/// # Errors
///
/// A storage error.
pub async fn prune<K: Kv>(
    store: &store::Store<K>,
    retention: Retention,
    now_micros: u64,
) -> std::result::Result<u64, store::Error> {
    let Some(newest) = store.newest_event().await? else {
        return Ok(0);
    };
    let through = match retention {
        Retention::Count(n) => newest.saturating_sub(n),
        Retention::Age(age) => {
            let cutoff = now_micros.saturating_sub(u64::try_from(age.as_micros()).unwrap_or(0));
            let mut through = 0;
            'scan: loop {
                let events = store.events(through, BATCH).await?;
                if events.is_empty() {
                    break;
                }
                for (seq, stored) in events {
                    let young = repo::stored_event_time(&stored)
                        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                        .is_none_or(|t| u64::try_from(t.as_microsecond()).unwrap_or(0) >= cutoff);
                    if young {
                        break 'scan;
                    }
                    through = seq;
                }
            }
            through
        }
    };
    if through == 0 {
        return Ok(0);
    }
    store.delete_events_through(through).await
}

#[derive(Deserialize)]
pub(crate) struct SubscribeParams {
    cursor: Option<String>,
}

/// `GET /xrpc/com.atproto.sync.subscribeRepos[?cursor=N]`.
pub(crate) async fn subscribe_repos<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    Query(params): Query<SubscribeParams>,
    ws: WebSocketUpgrade,
) -> std::result::Result<Response, XrpcError> {
    app.authorize_read(&headers)?;
    start_publisher(&app);
    let cursor = params
        .cursor
        .map(|c| {
            c.parse::<u64>()
                .map_err(|_| XrpcError::invalid(format!("cursor {c:?} is not a sequence number")))
        })
        .transpose()?;
    Ok(ws.on_upgrade(move |socket| async move {
        if let Err(e) = stream(app, socket, cursor).await {
            tracing::debug!(error = %e, "firehose connection ended");
        }
    }))
}

async fn close(socket: &mut WebSocket) -> std::result::Result<(), axum::Error> {
    socket.send(Message::Close(None)).await
}

async fn send(
    socket: &mut WebSocket,
    frame: impl Into<bytes::Bytes>,
) -> std::result::Result<(), axum::Error> {
    socket.send(Message::Binary(frame.into())).await
}

async fn stream<K: Kv + 'static>(
    app: Arc<App<K>>,
    mut socket: WebSocket,
    cursor: Option<u64>,
) -> std::result::Result<(), axum::Error> {
    let store = app.repos.store();
    let failed = |e: store::Error| axum::Error::new(e);
    let mut last = match cursor {
        // No cursor: from now on.
        None => store.newest_event().await.map_err(failed)?.unwrap_or(0),
        Some(cursor) => {
            let newest = store.newest_event().await.map_err(failed)?.unwrap_or(0);
            if cursor > newest {
                let message = format!("cursor {cursor} is ahead of the newest event ({newest})");
                send(&mut socket, repo::error_frame("FutureCursor", &message)).await?;
                return close(&mut socket).await;
            }
            let oldest = store.events(0, 1).await.map_err(failed)?;
            if let Some((oldest, _)) = oldest.first()
                && cursor + 1 < *oldest
            {
                let message =
                    format!("events before {oldest} are no longer kept; replaying from {oldest}");
                send(&mut socket, repo::info_frame("OutdatedCursor", &message)).await?;
            }
            cursor
        }
    };
    // Replay what the store holds; subscribe; read once more (events
    // published before the subscription are in the store, later ones come
    // through it); then follow the broadcast.
    replay(store, &mut socket, &mut last).await?;
    let mut live = app.firehose.live.subscribe();
    replay(store, &mut socket, &mut last).await?;
    loop {
        tokio::select! {
            event = live.recv() => {
                // This event and every one already waiting go out in one
                // write: under load, a write per frame per connection would
                // cost more than the frames.
                let mut next = event.map_err(|e| match e {
                    broadcast::error::RecvError::Lagged(_) => broadcast::error::TryRecvError::Lagged(0),
                    broadcast::error::RecvError::Closed => broadcast::error::TryRecvError::Closed,
                });
                let mut fed = 0;
                loop {
                    match next {
                        Ok(event) => {
                            if event.seq > last {
                                socket.feed(Message::Binary(event.frame.clone())).await?;
                                last = event.seq;
                                fed += 1;
                            }
                        }
                        Err(broadcast::error::TryRecvError::Empty) => break,
                        Err(broadcast::error::TryRecvError::Lagged(_)) => {
                            socket.flush().await?;
                            let message = format!(
                                "this connection fell more than {CONSUMER_BUFFER_EVENTS} events \
                                 behind; reconnect with cursor={last} to resume"
                            );
                            send(&mut socket, repo::error_frame("ConsumerTooSlow", &message))
                                .await?;
                            return close(&mut socket).await;
                        }
                        Err(broadcast::error::TryRecvError::Closed) => {
                            socket.flush().await?;
                            return close(&mut socket).await;
                        }
                    }
                    if fed >= FLUSH_EVERY {
                        socket.flush().await?;
                        fed = 0;
                    }
                    next = live.try_recv();
                }
                socket.flush().await?;
            },
            incoming = socket.recv() => match incoming {
                // A consumer sends nothing but pings and its close.
                Some(Ok(Message::Close(_)) | Err(_)) | None => return Ok(()),
                Some(Ok(_)) => {}
            },
        }
    }
}

/// The frames of stored `events`, in order: several framed at once, on
/// the runtime's threads (each reads its blocks back from the store).
fn framed<K: Kv + 'static>(
    store: &Arc<store::Store<K>>,
    anchors: &Arc<store::AnchorMemo>,
    events: Vec<(u64, bytes::Bytes)>,
) -> impl futures_util::Stream<Item = (u64, std::result::Result<Vec<u8>, repo::Error>)> + 'static {
    let (store, anchors) = (Arc::clone(store), Arc::clone(anchors));
    futures_util::stream::iter(events)
        .map(move |(seq, stored)| {
            let (store, anchors) = (Arc::clone(&store), Arc::clone(&anchors));
            let framing =
                tokio::spawn(
                    async move { repo::frame_event(&store, &anchors, seq, &stored).await },
                );
            async move {
                let frame = match framing.await {
                    Ok(frame) => frame,
                    Err(e) => Err(repo::Error::Io(std::io::Error::other(format!(
                        "framing event {seq} failed: {e}"
                    )))),
                };
                (seq, frame)
            }
        })
        .buffered(FRAMING_AT_ONCE)
}

/// Sends every stored event after `last`, moving `last` on.
async fn replay<K: Kv + 'static>(
    store: &Arc<store::Store<K>>,
    socket: &mut WebSocket,
    last: &mut u64,
) -> std::result::Result<(), axum::Error> {
    let anchors = Arc::new(store::AnchorMemo::default());
    loop {
        let events = store.events(*last, BATCH).await.map_err(axum::Error::new)?;
        let done = events.len() < BATCH;
        let mut frames = framed(store, &anchors, events);
        let mut sent = 0;
        while let Some((seq, frame)) = frames.next().await {
            match frame {
                Ok(frame) => socket.feed(Message::Binary(frame.into())).await?,
                Err(repo::Error::InvalidRecord(e)) => {
                    tracing::error!(seq, error = %e, "firehose: skipping a malformed event");
                }
                // The connection ends; the consumer resumes from its cursor.
                Err(e) => return Err(axum::Error::new(e)),
            }
            *last = seq;
            sent += 1;
            if sent % FLUSH_EVERY == 0 {
                socket.flush().await?;
            }
        }
        socket.flush().await?;
        if done {
            return Ok(());
        }
    }
}
