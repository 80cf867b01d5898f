//! datarepo's record types and their key layouts (see `docs/storage-keys.md`).
//!
//! Every key is `[0x01, type << 4]` followed by order-preserving fields:
//!
//! | type | name | fields after the prefix |
//! | --- | --- | --- |
//! | `0x1` | block | CID bytes (tail) |
//! | `0x2` | head | repo (string) |
//! | `0x3` | commit log | repo (string), rev (u64) |
//! | `0x4` | record index | repo, collection, rkey (strings) |
//! | `0x5` | collection | repo, collection (strings) |
//! | `0x6` | bitmap container | txkey bytes (tail) |
//! | `0x7` | block delta | CID bytes (tail) |
//! | `0x8` | field index | repo, collection, path (strings); repo alone: the index epoch |
//! | `0x9` | column | scope (u32), rkey (string) |
//! | `0xA` | column rkey | scope (u32), column (u64) |
//! | `0xB` | keyword row | scope (u32), path (string), value (bytes) |
//! | `0xC` | keyword value | scope (u32), path (string), row (u64) |
//! | `0xD` | signing keys | repo (string) |
//! | `0xE` | event | seq (u64) |
//! | `0xF` | lexicon | repo, NSID (strings) |
//!
//! Two types use their reserved low nibble (RFC 0001 leaves it to the
//! type): record index `0x41`, a record's history (repo, collection, rkey,
//! rev; or repo alone: where the history starts), and collection `0x51`, a
//! collection's record count (repo, collection).

use std::{borrow::Cow, fmt};

use crate::{
    error::Error, fields::KeyBuilder, fields::KeyReader, prefix::KeyPrefix, prefix::KeyRange,
    prefix::RecordTag,
};

/// The kinds of record datarepo stores, one per record type nibble.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum RecordType {
    /// A content-addressed block: CID → bytes.
    Block = 0x1,
    /// A repository head: repo → latest commit and rev.
    Head = 0x2,
    /// The commit log: (repo, rev) → commit CID.
    CommitLog = 0x3,
    /// The record index: (repo, collection, rkey) → record CID.
    RecordIndex = 0x4,
    /// A collection declaration: (repo, collection) → key type / lexicon.
    Collection = 0x5,
    /// A roaring-bitmap container, keyed by its txkey.
    Bitmap = 0x6,
    /// A block stored as a change to another block: CID → delta.
    BlockDelta = 0x7,
    /// A field-index declaration: (repo, collection, path) → kind, scope.
    FieldIndex = 0x8,
    /// A record's column in its collection's indexes: (scope, rkey) → column.
    Column = 0x9,
    /// The reverse of [`RecordType::Column`]: (scope, column) → rkey.
    ColumnRkey = 0xA,
    /// A keyword index's dictionary: (scope, path, value) → row.
    KeywordRow = 0xB,
    /// The reverse of [`RecordType::KeywordRow`]: (scope, path, row) → value.
    KeywordValue = 0xC,
    /// A repository's signing keys: repo → its public keys and key file.
    SigningKeys = 0xD,
    /// A firehose event: seq → the commit event, server-wide.
    Event = 0xE,
    /// A Lexicon document that declares no collection (definitions that
    /// record Lexicons refer to): (repo, NSID) → the document.
    Lexicon = 0xF,
}

impl RecordType {
    /// Every record type, in tag order.
    pub const ALL: [Self; 15] = [
        Self::Block,
        Self::Head,
        Self::CommitLog,
        Self::RecordIndex,
        Self::Collection,
        Self::Bitmap,
        Self::BlockDelta,
        Self::FieldIndex,
        Self::Column,
        Self::ColumnRkey,
        Self::KeywordRow,
        Self::KeywordValue,
        Self::SigningKeys,
        Self::Event,
        Self::Lexicon,
    ];

    /// The record type for a tag.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownRecordType`] for a type datarepo does not define,
    /// [`Error::ReservedBits`] when the reserved low nibble is not 0.
    pub fn from_tag(tag: RecordTag) -> Result<Self, Error> {
        if tag.reserved() != 0 {
            return Err(Error::ReservedBits {
                tag: tag.byte(),
                reserved: tag.reserved(),
            });
        }
        Self::ALL
            .into_iter()
            .find(|t| *t as u8 == tag.record_type())
            .ok_or(Error::UnknownRecordType {
                record_type: tag.record_type(),
                tag: tag.byte(),
            })
    }

    /// The tag datarepo writes for this type (reserved bits zero).
    #[must_use]
    pub const fn tag(self) -> RecordTag {
        match RecordTag::new(self as u8, 0) {
            Ok(tag) => tag,
            // Unreachable: every variant is in 1..=15.
            Err(_) => panic!("record type out of range"),
        }
    }

