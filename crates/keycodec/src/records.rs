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

use std::{borrow::Cow, fmt};

use crate::{Error, KeyBuilder, KeyPrefix, KeyRange, KeyReader, RecordTag};

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
}

impl RecordType {
    /// Every record type, in tag order.
    pub const ALL: [Self; 7] = [
        Self::Block,
        Self::Head,
        Self::CommitLog,
        Self::RecordIndex,
        Self::Collection,
        Self::Bitmap,
        Self::BlockDelta,
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

/// The key of a bitmap container, wrapping its txkey.
#[must_use]
pub fn bitmap_key(txkey: &[u8]) -> Vec<u8> {
    KeyBuilder::new(RecordType::Bitmap.prefix())
        .tail(txkey)
        .finish()
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
}

impl DecodedKey<'_> {
    /// The record type.
    #[must_use]
    pub fn record_type(&self) -> RecordType {
        match self {
            Self::Block { .. } => RecordType::Block,
            Self::Head { .. } => RecordType::Head,
            Self::CommitLog { .. } => RecordType::CommitLog,
            Self::RecordIndex { .. } => RecordType::RecordIndex,
            Self::Collection { .. } => RecordType::Collection,
            Self::Bitmap { .. } => RecordType::Bitmap,
            Self::BlockDelta { .. } => RecordType::BlockDelta,
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
    let decoded = match RecordType::from_tag(r.prefix().tag())? {
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
    };
    r.finish()?;
    Ok(decoded)
}
