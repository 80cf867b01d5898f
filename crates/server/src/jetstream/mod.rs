//! `GET /subscribe`: the Jetstream-compatible stream. One JSON event per
//! record operation (`repo`'s stream events, stored with each commit under
//! its time), filtered on the server by collection and DID, resumable from
//! a cursor in unix microseconds; compatible with Bluesky's Jetstream v1
//! clients.
//!
//! As the firehose: one publisher task reads the durable events in order
//! as commits are acknowledged (and every 100 ms) into the newest events
//! in memory, shared by every connection; a connection replays from the
//! store up to the present, then follows memory; one that falls behind
//! what memory holds is closed with a reason (it resumes from its cursor).
//! A connection holds at most one batch of events of its own.
//!
//! `filters` is what a connection asks for and the test of each event
//! against it; `shared` the state the server holds for all connections.

mod filters;
pub(crate) mod shared;

use std::{
    sync::{Arc, Weak},
    time::Duration,
};

use axum::{
    extract::{
        RawQuery, State,
        ws::{
            CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade,
            rejection::WebSocketUpgradeRejection,
        },
    },
    http::HeaderMap,
    response::Response,
};
use futures_util::SinkExt;
use store::Kv;

pub(crate) use filters::{Filters, Params};
use filters::{Shaped, options_update, params};
use shared::Pass;

use crate::frames::{Framed, Live, TooSlow};
use crate::{app::App, error::XrpcError, publisher};

/// Events read from the store per batch.
const BATCH: usize = 1024;

/// Bytes of events written to a connection before it is flushed.
pub(crate) const CONSUMER_BATCH_BYTES: usize = 1 << 20;

/// How long a connection woken by new events waits for more before it
/// reads them: one wake-up, one filter pass and one flush per few
/// commits instead of per commit (100 connections under a write load
/// otherwise wake 100 times per commit).
const GATHER: Duration = Duration::from_millis(2);

/// WebSocket close code for a request the server will not serve (policy).
const POLICY_VIOLATION: u16 = 1008;

/// The pass of `filters` (started now if none runs), or `None` for filters
/// that read the stream themselves ([`Filters::pass_key`]).
fn join_pass<K: Kv + 'static>(app: &Arc<App<K>>, filters: &Filters) -> Option<Arc<Pass>> {
    let key = filters.pass_key()?;
    let mut passes = app
        .stream
        .passes
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(pass) = passes.get(&key).and_then(Weak::upgrade) {
        return Some(pass);
    }
    passes.retain(|_, pass| pass.strong_count() > 0);
    let start = *app.stream.live.newest.borrow();
    let pass = Arc::new_cyclic(|me: &Weak<Pass>| Pass {
        live: Live::new(app.stream.buffer_bytes),
        start,
        task: tokio::spawn(run_pass(
            me.clone(),
            Arc::downgrade(app),
            filters.clone(),
            start,
        ))
        .abort_handle(),
    });
    passes.insert(key, Arc::downgrade(&pass));
    Some(pass)
}

/// Moves the events after `last` that `filters` let through into `pass`,
/// as the stream publishes them (from the store when they have left the
/// stream's memory), until the pass or the server is gone.
async fn run_pass<K: Kv + 'static>(
    pass: Weak<Pass>,
    app: Weak<App<K>>,
    filters: Filters,
    mut last: u64,
) {
    let Some(mut newest) = app.upgrade().map(|app| app.stream.live.newest.subscribe()) else {
        return;
    };
    loop {
        {
            let (Some(app), Some(pass)) = (app.upgrade(), pass.upgrade()) else {
                return;
            };
            loop {
                let events: Vec<(u64, bytes::Bytes)> = match app
                    .stream
                    .live
                    .after(last, CONSUMER_BATCH_BYTES)
                {
                    Ok(batch) => batch.iter().map(|f| (f.seq, f.frame.clone())).collect(),
                    Err(TooSlow) => match app.repos.store().stream_events(last, BATCH).await {
                        Ok(events) => events,
                        Err(e) => {
                            tracing::warn!(error = %e, "stream: a filtering pass cannot read events");
                            break;
                        }
                    },
                };
                if events.is_empty() {
                    break;
                }
                for (time, frame) in events {
                    if filters.passes(&frame) {
                        pass.live.publish(Framed { seq: time, frame });
                    }
                    last = time;
                }
            }
        }
        if newest.changed().await.is_err() {
            return;
        }
    }
}