    /// The key prefix for this type.
    #[must_use]
    pub const fn prefix(self) -> KeyPrefix {
        KeyPrefix::new(self.tag())
    }

    /// A short lowercase name (`block`, `head`, …).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Block => "block",
            Self::Head => "head",
            Self::CommitLog => "commit-log",
            Self::RecordIndex => "record-index",
            Self::Collection => "collection",
            Self::Bitmap => "bitmap",
            Self::BlockDelta => "block-delta",
            Self::FieldIndex => "field-index",
            Self::Column => "column",
            Self::ColumnRkey => "column-rkey",
            Self::KeywordRow => "keyword-row",
            Self::KeywordValue => "keyword-value",
            Self::SigningKeys => "signing-keys",
            Self::Event => "event",
            Self::Lexicon => "lexicon",
        }
    }

    /// All keys of this type.
    #[must_use]
    pub fn range(self) -> KeyRange {
        self.prefix().record_type_range()
    }
}

impl fmt::Display for RecordType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The key of a block.
#[must_use]
pub fn block_key(cid: &[u8]) -> Vec<u8> {
    KeyBuilder::new(RecordType::Block.prefix())
        .tail(cid)
        .finish()
}

/// The key of a block stored as a delta (a change to another block).
#[must_use]
pub fn block_delta_key(cid: &[u8]) -> Vec<u8> {
    KeyBuilder::new(RecordType::BlockDelta.prefix())
        .tail(cid)
        .finish()
}

/// The key of a repository's head.
#[must_use]
pub fn head_key(repo: &str) -> Vec<u8> {
    KeyBuilder::new(RecordType::Head.prefix())
        .str(repo)
        .finish()
}

/// The key of a repository's signing keys.
#[must_use]
pub fn signing_keys_key(repo: &str) -> Vec<u8> {
    KeyBuilder::new(RecordType::SigningKeys.prefix())
        .str(repo)
        .finish()
}

/// The key of a firehose event.
#[must_use]
pub fn event_key(seq: u64) -> Vec<u8> {
    KeyBuilder::new(RecordType::Event.prefix())
        .u64(seq)
        .finish()
}

/// Every firehose event, in sequence order (not the stream's events,
/// which share the event type under their own tag).
#[must_use]
pub fn events_range() -> KeyRange {
    KeyRange::prefix(&KeyBuilder::new(RecordType::Event.prefix()).finish())
}

/// The tag of a stream event (the Jetstream-compatible `/subscribe`
/// stream): the event type, reserved bits 1.
const STREAM_EVENT_TAG: u8 = (RecordType::Event as u8) << 4 | 1;

/// The key of a stream event: its time, unix microseconds (strictly
/// increasing across the stream).
#[must_use]
pub fn stream_event_key(time_us: u64) -> Vec<u8> {
    KeyBuilder::new(prefix_of(STREAM_EVENT_TAG))
        .u64(time_us)
        .finish()
}

/// Every stream event, in time order.
#[must_use]
pub fn stream_events_range() -> KeyRange {
    KeyRange::prefix(&KeyBuilder::new(prefix_of(STREAM_EVENT_TAG)).finish())
}

/// The tag of a partitioned store's merged event log (kept in partition
/// 0): the event type, reserved bits 2.
const MERGED_EVENT_TAG: u8 = (RecordType::Event as u8) << 4 | 2;

/// The tag of the merged log's progress through one partition's events:
/// the event type, reserved bits 3.
const MERGE_MARK_TAG: u8 = (RecordType::Event as u8) << 4 | 3;

/// The key of an entry of the merged event log: its sequence number in the
/// merged stream. Its value names the partition and that partition's event.
#[must_use]
pub fn merged_event_key(seq: u64) -> Vec<u8> {
    KeyBuilder::new(prefix_of(MERGED_EVENT_TAG))
        .u64(seq)
        .finish()
}

/// Every entry of the merged event log, in order.
#[must_use]
pub fn merged_events_range() -> KeyRange {
    KeyRange::prefix(&KeyBuilder::new(prefix_of(MERGED_EVENT_TAG)).finish())
}

/// The key of the merged log's mark for a partition: the last of its
/// events the merged log holds.
#[must_use]
pub fn merge_mark_key(partition: u32) -> Vec<u8> {
    KeyBuilder::new(prefix_of(MERGE_MARK_TAG))
        .u32(partition)
        .finish()
}

/// Every partition's mark, in partition order.
#[must_use]
pub fn merge_marks_range() -> KeyRange {
    KeyRange::prefix(&KeyBuilder::new(prefix_of(MERGE_MARK_TAG)).finish())
}

