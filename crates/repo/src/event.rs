//! Firehose events: each commit as AT Protocol's
//! `com.atproto.sync.subscribeRepos#commit` message, framed for the event
//! stream as a dag-cbor header `{op: 1, t: "#commit"}` followed by the
//! dag-cbor body.
//!
//! What is stored with a commit (under a server-wide sequence number the
//! store assigns) is the body without its blocks, plus the CIDs of the Pail
//! shards the commit added: the blocks are in the store already (shards as
//! deltas), and a commit's shards are tens of kilobytes where the rest of
//! its event is a few hundred bytes. [`frame_event`] reads them back.

use bytes::Bytes;
use cid::Cid;
use serde::{Deserialize, Serialize};

use crate::error::Error;

/// One record operation of a commit, as the `#repoOp` Lexicon defines it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepoOp {
    /// `create`, `update` or `delete`.
    pub action: String,
    /// `collection/rkey`.
    pub path: String,
    /// The new record's CID; `None` for a delete.
    pub cid: Option<Cid>,
    /// The record's previous CID, for an update or delete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev: Option<Cid>,
}

/// A `#commit` message body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommitEvent {
    /// The server-wide sequence number (0 until the store assigns one).
    pub seq: u64,
    /// Always false (datarepo never rebases).
    pub rebase: bool,
    /// Always false: every commit's blocks are carried.
    pub too_big: bool,
    /// The repository.
    pub repo: String,
    /// The commit's CID.
    pub commit: Cid,
    /// The commit's rev.
    pub rev: String,
    /// The previous commit's rev (`None` for a repository's first commit).
    pub since: Option<String>,
    /// A CAR v1 file (root: the commit) holding the commit block, the Pail
    /// shards it added and the records it wrote.
    #[serde(with = "serde_bytes")]
    pub blocks: Vec<u8>,
    /// The record operations.
    pub ops: Vec<RepoOp>,
    /// The blobs the commit's new records refer to (AT Protocol deprecates
    /// the field; the reference still sends it).
    pub blobs: Vec<Cid>,
    /// When the commit was made (RFC 3339, UTC).
    pub time: String,
    /// The previous commit's tree root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev_data: Option<Cid>,
}

/// The frame header of a `#commit` message.
#[derive(Serialize)]
struct Header<'a> {
    op: i64,
    t: &'a str,
}

/// The frame header of an error message.
#[derive(Serialize)]
struct ErrorHeader {
    op: i64,
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: &'a str,
    message: &'a str,
}

#[derive(Serialize)]
struct InfoBody<'a> {
    name: &'a str,
    message: &'a str,
}

fn cbor(value: &impl Serialize) -> Vec<u8> {
    // Maps of strings, integers, byte strings and links always encode.
    serde_ipld_dagcbor::to_vec(value).unwrap_or_default()
}

impl CommitEvent {
    /// The event's frame: header, then body.
    #[must_use]
    pub fn to_frame(&self) -> Vec<u8> {
        let mut out = cbor(&Header {
            op: 1,
            t: "#commit",
        });
        out.extend_from_slice(&cbor(self));
        out
    }
}

/// An event as stored with its commit: the `#commit` body without `seq`
/// (the key holds it) and without `blocks` (read from the store when
/// framed), with the CIDs of the shards the commit added.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StoredEvent {
    pub(crate) repo: String,
    pub(crate) commit: Cid,
    pub(crate) rev: String,
    pub(crate) since: Option<String>,
    pub(crate) ops: Vec<RepoOp>,
    pub(crate) time: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) prev_data: Option<Cid>,
    /// The Pail shards the commit added.
    pub(crate) shards: Vec<Cid>,
    /// The blobs the commit's new records refer to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) blobs: Vec<Cid>,
}

impl StoredEvent {
    pub(crate) fn encode(&self) -> Bytes {
        Bytes::from(cbor(self))
    }

    fn decode(bytes: &[u8]) -> Result<Self, Error> {
        serde_ipld_dagcbor::from_slice(bytes)
            .map_err(|e| Error::InvalidRecord(format!("a stored firehose event: {e}")))
    }
}

/// When a stored event's commit was made (RFC 3339), if the bytes are an
/// event.
#[must_use]
pub fn stored_event_time(stored: &[u8]) -> Option<String> {
    StoredEvent::decode(stored).ok().map(|e| e.time)
}