/// The stream's durable events, stored as the frames they are sent as.
struct StreamEvents<K> {
    store: Arc<store::Store<K>>,
}

impl<K: Kv + 'static> publisher::Events for StreamEvents<K> {
    const NAME: &'static str = "stream";

    async fn newest(&self) -> Result<Option<u64>, store::Error> {
        self.store.newest_stream_time().await
    }

    async fn publish_after(&self, live: &Live, last: &mut u64) -> bool {
        let events = match self.store.stream_events(*last, BATCH).await {
            Ok(events) => events,
            Err(e) => {
                tracing::warn!(error = %e, "stream: cannot read events");
                return false;
            }
        };
        let whole_batch = events.len() == BATCH;
        for (time, frame) in events {
            live.publish(Framed { seq: time, frame });
            *last = time;
        }
        whole_batch
    }
}

/// Publishes durable stream events in order, from the first subscription
/// until the server closes its streams or is dropped.
fn start_publisher<K: Kv + 'static>(app: &Arc<App<K>>) {
    publisher::start(
        app,
        &app.stream.publishing,
        |app| &app.stream.live,
        app.stream.notifier(),
        app.closing.subscribe(),
        StreamEvents {
            store: Arc::clone(app.repos.store()),
        },
    );
}

/// `GET /subscribe`.
pub(crate) async fn subscribe<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    connection: Option<axum::Extension<crate::connections::ConnectionSlot>>,
    client: Option<axum::Extension<crate::connections::ClientIp>>,
    ws: std::result::Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> std::result::Result<Response, XrpcError> {
    app.authorize_read(&headers).await?;
    stream_events_kept(&app)?;
    let (params, filters, compress) = connection_options(&headers, query.as_deref())?;
    let ws = ws.map_err(not_a_websocket)?;
    // Counted with the firehose's subscribers (serve --max-subscribers,
    // --max-subscribers-per-ip).
    let admitted = app.firehose.admit(
        client.map(|axum::Extension(crate::connections::ClientIp(ip))| ip),
        connection.map(|axum::Extension(slot)| slot),
    )?;
    start_publisher(&app);
    // "Live" is fixed before the handshake answers: an event of a commit
    // the client makes once connected is always sent to it.
    let now = app
        .repos
        .store()
        .newest_stream_time()
        .await
        .map_err(|e| XrpcError::from(repo::Error::from(e)))?
        .unwrap_or(0);
    Ok(
        crate::frames::stream_socket(ws).on_upgrade(move |socket| async move {
            let _admitted = admitted;
            let sink = Sink { socket, compress };
            if let Err(e) = stream(app, sink, params, filters, now).await {
                tracing::debug!(error = %e, "stream connection ended");
            }
        }),
    )
}

/// Refuses a `/subscribe` of a server that keeps no stream events.
pub(crate) fn stream_events_kept<K: Kv>(app: &App<K>) -> std::result::Result<(), XrpcError> {
    if app.repos.store().keeps_stream_events() {
        return Ok(());
    }
    Err(XrpcError::new(
        axum::http::StatusCode::NOT_IMPLEMENTED,
        "StreamOff",
        "this server keeps no stream events (started with serve --stream off)",
    ))
}

/// What a `/subscribe` request asks for: its parameters, filters, and
/// whether it wants compressed events.
pub(crate) fn connection_options(
    headers: &HeaderMap,
    query: Option<&str>,
) -> std::result::Result<(Params, Filters, bool), XrpcError> {
    let params = params(query).map_err(XrpcError::invalid)?;
    let zstd_header = headers
        .get("socket-encoding")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("zstd"));
    let compress = params.compress || zstd_header;
    let filters = Filters::new(&params.wanted).map_err(XrpcError::invalid)?;
    Ok((params, filters, compress))
}

/// The answer to a `/subscribe` request that is no WebSocket upgrade.
pub(crate) fn not_a_websocket(rejection: WebSocketUpgradeRejection) -> XrpcError {
    XrpcError::new(
        rejection.status(),
        "InvalidRequest",
        format!(
            "/subscribe is a WebSocket stream: connect with a WebSocket client \
             (ws://…/subscribe); {}",
            rejection.body_text()
        ),
    )
}