/// The tag of a partitioned store's merged `/subscribe` stream log (kept
/// in partition 0): the event type, reserved bits 4.
const MERGED_STREAM_EVENT_TAG: u8 = (RecordType::Event as u8) << 4 | 4;

/// The tag of the merged stream log's progress through one partition's
/// stream events: the event type, reserved bits 5.
const STREAM_MERGE_MARK_TAG: u8 = (RecordType::Event as u8) << 4 | 5;

/// The key of an entry of the merged stream log: its time in the merged
/// stream (unix microseconds, strictly increasing, never before the
/// event's own). Its value names the partition and the event's time there.
#[must_use]
pub fn merged_stream_event_key(time_us: u64) -> Vec<u8> {
    KeyBuilder::new(prefix_of(MERGED_STREAM_EVENT_TAG))
        .u64(time_us)
        .finish()
}

/// Every entry of the merged stream log, in order.
#[must_use]
pub fn merged_stream_events_range() -> KeyRange {
    KeyRange::prefix(&KeyBuilder::new(prefix_of(MERGED_STREAM_EVENT_TAG)).finish())
}

/// The key of the merged stream log's mark for a partition: the time of
/// the last of its stream events the log holds.
#[must_use]
pub fn stream_merge_mark_key(partition: u32) -> Vec<u8> {
    KeyBuilder::new(prefix_of(STREAM_MERGE_MARK_TAG))
        .u32(partition)
        .finish()
}

/// Every partition's stream mark, in partition order.
#[must_use]
pub fn stream_merge_marks_range() -> KeyRange {
    KeyRange::prefix(&KeyBuilder::new(prefix_of(STREAM_MERGE_MARK_TAG)).finish())
}

/// The key of one commit-log entry.
#[must_use]
pub fn commit_log_key(repo: &str, rev: u64) -> Vec<u8> {
    KeyBuilder::new(RecordType::CommitLog.prefix())
        .str(repo)
        .u64(rev)
        .finish()
}

/// All commit-log entries of a repository, in rev order.
#[must_use]
pub fn commit_log_range(repo: &str) -> KeyRange {
    KeyRange::prefix(
        KeyBuilder::new(RecordType::CommitLog.prefix())
            .str(repo)
            .as_bytes(),
    )
}

/// The key of a record-index entry.
#[must_use]
pub fn record_index_key(repo: &str, collection: &str, rkey: &str) -> Vec<u8> {
    KeyBuilder::new(RecordType::RecordIndex.prefix())
        .str(repo)
        .str(collection)
        .str(rkey)
        .finish()
}

/// All record-index entries of a collection, in rkey order.
#[must_use]
pub fn record_index_range(repo: &str, collection: &str) -> KeyRange {
    KeyRange::prefix(
        KeyBuilder::new(RecordType::RecordIndex.prefix())
            .str(repo)
            .str(collection)
            .as_bytes(),
    )
}

/// All record-index entries of a repository: by collection, then rkey.
#[must_use]
pub fn repo_record_index_range(repo: &str) -> KeyRange {
    KeyRange::prefix(
        KeyBuilder::new(RecordType::RecordIndex.prefix())
            .str(repo)
            .as_bytes(),
    )
}

/// The key of a collection declaration.
#[must_use]
pub fn collection_key(repo: &str, collection: &str) -> Vec<u8> {
    KeyBuilder::new(RecordType::Collection.prefix())
        .str(repo)
        .str(collection)
        .finish()
}

/// All collection declarations of a repository, in collection order.
#[must_use]
pub fn collection_range(repo: &str) -> KeyRange {
    KeyRange::prefix(
        KeyBuilder::new(RecordType::Collection.prefix())
            .str(repo)
            .as_bytes(),
    )
}

/// The tag of a record's history entries: the record-index type with its
/// reserved bits set to 1.
const RECORD_HISTORY_TAG: u8 = (RecordType::RecordIndex as u8) << 4 | 1;

/// The tag of a collection's record count: the collection type with its
/// reserved bits set to 1.
const RECORD_COUNT_TAG: u8 = (RecordType::Collection as u8) << 4 | 1;

/// The tag of an account (DID → the account): the signing-keys type, the
/// identity of a repository, with its reserved bits set to 1.
const ACCOUNT_TAG: u8 = (RecordType::SigningKeys as u8) << 4 | 1;

/// The tag of a handle (lowercase handle → DID): reserved bits 2.
const HANDLE_TAG: u8 = (RecordType::SigningKeys as u8) << 4 | 2;

/// The tag of an open session (refresh-token id → DID, expiry): reserved
/// bits 3.
const REFRESH_TOKEN_TAG: u8 = (RecordType::SigningKeys as u8) << 4 | 3;

