//! `com.atproto.sync.subscribeRepos`: the event stream of every commit.
//!
//! Events are stored with their commits under server-wide sequence numbers
//! (`store::Store::events`). One publisher task reads the durable events in
//! order, as soon as a commit is acknowledged (and every 100 ms, for
//! commits another process made, such as a replica's writer), frames each
//! once and keeps the newest frames in memory ([`Live`]: at most
//! `--firehose-buffer-bytes` and 4,096 frames, shared by every
//! connection). A connection replays from the store up to the present,
//! then sends the live frames; one whose next frame has left memory gets
//! `ConsumerTooSlow` and is closed (it can resume from its cursor):
//! writers never wait for consumers, and a consumer that stops reading
//! holds at most one batch of frames (about 1 MiB) of its own.
//!
//! The frames in memory and the subscriber limit live in `crate::frames`.

use std::{sync::Arc, time::Duration};

use axum::{
    extract::{
        Query, State,
        rejection::QueryRejection,
        ws::{Message, WebSocket, WebSocketUpgrade, rejection::WebSocketUpgradeRejection},
    },
    http::HeaderMap,
    response::Response,
};
use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use store::Kv;

use crate::frames::{Framed, Live, Retention, TooSlow};
use crate::{app::App, error::XrpcError, publisher};

/// A connection's frames written before it flushes them: at most this
/// many bytes (and at least one frame).
const CONSUMER_BATCH_BYTES: usize = 1 << 20;

/// Events read from the store per batch (replay and publishing).
const BATCH: usize = 1024;

/// Events framed at once (each reads its blocks from the store).
const FRAMING_AT_ONCE: usize = 16;

/// Frames written to a connection before it is flushed.
const FLUSH_EVERY: usize = 64;

/// The firehose's durable events, framed as they are published.
struct FirehoseEvents<K> {
    store: Arc<store::Store<K>>,
    anchors: Arc<store::AnchorMemo>,
}

impl<K: Kv + 'static> publisher::Events for FirehoseEvents<K> {
    const NAME: &'static str = "firehose";

    async fn newest(&self) -> Result<Option<u64>, store::Error> {
        self.store.newest_event().await
    }

    async fn publish_after(&self, live: &Live, last: &mut u64) -> bool {
        let events = match self.store.events(*last, BATCH).await {
            Ok(events) => events,
            Err(e) => {
                tracing::warn!(error = %e, "firehose: cannot read events");
                return false;
            }
        };
        let whole_batch = events.len() == BATCH;
        let mut frames = framed(&self.store, &self.anchors, events);
        while let Some((seq, frame)) = frames.next().await {
            match frame {
                Ok(frame) => live.publish(Framed {
                    seq,
                    frame: bytes::Bytes::from(frame),
                }),
                Err(repo::Error::InvalidRecord(e)) => {
                    tracing::error!(seq, error = %e, "firehose: skipping a malformed event");
                }
                Err(e) => {
                    tracing::warn!(seq, error = %e, "firehose: cannot frame an event");
                    return false;
                }
            }
            *last = seq;
        }
        whole_batch
    }
}

/// Publishes durable events in order, from the first subscription until
/// the server closes its streams or is dropped.
fn start_publisher<K: Kv + 'static>(app: &Arc<App<K>>) {
    publisher::start(
        app,
        &app.firehose.publishing,
        |app| &app.firehose.live,
        app.firehose.notifier(),
        app.closing.subscribe(),
        FirehoseEvents {
            store: Arc::clone(app.repos.store()),
            anchors: Arc::new(store::AnchorMemo::default()),
        },
    );
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
            // A partition this process no longer writes is another's to prune.
            if !app.roles.may_acknowledge() {
                continue;
            }
            let now = rkey::Clock::now_micros(&rkey::SystemClock);
            match prune(app.repos.store(), retention, now).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(events = n, "firehose: deleted events past retention"),
                Err(e) => tracing::warn!(error = %e, "firehose: cannot delete old events"),
            }
        }
    });
}

/// Deletes the events `retention` does not keep, as of `now_micros`, and
/// the stream's events older than the oldest firehose event kept; returns
/// how many firehose events went.
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
    let deleted = if through == 0 {
        0
    } else {
        store.delete_events_through(through).await?
    };
    // The stream's events follow the firehose's: those older than the
    // oldest firehose event kept (or than the age) go.
    let stream_cutoff = match retention {
        Retention::Age(age) => {
            Some(now_micros.saturating_sub(u64::try_from(age.as_micros()).unwrap_or(0)))
        }
        Retention::Count(_) => store.events(0, 1).await?.first().and_then(|(_, stored)| {
            repo::stored_event_time(stored)
                .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                .and_then(|t| u64::try_from(t.as_microsecond()).ok())
        }),
    };
    if let Some(cutoff) = stream_cutoff.filter(|c| *c > 0) {
        store.delete_stream_events_through(cutoff - 1).await?;
    }
    Ok(deleted)
}

#[derive(Deserialize)]
pub(crate) struct SubscribeParams {
    cursor: Option<String>,
}

