//! The events of the Jetstream-compatible stream (`/subscribe`): one per
//! record operation of a commit, as Bluesky's Jetstream shapes them:
//!
//! ```text
//! {"did":"did:…","time_us":1764201600000000,"kind":"commit",
//!  "commit":{"rev":"3m…","operation":"create","collection":"app.bsky.feed.post",
//!            "rkey":"3m…","record":{…},"cid":"bafyrei…"}}
//! ```
//!
//! `record` is the record in AT Protocol JSON; a delete has neither
//! `record` nor `cid`. Each event is made once, when its commit is made,
//! and stored with the commit under its time (`time_us`, which the store
//! gives as the commit lands: [`store::StreamEvents`]), in both forms a
//! consumer may ask for: the JSON, and one zstd frame of it compressed with
//! the stream's dictionary ([`stream_dictionary`]). The stored value is
//! the JSON's length (4 bytes, big-endian), the JSON, then the frame.

use std::{
    cell::RefCell,
    sync::{Arc, OnceLock},
};

use bytes::{BufMut, Bytes, BytesMut};
use cid::Cid;
use serde_json::Value;

/// The zstd dictionary the stream's events are compressed with, trained on
/// events shaped as datarepo makes them (`crates/bench/src/bin/stream_dictionary.rs`).
static DICTIONARY: &[u8] = include_bytes!("stream.zdict");

/// The version of [`stream_dictionary`]: a new dictionary is a new
/// version (and a new id), so that a consumer knows to fetch it again.
pub const STREAM_DICTIONARY_VERSION: u32 = 1;

/// The compression level of the stream's frames.
const LEVEL: i32 = 3;

/// The stream's zstd dictionary, as raw dictionary bytes (what `zstd -D`
/// and Python's `zstandard.ZstdCompressionDict` take).
#[must_use]
pub fn stream_dictionary() -> &'static [u8] {
    DICTIONARY
}

/// The dictionary's id, as its header gives it (and as every frame
/// compressed with it names it).
#[must_use]
pub fn stream_dictionary_id() -> u32 {
    DICTIONARY
        .get(4..8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u32::from_le_bytes)
}

fn prepared() -> &'static zstd::dict::EncoderDictionary<'static> {
    static PREPARED: OnceLock<zstd::dict::EncoderDictionary<'static>> = OnceLock::new();
    PREPARED.get_or_init(|| zstd::dict::EncoderDictionary::copy(DICTIONARY, LEVEL))
}

thread_local! {
    static COMPRESSOR: RefCell<Option<zstd::bulk::Compressor<'static>>> = const { RefCell::new(None) };
}

/// `json` as one zstd frame with the stream's dictionary (empty if zstd
/// fails, which it does not for bytes in memory): how an event is sent
/// compressed, and how one reshaped for a consumer (`fields`) is.
#[must_use]
pub fn compress_stream_event(json: &[u8]) -> Vec<u8> {
    COMPRESSOR.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            *cell = zstd::bulk::Compressor::with_prepared_dictionary(prepared()).ok();
        }
        cell.as_mut()
            .and_then(|c| c.compress(json).ok())
            .unwrap_or_default()
    })
}

/// A stored stream event's two forms: its JSON and its zstd frame.
#[must_use]
pub fn stream_event_forms(stored: &Bytes) -> Option<(Bytes, Bytes)> {
    let len = usize::try_from(u32::from_be_bytes(stored.get(..4)?.try_into().ok()?)).ok()?;
    let end = 4usize.checked_add(len)?;
    if end > stored.len() {
        return None;
    }
    Some((stored.slice(4..end), stored.slice(end..)))
}

/// An event's stored value: the JSON's length (u32, big-endian), the JSON,
/// then its zstd frame.
fn stored(json: &[u8]) -> Bytes {
    let frame = compress_stream_event(json);
    let mut stored = BytesMut::with_capacity(4 + json.len() + frame.len());
    // An event is far below 4 GiB (a record is at most 1 MB).
    stored.put_u32(u32::try_from(json.len()).unwrap_or(u32::MAX));
    stored.extend_from_slice(json);
    stored.extend_from_slice(&frame);
    stored.freeze()
}

/// One record operation's event, all but its time and its commit's rev.
#[derive(Debug, Clone)]
pub(crate) struct StreamOp {
    /// What follows `"rev":"…",` in the event's JSON.
    tail: Bytes,
}