/// The tag of an invite code (code → its uses): reserved bits 4.
const INVITE_CODE_TAG: u8 = (RecordType::SigningKeys as u8) << 4 | 4;

/// The tag of an app password (DID, name → its hash): reserved bits 5.
const APP_PASSWORD_TAG: u8 = (RecordType::SigningKeys as u8) << 4 | 5;

fn prefix_of(tag: u8) -> KeyPrefix {
    match RecordTag::from_byte(tag) {
        Ok(tag) => KeyPrefix::new(tag),
        // Unreachable: both tags have a record type in 1..=15.
        Err(_) => unreachable!("record tag {tag:#04x} has no record type"),
    }
}

/// The key of an account: its DID.
#[must_use]
pub fn account_key(did: &str) -> Vec<u8> {
    KeyBuilder::new(prefix_of(ACCOUNT_TAG)).str(did).finish()
}

/// Every account, in DID order.
#[must_use]
pub fn accounts_range() -> KeyRange {
    KeyRange::prefix(&KeyBuilder::new(prefix_of(ACCOUNT_TAG)).finish())
}

/// The key of a handle (lowercase), whose value is its account's DID.
#[must_use]
pub fn handle_key(handle: &str) -> Vec<u8> {
    KeyBuilder::new(prefix_of(HANDLE_TAG)).str(handle).finish()
}

/// The key of an open session: its refresh token's id.
#[must_use]
pub fn refresh_token_key(jti: &str) -> Vec<u8> {
    KeyBuilder::new(prefix_of(REFRESH_TOKEN_TAG))
        .str(jti)
        .finish()
}

/// Every open session, in refresh-token id order.
#[must_use]
pub fn refresh_tokens_range() -> KeyRange {
    KeyRange::prefix(&KeyBuilder::new(prefix_of(REFRESH_TOKEN_TAG)).finish())
}

/// The key of an invite code.
#[must_use]
pub fn invite_code_key(code: &str) -> Vec<u8> {
    KeyBuilder::new(prefix_of(INVITE_CODE_TAG))
        .str(code)
        .finish()
}

/// Every invite code, in code order.
#[must_use]
pub fn invite_codes_range() -> KeyRange {
    KeyRange::prefix(&KeyBuilder::new(prefix_of(INVITE_CODE_TAG)).finish())
}

/// The key of the app password `name` of the account `did`.
#[must_use]
pub fn app_password_key(did: &str, name: &str) -> Vec<u8> {
    KeyBuilder::new(prefix_of(APP_PASSWORD_TAG))
        .str(did)
        .str(name)
        .finish()
}

/// Every app password of the account `did`, in name order.
#[must_use]
pub fn app_passwords_range(did: &str) -> KeyRange {
    KeyRange::prefix(
        &KeyBuilder::new(prefix_of(APP_PASSWORD_TAG))
            .str(did)
            .finish(),
    )
}

/// The key of a collection's record count: how many records it holds,
/// kept in the same write as every commit that changes the number.
#[must_use]
pub fn record_count_key(repo: &str, collection: &str) -> Vec<u8> {
    KeyBuilder::new(prefix_of(RECORD_COUNT_TAG))
        .str(repo)
        .str(collection)
        .finish()
}

/// The tag of a record's blob references (repo, collection, rkey → the
/// blob CIDs the record refers to): the record-index type, reserved bits 2.
const RECORD_BLOBS_TAG: u8 = (RecordType::RecordIndex as u8) << 4 | 2;

/// The tag of a repository's blob (repo, CID → what it knows of it):
/// reserved bits 3.
const BLOB_TAG: u8 = (RecordType::RecordIndex as u8) << 4 | 3;

/// The key of blob `cid` (its string form) of repository `repo`.
#[must_use]
pub fn blob_key(repo: &str, cid: &str) -> Vec<u8> {
    KeyBuilder::new(prefix_of(BLOB_TAG))
        .str(repo)
        .str(cid)
        .finish()
}

/// Every blob of a repository, in CID order.
#[must_use]
pub fn blobs_range(repo: &str) -> KeyRange {
    KeyRange::prefix(KeyBuilder::new(prefix_of(BLOB_TAG)).str(repo).as_bytes())
}

/// Every blob of every repository.
#[must_use]
pub fn all_blobs_range() -> KeyRange {
    KeyRange::prefix(&KeyBuilder::new(prefix_of(BLOB_TAG)).finish())
}

/// The key of the blob references of record `collection/rkey`.
#[must_use]
pub fn record_blobs_key(repo: &str, collection: &str, rkey: &str) -> Vec<u8> {
    KeyBuilder::new(prefix_of(RECORD_BLOBS_TAG))
        .str(repo)
        .str(collection)
        .str(rkey)
        .finish()
}