/// `GET /xrpc/com.atproto.sync.subscribeRepos[?cursor=N]`.
pub(crate) async fn subscribe_repos<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<SubscribeParams>, QueryRejection>,
    connection: Option<axum::Extension<crate::connections::ConnectionSlot>>,
    client: Option<axum::Extension<crate::connections::ClientIp>>,
    ws: std::result::Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> std::result::Result<Response, XrpcError> {
    app.authorize_read(&headers).await?;
    let params = crate::handlers::request::query(params)?;
    let ws = ws.map_err(not_a_websocket)?;
    // Refused before the upgrade: a subscriber holds a connection for as
    // long as it likes, and the others must find room.
    let admitted = app.firehose.admit(
        client.map(|axum::Extension(crate::connections::ClientIp(ip))| ip),
        connection.map(|axum::Extension(slot)| slot),
    )?;
    start_publisher(&app);
    let cursor = parse_cursor(params.cursor.as_deref())?;
    // "From now on" is fixed before the handshake answers: a commit the
    // client makes once connected is always sent to it.
    let now = app
        .repos
        .store()
        .newest_event()
        .await
        .map_err(|e| XrpcError::from(repo::Error::from(e)))?
        .unwrap_or(0);
    Ok(
        crate::frames::stream_socket(ws).on_upgrade(move |socket| async move {
            // Held until the socket closes: the connection counts against
            // --max-connections, the subscriber against --max-subscribers.
            let _admitted = admitted;
            if let Err(e) = stream(app, socket, cursor, now).await {
                tracing::debug!(error = %e, "firehose connection ended");
            }
        }),
    )
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
    now: u64,
) -> std::result::Result<(), axum::Error> {
    let store = app.repos.store();
    let failed = |e: store::Error| axum::Error::new(e);
    let mut last = match cursor {
        // No cursor: from the newest event when the request came.
        None => now,
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
    // Replay what the store holds, until the frames in memory continue it
    // (a frame published meanwhile is in the store); then follow them.
    let live = &app.firehose.live;
    replay(store, &mut socket, &mut last).await?;
    while live.dropped_through() > last {
        replay(store, &mut socket, &mut last).await?;
    }
    let mut newest = live.newest.subscribe();
    let mut closing = app.closing.subscribe();
    loop {
        // Every frame after `last`, a batch to a write: under load, a
        // write per frame per connection would cost more than the frames.
        loop {
            let batch = match live.after(last, CONSUMER_BATCH_BYTES) {
                Ok(batch) => batch,
                Err(TooSlow) => {
                    let message = format!(
                        "this connection fell behind the events the server keeps in memory \
                         (serve --firehose-buffer-bytes); reconnect with cursor={last} to resume"
                    );
                    send(&mut socket, repo::error_frame("ConsumerTooSlow", &message)).await?;
                    return close(&mut socket).await;
                }
            };
            if batch.is_empty() {
                break;
            }
            for event in batch {
                socket.feed(Message::Binary(event.frame.clone())).await?;
                last = event.seq;
            }
            socket.flush().await?;
        }
        tokio::select! {
            changed = newest.changed() => if changed.is_err() {
                return close(&mut socket).await;
            },
            _ = async { closing.wait_for(|closing| *closing).await.is_ok() } => {
                return socket.send(crate::jetstream::going_away()).await;
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
        let (mut sent, mut fed_bytes) = (0, 0);
        while let Some((seq, frame)) = frames.next().await {
            match frame {
                Ok(frame) => {
                    fed_bytes += frame.len();
                    socket.feed(Message::Binary(frame.into())).await?;
                }
                Err(repo::Error::InvalidRecord(e)) => {
                    tracing::error!(seq, error = %e, "firehose: skipping a malformed event");
                }
                // The connection ends; the consumer resumes from its cursor.
                Err(e) => return Err(axum::Error::new(e)),
            }
            *last = seq;
            sent += 1;
            if sent % FLUSH_EVERY == 0 || fed_bytes >= CONSUMER_BATCH_BYTES {
                socket.flush().await?;
                fed_bytes = 0;
            }
        }
        socket.flush().await?;
        if done {
            return Ok(());
        }
    }
}

/// A `subscribeRepos` request that is no WebSocket upgrade, answered as
/// every XRPC error is (JSON), not as axum's plain text.
pub(crate) fn not_a_websocket(rejection: WebSocketUpgradeRejection) -> XrpcError {
    XrpcError::new(
        rejection.status(),
        "InvalidRequest",
        format!(
            "subscribeRepos is a WebSocket stream: connect with a WebSocket client \
             (ws://…/xrpc/com.atproto.sync.subscribeRepos); {}",
            rejection.body_text()
        ),
    )
}

/// A `subscribeRepos` cursor: a sequence number.
pub(crate) fn parse_cursor(cursor: Option<&str>) -> std::result::Result<Option<u64>, XrpcError> {
    cursor
        .map(|c| {
            c.parse::<u64>()
                .map_err(|_| XrpcError::invalid(format!("cursor {c:?} is not a sequence number")))
        })
        .transpose()
}