impl StreamOp {
    /// The event of `operation` (`create`, `update` or `delete`) on
    /// `collection/rkey`: the new record and its CID, unless deleted.
    /// Written straight from `record` (no copy of it is made).
    pub(crate) fn new(
        operation: &str,
        collection: &str,
        rkey: &str,
        cid: Option<Cid>,
        record: Option<&Value>,
    ) -> Self {
        let mut tail = Vec::with_capacity(256);
        // Strings and a record's JSON always serialize.
        let json = |out: &mut Vec<u8>, v: &str| {
            let _ = serde_json::to_writer(&mut *out, v);
        };
        tail.extend_from_slice(b"\"operation\":");
        json(&mut tail, operation);
        tail.extend_from_slice(b",\"collection\":");
        json(&mut tail, collection);
        tail.extend_from_slice(b",\"rkey\":");
        json(&mut tail, rkey);
        if let (Some(record), Some(cid)) = (record, cid) {
            tail.extend_from_slice(b",\"record\":");
            let _ = serde_json::to_writer(&mut tail, record);
            tail.extend_from_slice(b",\"cid\":");
            json(&mut tail, &cid.to_string());
        }
        tail.extend_from_slice(b"}}");
        Self {
            tail: Bytes::from(tail),
        }
    }
}

/// The stream events of a commit to repository `did`, for the store to
/// stamp with their times: `now_micros` is the writer's clock.
pub(crate) fn stream_events(
    did: &str,
    rev: &str,
    ops: Vec<StreamOp>,
    now_micros: u64,
) -> store::StreamEvents {
    let mut head = BytesMut::from(&b"{\"did\":"[..]);
    head.extend_from_slice(&serde_json::to_vec(did).unwrap_or_default());
    head.extend_from_slice(b",\"time_us\":");
    let head = head.freeze();
    let mut middle = BytesMut::from(&b",\"kind\":\"commit\",\"commit\":{\"rev\":"[..]);
    middle.extend_from_slice(&serde_json::to_vec(rev).unwrap_or_default());
    middle.extend_from_slice(b",");
    let middle = middle.freeze();
    let count = ops.len();
    store::StreamEvents {
        now_micros,
        count,
        encode: Arc::new(move |i, time| {
            let tail = ops.get(i).map_or(&b"}}"[..], |op| &op.tail[..]);
            let mut json = Vec::with_capacity(head.len() + 20 + middle.len() + tail.len());
            json.extend_from_slice(&head);
            json.extend_from_slice(time.to_string().as_bytes());
            json.extend_from_slice(&middle);
            json.extend_from_slice(tail);
            stored(&json)
        }),
    }
}

/// A change to an account that the stream announces (Jetstream's
/// `identity` and `account` events; they are not commits).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccountChange {
    /// The account's handle, as of now (`identity`).
    Identity {
        /// Its handle, if it has one.
        handle: Option<String>,
    },
    /// Whether the account is active, and if not, why (`account`:
    /// `deactivated`, `takendown`, `deleted`).
    Status {
        /// Whether its repository may be written and read.
        active: bool,
        /// Why it is not active.
        status: Option<String>,
    },
}

impl AccountChange {
    /// The account's status by its name: `active`, or why it is not
    /// (`deactivated`, `takendown`, `deleted`).
    #[must_use]
    pub fn status(name: &str) -> Self {
        let active = name == "active";
        Self::Status {
            active,
            status: (!active).then(|| name.to_owned()),
        }
    }
}

/// The stream events announcing `changes` to the account `did`, in that
/// order, for the store to stamp with their times (`now_micros`: the
/// writer's clock), written with the account's change
/// ([`store::Store::write_with_stream_events`]):
///
/// ```text
/// {"did":"did:…","time_us":…,"kind":"identity","identity":{"did":"did:…","handle":"alice.test","time":"…"}}
/// {"did":"did:…","time_us":…,"kind":"account","account":{"active":false,"did":"did:…","status":"deactivated","time":"…"}}
/// ```
///
/// `time` is the event's own time as RFC 3339 with milliseconds.
/// Jetstream's `seq` (the firehose's sequence number) is absent: the
/// firehose carries no account events.
#[must_use]
pub fn account_stream_events(
    did: &str,
    changes: Vec<AccountChange>,
    now_micros: u64,
) -> store::StreamEvents {
    let did = did.to_owned();
    store::StreamEvents {
        now_micros,
        count: changes.len(),
        encode: Arc::new(move |i, time| {
            let at = i64::try_from(time)
                .ok()
                .and_then(|t| jiff::Timestamp::from_microsecond(t).ok())
                .map(|t| format!("{t:.3}"))
                .unwrap_or_default();
            let (kind, body) = match changes.get(i) {
                Some(AccountChange::Identity { handle }) => (
                    "identity",
                    serde_json::json!({"did": did, "handle": handle, "time": at}),
                ),
                Some(AccountChange::Status { active, status }) => {
                    let mut body = serde_json::json!({"active": active, "did": did});
                    if let Some(status) = status {
                        body["status"] = Value::from(status.as_str());
                    }
                    body["time"] = Value::from(at);
                    ("account", body)
                }
                None => ("account", Value::Null),
            };
            let mut json = Vec::with_capacity(256);
            json.extend_from_slice(b"{\"did\":");
            let _ = serde_json::to_writer(&mut json, &did);
            json.extend_from_slice(
                format!(",\"time_us\":{time},\"kind\":\"{kind}\",\"{kind}\":").as_bytes(),
            );
            let _ = serde_json::to_writer(&mut json, &body);
            json.push(b'}');
            stored(&json)
        }),
    }
}