/// Every record's blob references in a repository.
#[must_use]
pub fn repo_record_blobs_range(repo: &str) -> KeyRange {
    KeyRange::prefix(
        KeyBuilder::new(prefix_of(RECORD_BLOBS_TAG))
            .str(repo)
            .as_bytes(),
    )
}

/// Every record count of a repository, in collection order.
#[must_use]
pub fn record_counts_range(repo: &str) -> KeyRange {
    KeyRange::prefix(
        KeyBuilder::new(prefix_of(RECORD_COUNT_TAG))
            .str(repo)
            .as_bytes(),
    )
}

/// The key of one entry of a record's history: the commit with this rev
/// created, updated or deleted the record.
#[must_use]
pub fn record_history_key(repo: &str, collection: &str, rkey: &str, rev: u64) -> Vec<u8> {
    KeyBuilder::new(prefix_of(RECORD_HISTORY_TAG))
        .str(repo)
        .str(collection)
        .str(rkey)
        .u64(rev)
        .finish()
}

/// A record's history entries, in rev order.
#[must_use]
pub fn record_history_range(repo: &str, collection: &str, rkey: &str) -> KeyRange {
    KeyRange::prefix(
        KeyBuilder::new(prefix_of(RECORD_HISTORY_TAG))
            .str(repo)
            .str(collection)
            .str(rkey)
            .as_bytes(),
    )
}

/// Every history entry of a repository (and its history start first).
#[must_use]
pub fn repo_history_range(repo: &str) -> KeyRange {
    KeyRange::prefix(
        KeyBuilder::new(prefix_of(RECORD_HISTORY_TAG))
            .str(repo)
            .as_bytes(),
    )
}

/// The key of where a repository's record histories start: the lowest rev
/// from which every commit's changes have history entries (commits below
/// it, written before histories were kept or imported, have none). Under
/// the history tag, with the repository alone: it sorts before the
/// repository's entries.
#[must_use]
pub fn history_start_key(repo: &str) -> Vec<u8> {
    KeyBuilder::new(prefix_of(RECORD_HISTORY_TAG))
        .str(repo)
        .finish()
}

/// The key of a Lexicon document that declares no collection.
#[must_use]
pub fn lexicon_key(repo: &str, nsid: &str) -> Vec<u8> {
    KeyBuilder::new(RecordType::Lexicon.prefix())
        .str(repo)
        .str(nsid)
        .finish()
}

/// All such Lexicon documents of a repository, in NSID order.
#[must_use]
pub fn lexicon_range(repo: &str) -> KeyRange {
    KeyRange::prefix(
        KeyBuilder::new(RecordType::Lexicon.prefix())
            .str(repo)
            .as_bytes(),
    )
}

/// The key of a bitmap container, wrapping its txkey.
#[must_use]
pub fn bitmap_key(txkey: &[u8]) -> Vec<u8> {
    KeyBuilder::new(RecordType::Bitmap.prefix())
        .tail(txkey)
        .finish()
}

/// The key of a field-index declaration.
#[must_use]
pub fn field_index_key(repo: &str, collection: &str, path: &str) -> Vec<u8> {
    KeyBuilder::new(RecordType::FieldIndex.prefix())
        .str(repo)
        .str(collection)
        .str(path)
        .finish()
}

/// The key of a repository's index epoch: a counter that every change to
/// its field indexes other than a commit (declaring, dropping, rebuilding)
/// raises in the same write, so that a reader in another process knows its
/// cached index data is stale even though the head did not move. Under the
/// field-index type, with the repository alone (a declaration adds a
/// collection and a path): it sorts before the repository's declarations.
#[must_use]
pub fn index_epoch_key(repo: &str) -> Vec<u8> {
    KeyBuilder::new(RecordType::FieldIndex.prefix())
        .str(repo)
        .finish()
}

/// The field-index declarations of a repository (`collection: None`: with
/// its [`index_epoch_key`] first) or of one of its collections, in
/// (collection, path) order.
#[must_use]
pub fn field_index_range(repo: &str, collection: Option<&str>) -> KeyRange {
    let b = KeyBuilder::new(RecordType::FieldIndex.prefix()).str(repo);
    KeyRange::prefix(&match collection {
        Some(c) => b.str(c).finish(),
        None => b.finish(),
    })
}

/// The key of a record's column in its collection's indexes (scope).
#[must_use]
pub fn column_key(scope: u32, rkey: &str) -> Vec<u8> {
    KeyBuilder::new(RecordType::Column.prefix())
        .u32(scope)
        .str(rkey)
        .finish()
}

