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

use std::{
    collections::{HashMap, HashSet},
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
use tokio::sync::Notify;

use crate::frames::{Framed, Live, TooSlow};
use crate::{app::App, error::XrpcError};

/// Events read from the store per batch.
const BATCH: usize = 1024;

/// Bytes of events written to a connection before it is flushed.
pub(crate) const CONSUMER_BATCH_BYTES: usize = 1 << 20;

/// How often the publisher looks for events nobody told it about.
const POLL: Duration = Duration::from_millis(100);

/// How long a connection woken by new events waits for more before it
/// reads them: one wake-up, one filter pass and one flush per few
/// commits instead of per commit (100 connections under a write load
/// otherwise wake 100 times per commit).
const GATHER: Duration = Duration::from_millis(2);

/// Most collections a connection may ask for.
const MAX_COLLECTIONS: usize = 100;

/// Most DIDs a connection may ask for.
const MAX_DIDS: usize = 10_000;

/// WebSocket close code for a request the server will not serve (policy).
const POLICY_VIOLATION: u16 = 1008;

/// The stream's shared state.
pub(crate) struct Stream {
    pub(crate) live: Live,
    /// Woken when a commit is acknowledged.
    commits: Arc<Notify>,
    publishing: std::sync::atomic::AtomicBool,
    /// The filtering passes that connections with the same filters share.
    passes: std::sync::Mutex<HashMap<PassKey, Weak<Pass>>>,
    buffer_bytes: usize,
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

/// What a connection asks for, as its query string or an `options_update`
/// gives it.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wanted {
    #[serde(default)]
    wanted_collections: Vec<String>,
    #[serde(default)]
    wanted_dids: Vec<String>,
    #[serde(default)]
    max_message_size_bytes: u64,
    /// A `--where` expression (datarepo's addition).
    #[serde(default, rename = "where")]
    condition: Option<String>,
    /// Record paths (datarepo's addition).
    #[serde(default)]
    fields: Vec<String>,
}

/// What a connection wants.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Filters {
    /// Full NSIDs.
    collections: HashSet<String>,
    /// `prefix.*` entries, as `prefix.`.
    prefixes: Vec<String>,
    dids: HashSet<String>,
    /// 0: no limit.
    max_message_bytes: usize,
    /// What an event's record must satisfy; events without a record
    /// (deletes) pass.
    condition: Option<Arc<repo::RecordCondition>>,
    /// `where` as written (what tells two conditions apart).
    condition_text: Option<String>,
    /// The record paths sent (`None`: the whole record).
    fields: Option<Arc<repo::RecordFields>>,
}

/// What a connection is sent of an event its filters let through.
enum Shaped {
    /// Nothing: its record does not satisfy `where`.
    Skipped,
    /// The event as stored.
    AsStored,
    /// The event with its record cut down to `fields`.
    Reshaped(Vec<u8>),
}

impl Filters {
    fn new(wanted: &Wanted) -> Result<Self, String> {
        let (collections, dids) = (&wanted.wanted_collections, &wanted.wanted_dids);
        if collections.len() > MAX_COLLECTIONS {
            return Err(format!(
                "wantedCollections has {} entries; at most {MAX_COLLECTIONS}",
                collections.len()
            ));
        }
        if dids.len() > MAX_DIDS {
            return Err(format!(
                "wantedDids has {} entries; at most {MAX_DIDS}",
                dids.len()
            ));
        }
        let mut filters = Self {
            max_message_bytes: usize::try_from(wanted.max_message_size_bytes).unwrap_or(usize::MAX),
            ..Self::default()
        };
        for c in collections {
            match c.strip_suffix(".*") {
                Some(prefix) if valid_prefix(prefix) => filters.prefixes.push(format!("{prefix}.")),
                None if rkey::Nsid::new(c).is_ok() => {
                    filters.collections.insert(c.clone());
                }
                _ => {
                    return Err(format!(
                        "wantedCollections: {c:?} is neither an NSID nor an NSID prefix ending in .*"
                    ));
                }
            }
        }
        for d in dids {
            if !d.starts_with("did:") || d.len() > 2048 || d.contains(['"', '\\']) {
                return Err(format!("wantedDids: {d:?} is not a DID"));
            }
            filters.dids.insert(d.clone());
        }
        if let Some(src) = &wanted.condition {
            let condition = repo::RecordCondition::parse(src).map_err(|e| format!("where: {e}"))?;
            filters.condition = Some(Arc::new(condition));
            filters.condition_text = Some(src.clone());
        }
        if !wanted.fields.is_empty() {
            let fields = repo::RecordFields::new(wanted.fields.clone())?;
            filters.fields = Some(Arc::new(fields));
        }
        Ok(filters)
    }

