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
//! `record` nor `cid`. Each event's JSON is made once, when its commit is
//! made, and stored with the commit under its time (`time_us`, which the
//! store gives as the commit lands: [`store::StreamEvents`]).

use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use cid::Cid;
use serde_json::Value;

/// One record operation's event, all but its time.
#[derive(Debug, Clone)]
pub(crate) struct StreamOp {
    /// What follows `"time_us":N` in the event's JSON.
    tail: Bytes,
}

impl StreamOp {
    /// The event of `operation` (`create`, `update` or `delete`) on
    /// `collection/rkey` in a commit of `rev`: the new record and its CID,
    /// unless deleted.
    pub(crate) fn new(
        rev: &str,
        operation: &str,
        collection: &str,
        rkey: &str,
        cid: Option<Cid>,
        record: Option<&Value>,
    ) -> Self {
        let mut commit = serde_json::Map::new();
        commit.insert("rev".into(), rev.into());
        commit.insert("operation".into(), operation.into());
        commit.insert("collection".into(), collection.into());
        commit.insert("rkey".into(), rkey.into());
        if let (Some(record), Some(cid)) = (record, cid) {
            commit.insert("record".into(), record.clone());
            commit.insert("cid".into(), cid.to_string().into());
        }
        let mut tail = BytesMut::from(&b",\"kind\":\"commit\",\"commit\":"[..]);
        // A map of strings and a record's JSON always serializes.
        tail.extend_from_slice(&serde_json::to_vec(&commit).unwrap_or_default());
        tail.put_u8(b'}');
        Self {
            tail: tail.freeze(),
        }
    }
}

/// The stream events of a commit to repository `did`, for the store to
/// stamp with their times: `now_micros` is the writer's clock.
pub(crate) fn stream_events(did: &str, ops: Vec<StreamOp>, now_micros: u64) -> store::StreamEvents {
    let mut head = BytesMut::from(&b"{\"did\":"[..]);
    head.extend_from_slice(&serde_json::to_vec(did).unwrap_or_default());
    head.extend_from_slice(b",\"time_us\":");
    let head = head.freeze();
    let count = ops.len();
    store::StreamEvents {
        now_micros,
        count,
        encode: Arc::new(move |i, time| {
            let tail = ops.get(i).map_or(&b"}"[..], |op| &op.tail[..]);
            let mut event = BytesMut::with_capacity(head.len() + 20 + tail.len());
            event.extend_from_slice(&head);
            event.extend_from_slice(time.to_string().as_bytes());
            event.extend_from_slice(tail);
            event.freeze()
        }),
    }
}