/// Column-rkey keys whose column field is at least this (and below
/// [`COLUMN_FENCES`]) hold a *packed block*: `COLUMN_PACKED + k` holds the
/// rkeys of columns `256·k …` (an index build's, `docs/storage-keys.md`).
pub const COLUMN_PACKED: u64 = 1 << 62;

/// Column-rkey keys whose column field is at least this hold a *fence
/// chunk*: `COLUMN_FENCES + j` lists the first rkey of packed blocks
/// `4096·j …`.
pub const COLUMN_FENCES: u64 = 1 << 63;

/// The key naming the rkey of a column (or, with a column field of
/// [`COLUMN_PACKED`] and above, a packed block or fence chunk).
#[must_use]
pub fn column_rkey_key(scope: u32, column: u64) -> Vec<u8> {
    KeyBuilder::new(RecordType::ColumnRkey.prefix())
        .u32(scope)
        .u64(column)
        .finish()
}

/// The key of a keyword value's row in the dictionary of the index at
/// `path`; `value` is the value's tagged bytes (`docs/storage-keys.md`).
#[must_use]
pub fn keyword_row_key(scope: u32, path: &str, value: &[u8]) -> Vec<u8> {
    KeyBuilder::new(RecordType::KeywordRow.prefix())
        .u32(scope)
        .str(path)
        .bytes(value)
        .finish()
}

/// The dictionary keys of the index at `path` whose values' tagged bytes
/// start with `value_prefix`, in value order (a text index's words with a
/// prefix).
#[must_use]
pub fn keyword_rows_with_prefix(scope: u32, path: &str, value_prefix: &[u8]) -> KeyRange {
    let mut key = KeyBuilder::new(RecordType::KeywordRow.prefix())
        .u32(scope)
        .str(path)
        .finish();
    // The value's escaped bytes without their terminator: every longer
    // value's key extends them.
    crate::encode_terminated(&mut key, value_prefix);
    key.pop();
    KeyRange::prefix(&key)
}

/// The key naming the value of a keyword index's row.
#[must_use]
pub fn keyword_value_key(scope: u32, path: &str, row: u64) -> Vec<u8> {
    KeyBuilder::new(RecordType::KeywordValue.prefix())
        .u32(scope)
        .str(path)
        .u64(row)
        .finish()
}

/// Every key of `record_type` (one of the scoped types: column, column
/// rkey, keyword row, keyword value) in `scope`, optionally narrowed to
/// one index `path` (keyword types only).
#[must_use]
pub fn scope_range(record_type: RecordType, scope: u32, path: Option<&str>) -> KeyRange {
    let b = KeyBuilder::new(record_type.prefix()).u32(scope);
    KeyRange::prefix(&match path {
        Some(p) => b.str(p).finish(),
        None => b.finish(),
    })
}