/// With `requireHello`, waits for the client's first options update
/// (its filters from then on): `Some` when the connection must end instead.
pub(crate) async fn await_hello(
    sink: &mut Sink,
    params: &Params,
    filters: &mut Filters,
) -> Option<std::result::Result<(), axum::Error>> {
    if !params.require_hello {
        return None;
    }
    loop {
        match incoming(sink.socket.recv().await) {
            Incoming::Filters(f) => {
                *filters = f;
                return None;
            }
            Incoming::Invalid(why) => return Some(close_with(&mut sink.socket, &why).await),
            Incoming::Closed => return Some(Ok(())),
            Incoming::Nothing => {}
        }
    }
}

/// `GET /subscribe/dictionary`: the zstd dictionary of compressed events
/// (raw dictionary bytes), its id in `Zstd-Dictionary-Id`.
pub(crate) async fn dictionary() -> Response {
    use axum::{http::header, response::IntoResponse};
    (
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_owned()),
            (
                header::HeaderName::from_static("zstd-dictionary-id"),
                repo::stream_dictionary_id().to_string(),
            ),
            (
                header::HeaderName::from_static("zstd-dictionary-version"),
                repo::STREAM_DICTIONARY_VERSION.to_string(),
            ),
        ],
        bytes::Bytes::from_static(repo::stream_dictionary()),
    )
        .into_response()
}

/// The close message of a stream connection when the server stops.
pub(crate) fn going_away() -> Message {
    Message::Close(Some(CloseFrame {
        code: axum::extract::ws::close_code::AWAY,
        reason: Utf8Bytes::from_static(
            "the server is shutting down; reconnect with your cursor to resume",
        ),
    }))
}

pub(crate) async fn close_with(
    socket: &mut WebSocket,
    reason: &str,
) -> std::result::Result<(), axum::Error> {
    socket
        .send(Message::Close(Some(CloseFrame {
            code: POLICY_VIOLATION,
            reason: Utf8Bytes::from(reason.chars().take(120).collect::<String>()),
        })))
        .await
}

/// A connection, and the form of the events it asked for.
pub(crate) struct Sink {
    pub(crate) socket: WebSocket,
    /// zstd frames (binary messages) instead of JSON (text messages).
    pub(crate) compress: bool,
}

impl Sink {
    /// Sends stored event `stored` if `filters` want it (not flushed):
    /// whether it was sent.
    pub(crate) async fn feed(
        &mut self,
        filters: &Filters,
        stored: &bytes::Bytes,
    ) -> std::result::Result<bool, axum::Error> {
        let Some((json, frame)) = repo::stream_event_forms(stored) else {
            return Ok(false);
        };
        if !filters.wants(&json) {
            return Ok(false);
        }
        self.feed_filtered(filters, json, frame).await
    }

    /// Sends stored event `stored`, which a shared pass of the connection's
    /// filters let through (not flushed).
    async fn feed_passed(
        &mut self,
        stored: &bytes::Bytes,
    ) -> std::result::Result<bool, axum::Error> {
        match repo::stream_event_forms(stored) {
            Some((json, frame)) => self.send(json, frame).await,
            None => Ok(false),
        }
    }

    /// Sends an event `filters` want as its record's shape for them says.
    async fn feed_filtered(
        &mut self,
        filters: &Filters,
        json: bytes::Bytes,
        frame: bytes::Bytes,
    ) -> std::result::Result<bool, axum::Error> {
        let (json, frame) = match filters.shape(&json) {
            Shaped::Skipped => return Ok(false),
            Shaped::AsStored => (json, frame),
            Shaped::Reshaped(json) => {
                let frame = if self.compress {
                    repo::compress_stream_event(&json).into()
                } else {
                    bytes::Bytes::new()
                };
                (json.into(), frame)
            }
        };
        self.send(json, frame).await
    }

    /// Sends an event as JSON or as its zstd frame, as the connection asked.
    async fn send(
        &mut self,
        json: bytes::Bytes,
        frame: bytes::Bytes,
    ) -> std::result::Result<bool, axum::Error> {
        let message = if self.compress {
            Message::Binary(frame)
        } else {
            match Utf8Bytes::try_from(json) {
                Ok(text) => Message::Text(text),
                Err(_) => return Ok(false),
            }
        };
        self.socket.feed(message).await.map(|()| true)
    }
}