/// The event stream frame of the event stored under `seq`: its blocks (the
/// commit, the shards it added, the records it wrote) read from `store`,
/// the anchors of shard deltas through `anchors` (one memo for the events
/// one reader frames in order).
/// When one of them is gone (garbage collection with `--keep-last`), the
/// frame says `tooBig` and carries the blocks that are left.
///
/// # Errors
///
/// [`Error::InvalidRecord`] when `stored` is not an event, or a storage
/// error.
pub async fn frame_event<K: store::Kv>(
    store: &store::Store<K>,
    anchors: &store::AnchorMemo,
    seq: u64,
    stored: &[u8],
) -> Result<Vec<u8>, Error> {
    let event = StoredEvent::decode(stored)?;
    let mut wanted: Vec<Cid> = Vec::with_capacity(1 + event.shards.len() + event.ops.len());
    for cid in std::iter::once(event.commit)
        .chain(event.shards.iter().copied())
        .chain(event.ops.iter().filter_map(|op| op.cid))
    {
        if !wanted.contains(&cid) {
            wanted.push(cid);
        }
    }
    // A recent commit's shards are in the shard cache; the rest are read
    // at once (a read from a cold store waits on the disk).
    let shards = &event.shards;
    let read = futures::future::join_all(wanted.iter().map(|cid| async move {
        match store.cached_shard(cid) {
            Some(shard) => Ok(Some(store::Block::from_shard(&shard))),
            None if shards.contains(cid) => store.get_shard_block(cid, anchors).await,
            None => store.get_block(cid).await,
        }
    }))
    .await;
    let mut blocks: Vec<store::Block> = Vec::with_capacity(wanted.len());
    let mut too_big = false;
    for block in read {
        match block? {
            Some(block) => blocks.push(block),
            None => too_big = true,
        }
    }
    let car = car_slice(
        event.commit,
        blocks.iter().map(|b| (b.cid(), &b.bytes()[..])),
    )
    .await;
    Ok(CommitEvent {
        seq,
        rebase: false,
        too_big,
        repo: event.repo,
        commit: event.commit,
        rev: event.rev,
        since: event.since,
        blocks: car,
        ops: event.ops,
        blobs: event.blobs,
        time: event.time,
        prev_data: event.prev_data,
    }
    .to_frame())
}

/// An error frame (`{op: -1}` then `{error, message}`), e.g.
/// `FutureCursor` or `ConsumerTooSlow`.
#[must_use]
pub fn error_frame(error: &str, message: &str) -> Vec<u8> {
    let mut out = cbor(&ErrorHeader { op: -1 });
    out.extend_from_slice(&cbor(&ErrorBody { error, message }));
    out
}

/// An `#info` frame (e.g. `OutdatedCursor`).
#[must_use]
pub fn info_frame(name: &str, message: &str) -> Vec<u8> {
    let mut out = cbor(&Header { op: 1, t: "#info" });
    out.extend_from_slice(&cbor(&InfoBody { name, message }));
    out
}

/// A decoded event stream frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A `#commit` message.
    Commit(Box<CommitEvent>),
    /// An `#info` message.
    Info {
        /// E.g. `OutdatedCursor`.
        name: String,
        /// What it says.
        message: Option<String>,
    },
    /// An error frame; the stream ends after it.
    Error {
        /// E.g. `FutureCursor`, `ConsumerTooSlow`.
        error: String,
        /// What it says.
        message: Option<String>,
    },
    /// A message of a type this decoder does not know (its `t`).
    Unknown(String),
}

#[derive(Deserialize)]
struct AnyHeader {
    op: i64,
    #[serde(default)]
    t: Option<String>,
}

#[derive(Deserialize)]
struct AnyInfo {
    name: String,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize)]
struct AnyError {
    error: String,
    #[serde(default)]
    message: Option<String>,
}

/// Decodes an event stream frame: a dag-cbor header, then its body.
///
/// # Errors
///
/// [`Error::InvalidRecord`] naming what is malformed.
pub fn decode_frame(bytes: &[u8]) -> Result<Frame, Error> {
    let bad = |e: String| Error::InvalidRecord(format!("an event stream frame: {e}"));
    let mut reader = std::io::Cursor::new(bytes);
    let header: AnyHeader =
        serde_ipld_dagcbor::de::from_reader_once(&mut reader).map_err(|e| bad(e.to_string()))?;
    let body = &bytes[usize::try_from(reader.position()).unwrap_or(bytes.len())..];
    let body_err =
        |e: serde_ipld_dagcbor::DecodeError<std::convert::Infallible>| bad(e.to_string());
    match (header.op, header.t.as_deref()) {
        (-1, _) => {
            let e: AnyError = serde_ipld_dagcbor::from_slice(body).map_err(body_err)?;
            Ok(Frame::Error {
                error: e.error,
                message: e.message,
            })
        }
        (1, Some("#commit")) => Ok(Frame::Commit(Box::new(
            serde_ipld_dagcbor::from_slice(body).map_err(body_err)?,
        ))),
        (1, Some("#info")) => {
            let i: AnyInfo = serde_ipld_dagcbor::from_slice(body).map_err(body_err)?;
            Ok(Frame::Info {
                name: i.name,
                message: i.message,
            })
        }
        (1, t) => Ok(Frame::Unknown(t.unwrap_or_default().to_owned())),
        (op, _) => Err(bad(format!("unknown op {op}"))),
    }
}

/// A CAR v1 file of `blocks` whose root is `root`.
pub(crate) async fn car_slice<'a>(
    root: Cid,
    blocks: impl Iterator<Item = (Cid, &'a [u8])>,
) -> Vec<u8> {
    let mut car = iroh_car::CarWriter::new(iroh_car::CarHeader::new_v1(vec![root]), Vec::new());
    for (cid, bytes) in blocks {
        // Writing into memory cannot fail.
        let _ = car.write(cid, bytes).await;
    }
    car.finish().await.unwrap_or_default()
}

/// Microseconds since the Unix epoch as RFC 3339 UTC with milliseconds.
pub(crate) fn rfc3339(micros: u64) -> String {
    let micros = i64::try_from(micros).unwrap_or(i64::MAX);
    jiff::Timestamp::from_microsecond(micros)
        .map(|t| format!("{t:.3}"))
        .unwrap_or_default()
}
