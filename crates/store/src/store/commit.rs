//! What a commit writes ([`Commit`]): the new head, blocks, record index
//! changes, collections and the firehose event.

use bytes::Bytes;
use cid::Cid;

use crate::{block::Block, error::Error, kv::interface::WriteOp};

/// A repository's head: its latest commit and that commit's rev.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// The commit block's CID.
    pub commit: Cid,
    /// The commit's rev (a TID's value).
    pub rev: u64,
}

impl Head {
    /// `rev` (8 bytes, big-endian) then the commit CID's bytes.
    pub(super) fn encode(&self) -> Bytes {
        let mut out = self.rev.to_be_bytes().to_vec();
        out.extend_from_slice(&self.commit.to_bytes());
        Bytes::from(out)
    }

    pub(super) fn decode(bytes: &[u8]) -> Result<Self, Error> {
        let malformed = |reason: &str| Error::Malformed {
            what: "head",
            reason: reason.to_owned(),
        };
        let (rev, cid) = bytes
            .split_first_chunk::<8>()
            .ok_or_else(|| malformed("shorter than 8 bytes"))?;
        Ok(Self {
            rev: u64::from_be_bytes(*rev),
            commit: Cid::try_from(cid).map_err(|e| malformed(&e.to_string()))?,
        })
    }
}

/// A change to one record in the record index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordChange {
    /// The collection (an NSID).
    pub collection: String,
    /// The record key.
    pub rkey: String,
    /// The record's new block, or `None` when it is deleted. The commit
    /// stores the block too.
    ///
    /// The index entry holds its CID and, for records up to
    /// [`INLINE_RECORD_BYTES`](super::index_value::INLINE_RECORD_BYTES), a copy of its bytes: reading or listing
    /// records is then one lookup, not one per record.
    pub record: Option<Block>,
}

/// One row of the record index, as [`Store::record_index_rows`](super::state::Store::record_index_rows) reads it.
/// Its key and its value are decoded separately, so that a damaged row is
/// reported as such and the rows after it can still be read.
#[derive(Debug)]
pub struct IndexRow {
    /// The row's storage key; the next page starts after it.
    pub key: Bytes,
    /// `(collection, rkey)`, decoded from the key.
    pub path: Result<(String, String), Error>,
    /// The record's CID and, when the index keeps them inline, its bytes
    /// (unchecked), decoded from the value.
    pub value: Result<(Cid, Option<Bytes>), Error>,
}

/// Everything one commit writes, atomically.
#[derive(Debug, Clone)]
pub struct Commit {
    /// The repository.
    pub repo: String,
    /// The head commit the writer built on (`None`: a new repository).
    /// The commit fails with [`Error::Conflict`] unless it still is.
    pub expected: Option<Cid>,
    /// The new head.
    pub head: Head,
    /// New blocks besides the records' (which come with `records`): the
    /// commit and shard blocks.
    pub blocks: Vec<Block>,
    /// Record index changes.
    pub records: Vec<RecordChange>,
    /// Collection declarations to set, as (collection, opaque bytes).
    pub collections: Vec<(String, Bytes)>,
    /// Field-index changes the commit causes (column mappings, dictionary
    /// entries, bitmap-container merges), applied in the same batch.
    pub index: Vec<WriteOp>,
    /// How the commit log changes besides gaining `head` (an import's
    /// history; nothing else for a write).
    pub history: LogChange,
    /// A firehose event for the commit (opaque bytes): stored under the
    /// next server-wide sequence number in the same atomic batch
    /// ([`PendingCommit::seq`](super::write::PendingCommit::seq), [`Store::events`](super::state::Store::events)).
    pub event: Option<Bytes>,
    /// The commit's events of the Jetstream-compatible stream, stored in
    /// the same atomic batch under their times ([`Store::stream_events`](super::state::Store::stream_events)).
    pub stream: Option<StreamEvents>,
}

/// A commit's stream events, stamped with their times as the commit lands:
/// the first event's time is the writer's `now_micros` or, when the stream
/// already holds an event that late, the microsecond after the newest one;
/// each next event's time is one more. So times increase strictly in the
/// order commits land, and serve as a cursor.
#[derive(Clone)]
pub struct StreamEvents {
    /// The writer's clock, unix microseconds.
    pub now_micros: u64,
    /// How many events.
    pub count: usize,
    /// Event `i`'s stored bytes, given its time.
    pub encode: std::sync::Arc<dyn Fn(usize, u64) -> Bytes + Send + Sync>,
}

impl std::fmt::Debug for StreamEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamEvents")
            .field("now_micros", &self.now_micros)
            .field("count", &self.count)
            .finish_non_exhaustive()
    }
}

/// An import's change to a repository's commit log, besides its new head.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogChange {
    /// Commits before the head to enter in the log with it. Their blocks
    /// come in [`Commit::blocks`].
    pub older: Vec<Head>,
    /// Whether the log's present entries go: the repository's history is
    /// replaced by the one imported (a repository that had no records).
    pub replace: bool,
}