/// A decoded datarepo storage key.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodedKey<'a> {
    /// A block key.
    Block {
        /// The CID bytes.
        cid: &'a [u8],
    },
    /// A head key.
    Head {
        /// The repository.
        repo: Cow<'a, str>,
    },
    /// A commit-log key.
    CommitLog {
        /// The repository.
        repo: Cow<'a, str>,
        /// The rev (a TID's value).
        rev: u64,
    },
    /// A record-index key.
    RecordIndex {
        /// The repository.
        repo: Cow<'a, str>,
        /// The collection.
        collection: Cow<'a, str>,
        /// The record key.
        rkey: Cow<'a, str>,
    },
    /// A record-history key ([`record_history_key`]).
    RecordHistory {
        /// The repository.
        repo: Cow<'a, str>,
        /// The collection.
        collection: Cow<'a, str>,
        /// The record key.
        rkey: Cow<'a, str>,
        /// The rev of the commit that changed the record.
        rev: u64,
    },
    /// A history-start key ([`history_start_key`]).
    HistoryStart {
        /// The repository.
        repo: Cow<'a, str>,
    },
    /// A record-count key ([`record_count_key`]).
    RecordCount {
        /// The repository.
        repo: Cow<'a, str>,
        /// The collection.
        collection: Cow<'a, str>,
    },
    /// A collection key.
    Collection {
        /// The repository.
        repo: Cow<'a, str>,
        /// The collection.
        collection: Cow<'a, str>,
    },
    /// A bitmap container key.
    Bitmap {
        /// The txkey bytes.
        txkey: &'a [u8],
    },
    /// A block-delta key.
    BlockDelta {
        /// The CID bytes.
        cid: &'a [u8],
    },
    /// A field-index declaration key.
    FieldIndex {
        /// The repository.
        repo: Cow<'a, str>,
        /// The collection.
        collection: Cow<'a, str>,
        /// The indexed path.
        path: Cow<'a, str>,
    },
    /// An index-epoch key ([`index_epoch_key`]).
    IndexEpoch {
        /// The repository.
        repo: Cow<'a, str>,
    },
    /// A column key.
    Column {
        /// The collection's index scope.
        scope: u32,
        /// The record key.
        rkey: Cow<'a, str>,
    },
    /// A column-rkey key.
    ColumnRkey {
        /// The collection's index scope.
        scope: u32,
        /// The column.
        column: u64,
    },
    /// A keyword-row key.
    KeywordRow {
        /// The collection's index scope.
        scope: u32,
        /// The indexed path.
        path: Cow<'a, str>,
        /// The value's tagged bytes.
        value: Cow<'a, [u8]>,
    },
    /// A keyword-value key.
    KeywordValue {
        /// The collection's index scope.
        scope: u32,
        /// The indexed path.
        path: Cow<'a, str>,
        /// The row.
        row: u64,
    },
    /// A signing-keys key.
    SigningKeys {
        /// The repository.
        repo: Cow<'a, str>,
    },
    /// An account key.
    Account {
        /// The account's DID.
        did: Cow<'a, str>,
    },
    /// A handle key.
    Handle {
        /// The handle, lowercase.
        handle: Cow<'a, str>,
    },
    /// An open session's key.
    RefreshToken {
        /// The refresh token's id.
        jti: Cow<'a, str>,
    },
    /// A record's blob references' key.
    RecordBlobs {
        /// The repository.
        repo: Cow<'a, str>,
        /// The collection.
        collection: Cow<'a, str>,
        /// The record key.
        rkey: Cow<'a, str>,
    },
    /// A repository's blob's key.
    Blob {
        /// The repository.
        repo: Cow<'a, str>,
        /// The blob's CID (its string form).
        cid: Cow<'a, str>,
    },
    /// An invite code's key.
    InviteCode {
        /// The code.
        code: Cow<'a, str>,
    },
    /// An app password's key.
    AppPassword {
        /// The account's DID.
        did: Cow<'a, str>,
        /// The app password's name.
        name: Cow<'a, str>,
    },
    /// A firehose event key.
    Event {
        /// The event's sequence number.
        seq: u64,
    },
    /// A stream event key.
    StreamEvent {
        /// The event's time, unix microseconds.
        time_us: u64,
    },
    /// A merged event log entry's key.
    MergedEvent {
        /// Its sequence number in the merged stream.
        seq: u64,
    },
    /// A merge mark's key.
    MergeMark {
        /// The partition.
        partition: u32,
    },
    /// A merged stream log entry's key.
    MergedStreamEvent {
        /// Its time in the merged stream, unix microseconds.
        time_us: u64,
    },
    /// A stream merge mark's key.
    StreamMergeMark {
        /// The partition.
        partition: u32,
    },
    /// A Lexicon document key.
    Lexicon {
        /// The repository.
        repo: Cow<'a, str>,
        /// The document's NSID.
        nsid: Cow<'a, str>,
    },
}

impl DecodedKey<'_> {
    /// The record type.
    #[must_use]
    pub fn record_type(&self) -> RecordType {
        match self {
            Self::Block { .. } => RecordType::Block,
            Self::Head { .. } => RecordType::Head,
            Self::CommitLog { .. } => RecordType::CommitLog,
            Self::RecordIndex { .. }
            | Self::RecordHistory { .. }
            | Self::HistoryStart { .. }
            | Self::RecordBlobs { .. }
            | Self::Blob { .. } => RecordType::RecordIndex,
            Self::Collection { .. } | Self::RecordCount { .. } => RecordType::Collection,
            Self::Bitmap { .. } => RecordType::Bitmap,
            Self::BlockDelta { .. } => RecordType::BlockDelta,
            Self::FieldIndex { .. } | Self::IndexEpoch { .. } => RecordType::FieldIndex,
            Self::Column { .. } => RecordType::Column,
            Self::ColumnRkey { .. } => RecordType::ColumnRkey,
            Self::KeywordRow { .. } => RecordType::KeywordRow,
            Self::KeywordValue { .. } => RecordType::KeywordValue,
            Self::SigningKeys { .. }
            | Self::Account { .. }
            | Self::Handle { .. }
            | Self::RefreshToken { .. }
            | Self::InviteCode { .. }
            | Self::AppPassword { .. } => RecordType::SigningKeys,
            Self::Event { .. }
            | Self::StreamEvent { .. }
            | Self::MergedEvent { .. }
            | Self::MergeMark { .. }
            | Self::MergedStreamEvent { .. }
            | Self::StreamMergeMark { .. } => RecordType::Event,
            Self::Lexicon { .. } => RecordType::Lexicon,
        }
    }
}