    /// What identifies these filters' events for a shared pass, or `None`
    /// when they share none: no filter at all (the whole stream is theirs)
    /// or `fields` (each connection cuts records to its own encoding).
    fn pass_key(&self) -> Option<PassKey> {
        if self.fields.is_some() || *self == Self::default() {
            return None;
        }
        let sorted = |set: &HashSet<String>| {
            let mut v: Vec<String> = set.iter().cloned().collect();
            v.sort_unstable();
            v
        };
        let mut prefixes = self.prefixes.clone();
        prefixes.sort_unstable();
        Some(PassKey {
            collections: sorted(&self.collections),
            prefixes,
            dids: sorted(&self.dids),
            max_message_bytes: self.max_message_bytes,
            condition: self.condition_text.clone(),
        })
    }

    /// Whether a stored event goes to the connection as stored: its DID,
    /// collection and size pass, and its record meets `where` (filters
    /// without `fields`).
    fn passes(&self, stored: &bytes::Bytes) -> bool {
        repo::stream_event_forms(stored).is_some_and(|(json, _)| {
            self.wants(&json) && !matches!(self.shape(&json), Shaped::Skipped)
        })
    }

    /// Whether the connection wants `event` (a stored event's JSON), as far
    /// as its DID, collection and size tell.
    fn wants(&self, event: &[u8]) -> bool {
        if self.max_message_bytes > 0 && event.len() > self.max_message_bytes {
            return false;
        }
        if !self.dids.is_empty() && !event_did(event).is_some_and(|d| self.dids.contains(d)) {
            return false;
        }
        // Account and identity events pass collection filters, as
        // Jetstream's do.
        if (self.collections.is_empty() && self.prefixes.is_empty())
            || event_kind(event) != Some("commit")
        {
            return true;
        }
        event_collection(event).is_some_and(|c| {
            self.collections.contains(c) || self.prefixes.iter().any(|p| c.starts_with(p.as_str()))
        })
    }

    /// What to send of `event` (one [`Filters::wants`]): `where` and
    /// `fields` read its record.
    fn shape(&self, event: &[u8]) -> Shaped {
        if self.condition.is_none() && self.fields.is_none() {
            return Shaped::AsStored;
        }
        let Ok(mut parsed) = serde_json::from_slice::<serde_json::Value>(event) else {
            return Shaped::Skipped;
        };
        let Some(record) = parsed.pointer_mut("/commit/record") else {
            return Shaped::AsStored;
        };
        if let Some(condition) = &self.condition
            && !condition.matches(record)
        {
            return Shaped::Skipped;
        }
        let Some(fields) = &self.fields else {
            return Shaped::AsStored;
        };
        *record = fields.select(record);
        serde_json::to_vec(&parsed).map_or(Shaped::Skipped, Shaped::Reshaped)
    }
}