/// What a client's message asks: new filters, the end, or nothing.
pub(crate) enum Incoming {
    Filters(Filters),
    Invalid(String),
    Closed,
    Nothing,
}

pub(crate) fn incoming(message: Option<std::result::Result<Message, axum::Error>>) -> Incoming {
    match message {
        Some(Ok(Message::Text(text))) => match options_update(&text) {
            Ok(filters) => Incoming::Filters(filters),
            Err(why) => Incoming::Invalid(why),
        },
        Some(Ok(Message::Close(_)) | Err(_)) | None => Incoming::Closed,
        Some(Ok(_)) => Incoming::Nothing,
    }
}

async fn stream<K: Kv + 'static>(
    app: Arc<App<K>>,
    mut sink: Sink,
    params: Params,
    mut filters: Filters,
    now: u64,
) -> std::result::Result<(), axum::Error> {
    let store = app.repos.store();
    if let Some(end) = await_hello(&mut sink, &params, &mut filters).await {
        return end;
    }
    // No cursor, or one in the future: from the newest event when the
    // request came. One older than what is kept: from the oldest kept.
    let mut last = match params.cursor {
        Some(cursor) if cursor <= now => cursor,
        _ => now,
    };
    let live = &app.stream.live;
    replay(store, &mut sink, &filters, &mut last).await?;
    while live.dropped_through() > last {
        replay(store, &mut sink, &filters, &mut last).await?;
    }
    // Filters other connections may share read from their shared pass once
    // `last` is where the pass covers; until then (and without one), from
    // the whole stream, filtering each event here.
    let mut pass = join_pass(&app, &filters);
    let mut newest = live.newest.subscribe();
    let mut pass_newest = pass.as_ref().map(|p| p.live.newest.subscribe());
    let mut closing = app.closing.subscribe();
    loop {
        let from_pass = pass.as_ref().filter(|p| p.covers(last));
        let source = from_pass.map_or(live, |p| &p.live);
        loop {
            let batch = match source.after(last, CONSUMER_BATCH_BYTES) {
                Ok(batch) => batch,
                Err(TooSlow) => {
                    let reason = format!("ConsumerTooSlow: reconnect with cursor={last} to resume");
                    return close_with(&mut sink.socket, &reason).await;
                }
            };
            if batch.is_empty() {
                break;
            }
            for event in batch {
                if from_pass.is_some() {
                    sink.feed_passed(&event.frame).await?;
                } else {
                    sink.feed(&filters, &event.frame).await?;
                }
                last = event.seq;
            }
            sink.socket.flush().await?;
        }
        let waker = match (from_pass.is_some(), pass_newest.as_mut()) {
            (true, Some(pass_newest)) => pass_newest,
            _ => &mut newest,
        };
        tokio::select! {
            changed = waker.changed() => {
                if changed.is_err() {
                    return sink.socket.send(Message::Close(None)).await;
                }
                tokio::time::sleep(GATHER).await;
            }
            _ = async { closing.wait_for(|closing| *closing).await.is_ok() } => {
                return sink.socket.send(going_away()).await;
            }
            message = sink.socket.recv() => match incoming(message) {
                Incoming::Filters(f) => {
                    filters = f;
                    pass = join_pass(&app, &filters);
                    pass_newest = pass.as_ref().map(|p| p.live.newest.subscribe());
                }
                Incoming::Invalid(why) => return close_with(&mut sink.socket, &why).await,
                Incoming::Closed => return Ok(()),
                Incoming::Nothing => {}
            },
        }
    }
}

/// Sends every stored event after `last` that `filters` want, moving
/// `last` on.
async fn replay<K: Kv + 'static>(
    store: &Arc<store::Store<K>>,
    sink: &mut Sink,
    filters: &Filters,
    last: &mut u64,
) -> std::result::Result<(), axum::Error> {
    loop {
        let events = store
            .stream_events(*last, BATCH)
            .await
            .map_err(axum::Error::new)?;
        let done = events.len() < BATCH;
        let mut fed = 0;
        for (time, event) in events {
            if sink.feed(filters, &event).await? {
                fed += event.len();
            }
            *last = time;
            if fed >= CONSUMER_BATCH_BYTES {
                sink.socket.flush().await?;
                fed = 0;
            }
        }
        sink.socket.flush().await?;
        if done {
            return Ok(());
        }
    }
}