/// Decodes any datarepo storage key.
///
/// # Errors
///
/// A prefix error, [`Error::UnknownRecordType`], or a field error naming
/// the byte where decoding failed. Never panics.
pub fn decode_key(key: &[u8]) -> Result<DecodedKey<'_>, Error> {
    let mut r = KeyReader::new(key)?;
    let decoded = match r.prefix().tag().byte() {
        RECORD_HISTORY_TAG => {
            let repo = r.str()?;
            if r.position() == key.len() {
                DecodedKey::HistoryStart { repo }
            } else {
                DecodedKey::RecordHistory {
                    repo,
                    collection: r.str()?,
                    rkey: r.str()?,
                    rev: r.u64()?,
                }
            }
        }
        RECORD_COUNT_TAG => DecodedKey::RecordCount {
            repo: r.str()?,
            collection: r.str()?,
        },
        RECORD_BLOBS_TAG => DecodedKey::RecordBlobs {
            repo: r.str()?,
            collection: r.str()?,
            rkey: r.str()?,
        },
        BLOB_TAG => DecodedKey::Blob {
            repo: r.str()?,
            cid: r.str()?,
        },
        STREAM_EVENT_TAG => DecodedKey::StreamEvent { time_us: r.u64()? },
        MERGED_EVENT_TAG => DecodedKey::MergedEvent { seq: r.u64()? },
        MERGE_MARK_TAG => DecodedKey::MergeMark {
            partition: r.u32()?,
        },
        MERGED_STREAM_EVENT_TAG => DecodedKey::MergedStreamEvent { time_us: r.u64()? },
        STREAM_MERGE_MARK_TAG => DecodedKey::StreamMergeMark {
            partition: r.u32()?,
        },
        ACCOUNT_TAG => DecodedKey::Account { did: r.str()? },
        HANDLE_TAG => DecodedKey::Handle { handle: r.str()? },
        REFRESH_TOKEN_TAG => DecodedKey::RefreshToken { jti: r.str()? },
        INVITE_CODE_TAG => DecodedKey::InviteCode { code: r.str()? },
        APP_PASSWORD_TAG => DecodedKey::AppPassword {
            did: r.str()?,
            name: r.str()?,
        },
        tag => decode_reserved_zero(&mut r, tag, key.len())?,
    };
    r.finish()?;
    Ok(decoded)
}

/// Decodes the fields of a key whose tag has no reserved bits set.
fn decode_reserved_zero<'a>(
    r: &mut KeyReader<'a>,
    tag: u8,
    len: usize,
) -> Result<DecodedKey<'a>, Error> {
    let tag = RecordTag::from_byte(tag)?;
    Ok(match RecordType::from_tag(tag)? {
        RecordType::Block => DecodedKey::Block { cid: r.tail() },
        RecordType::Head => DecodedKey::Head { repo: r.str()? },
        RecordType::CommitLog => DecodedKey::CommitLog {
            repo: r.str()?,
            rev: r.u64()?,
        },
        RecordType::RecordIndex => DecodedKey::RecordIndex {
            repo: r.str()?,
            collection: r.str()?,
            rkey: r.str()?,
        },
        RecordType::Collection => DecodedKey::Collection {
            repo: r.str()?,
            collection: r.str()?,
        },
        RecordType::Bitmap => DecodedKey::Bitmap { txkey: r.tail() },
        RecordType::BlockDelta => DecodedKey::BlockDelta { cid: r.tail() },
        RecordType::FieldIndex => {
            let repo = r.str()?;
            if r.position() == len {
                DecodedKey::IndexEpoch { repo }
            } else {
                DecodedKey::FieldIndex {
                    repo,
                    collection: r.str()?,
                    path: r.str()?,
                }
            }
        }
        RecordType::Column => DecodedKey::Column {
            scope: r.u32()?,
            rkey: r.str()?,
        },
        RecordType::ColumnRkey => DecodedKey::ColumnRkey {
            scope: r.u32()?,
            column: r.u64()?,
        },
        RecordType::KeywordRow => DecodedKey::KeywordRow {
            scope: r.u32()?,
            path: r.str()?,
            value: r.bytes()?,
        },
        RecordType::KeywordValue => DecodedKey::KeywordValue {
            scope: r.u32()?,
            path: r.str()?,
            row: r.u64()?,
        },
        RecordType::SigningKeys => DecodedKey::SigningKeys { repo: r.str()? },
        RecordType::Event => DecodedKey::Event { seq: r.u64()? },
        RecordType::Lexicon => DecodedKey::Lexicon {
            repo: r.str()?,
            nsid: r.str()?,
        },
    })
}