/// An NSID prefix: dot-separated segments of letters, digits and hyphens.
fn valid_prefix(prefix: &str) -> bool {
    !prefix.is_empty()
        && prefix.len() <= 317
        && prefix.split('.').all(|s| {
            !s.is_empty()
                && s.len() <= 63
                && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

/// The string after `marker` up to the next quote (DIDs and NSIDs hold no
/// quote or escape). The markers' searchers are built once: building one
/// per search cost more than the search, per event per connection.
fn string_after<'a>(event: &'a [u8], marker: &memchr::memmem::Finder<'static>) -> Option<&'a str> {
    let start = marker.find(event)? + marker.needle().len();
    let len = memchr::memchr(b'"', &event[start..])?;
    std::str::from_utf8(&event[start..start + len]).ok()
}

static DID_MARKER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"{\"did\":\""));
static KIND_MARKER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b",\"kind\":\""));
static COLLECTION_MARKER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b",\"collection\":\""));

/// An event's DID: its first field.
fn event_did(event: &[u8]) -> Option<&str> {
    event
        .starts_with(b"{\"did\":\"")
        .then(|| string_after(event, &DID_MARKER))
        .flatten()
}

/// An event's kind (`commit`, `account`, `identity`): the first `kind`
/// field, after the DID and the time, which hold no quote.
fn event_kind(event: &[u8]) -> Option<&str> {
    string_after(event, &KIND_MARKER)
}

/// A commit event's collection: the commit's third field (its rev and
/// operation before it hold no quote).
fn event_collection(event: &[u8]) -> Option<&str> {
    string_after(event, &COLLECTION_MARKER)
}

/// A client's `options_update`: the filters it replaces the connection's
/// with.
fn options_update(text: &str) -> Result<Filters, String> {
    #[derive(serde::Deserialize)]
    struct Update {
        #[serde(rename = "type")]
        kind: String,
        payload: Wanted,
    }
    if text.len() > 10 << 20 {
        return Err("an options_update is at most 10 MB".into());
    }
    let update: Update =
        serde_json::from_str(text).map_err(|e| format!("not an options_update message: {e}"))?;
    if update.kind != "options_update" {
        return Err(format!(
            "unknown message type {:?} (expected options_update)",
            update.kind
        ));
    }
    Filters::new(&update.payload)
}

/// What makes two connections' filters the same, for a shared pass.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct PassKey {
    collections: Vec<String>,
    prefixes: Vec<String>,
    dids: Vec<String>,
    max_message_bytes: usize,
    condition: Option<String>,
}

/// One filtering pass over the stream, shared by the connections whose
/// filters are the same: it reads each event once and keeps those they
/// want, so that each connection wakes only for its own events (100
/// connections asking for a rare collection otherwise wake and filter
/// every event 100 times). It ends with its last connection.
pub(crate) struct Pass {
    /// The events the filters let through, in stream order.
    live: Live,
    /// The stream time it started after: a connection reads from the pass
    /// only once past it (and past what the pass has dropped).
    start: u64,
    task: tokio::task::AbortHandle,
}

impl Drop for Pass {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Pass {
    /// Whether a connection that has sent everything up to `last` finds
    /// every later event it wants in this pass.
    fn covers(&self, last: u64) -> bool {
        last >= self.start && last >= self.live.dropped_through()
    }
}

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

/// Publishes durable stream events in order, from the first subscription
/// until the server closes its streams or is dropped.
fn start_publisher<K: Kv + 'static>(app: &Arc<App<K>>) {
    if app
        .stream
        .publishing
        .swap(true, std::sync::atomic::Ordering::AcqRel)
    {
        return;
    }
    let weak = Arc::downgrade(app);
    let commits = app.stream.notifier();
    let store = Arc::clone(app.repos.store());
    // The store closes after the streams do: reading it past that point
    // would only fail.
    let mut closing = app.closing.subscribe();
    tokio::spawn(async move {
        let mut last = loop {
            match store.newest_stream_time().await {
                Ok(t) => break t.unwrap_or(0),
                Err(e) => {
                    tracing::warn!(error = %e, "stream: cannot read the newest event; retrying");
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
            let Some(app) = weak.upgrade() else {
                return;
            };
            loop {
                let events = match store.stream_events(last, BATCH).await {
                    Ok(events) => events,
                    Err(e) => {
                        tracing::warn!(error = %e, "stream: cannot read events");
                        break;
                    }
                };
                let n = events.len();
                for (time, frame) in events {
                    app.stream.live.publish(Framed { seq: time, frame });
                    last = time;
                }
                if n < BATCH {
                    break;
                }
            }
        }
    });
}

/// The connection's parameters, from the query string.
#[derive(Debug, Default)]
pub(crate) struct Params {
    wanted: Wanted,
    pub(crate) cursor: Option<u64>,
    compress: bool,
    require_hello: bool,
}

fn params(query: Option<&str>) -> Result<Params, String> {
    let mut p = Params::default();
    let flag = |k: &str, v: &str| match v {
        "true" | "1" => Ok(true),
        "false" | "0" | "" => Ok(false),
        _ => Err(format!("{k}={v:?}: expected true or false")),
    };
    for (k, v) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match &*k {
            "wantedCollections" => p.wanted.wanted_collections.push(v.into_owned()),
            "wantedDids" => p.wanted.wanted_dids.push(v.into_owned()),
            "where" => p.wanted.condition = Some(v.into_owned()),
            "fields" => p
                .wanted
                .fields
                .extend(v.split(',').filter(|f| !f.is_empty()).map(str::to_owned)),
            "cursor" => {
                p.cursor = Some(
                    v.parse()
                        .map_err(|_| format!("cursor {v:?} is not a time in unix microseconds"))?,
                );
            }
            "maxMessageSizeBytes" => {
                p.wanted.max_message_size_bytes = v
                    .parse()
                    .map_err(|_| format!("maxMessageSizeBytes {v:?} is not a number"))?;
            }
            "compress" => p.compress = flag(&k, &v)?,
            "requireHello" => p.require_hello = flag(&k, &v)?,
            _ => {}
        }
    }
    Ok(p)
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

#[cfg(test)]
mod tests {
    use super::*;

    const EVENT: &[u8] = br#"{"did":"did:plc:abc","time_us":5,"kind":"commit","commit":{"rev":"3m","operation":"create","collection":"app.bsky.feed.post","rkey":"x","record":{"collection":"fake"},"cid":"b"}}"#;

    #[test]
    fn filters_read_the_did_and_collection() {
        assert_eq!(event_did(EVENT), Some("did:plc:abc"));
        assert_eq!(event_collection(EVENT), Some("app.bsky.feed.post"));
        let wanted = |c: &[&str], d: &[&str], max| Wanted {
            wanted_collections: c.iter().map(ToString::to_string).collect(),
            wanted_dids: d.iter().map(ToString::to_string).collect(),
            max_message_size_bytes: max,
            ..Wanted::default()
        };
        let f = |c: &[&str], d: &[&str], max| Filters::new(&wanted(c, d, max)).unwrap();
        assert!(f(&[], &[], 0).wants(EVENT));
        assert!(f(&["app.bsky.feed.post"], &[], 0).wants(EVENT));
        assert!(f(&["app.bsky.feed.*"], &[], 0).wants(EVENT));
        assert!(f(&["app.bsky.*"], &["did:plc:abc"], 0).wants(EVENT));
        assert!(!f(&["app.bsky.feed.like"], &[], 0).wants(EVENT));
        assert!(!f(&["app.bsky.graph.*"], &[], 0).wants(EVENT));
        assert!(!f(&[], &["did:plc:other"], 0).wants(EVENT));
        assert!(!f(&[], &[], 10).wants(EVENT));
        let account = br#"{"did":"did:plc:abc","time_us":6,"kind":"account","account":{"active":true,"did":"did:plc:abc","time":"t"}}"#;
        assert_eq!(event_kind(account), Some("account"));
        assert!(f(&["app.bsky.feed.post"], &[], 0).wants(account));
        assert!(!f(&[], &["did:plc:other"], 0).wants(account));
        assert!(Filters::new(&wanted(&["not an nsid"], &[], 0)).is_err());
        assert!(Filters::new(&wanted(&[], &["alice"], 0)).is_err());
    }
}
