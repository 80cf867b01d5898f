//! The one error type of this crate.

use cid::Cid;

/// What can go wrong in a Pail operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A shard the tree links to is not in the block store.
    #[error("missing shard block {0}")]
    MissingBlock(Cid),
    /// Bytes that are not a valid Pail shard.
    #[error("invalid shard: {reason}")]
    InvalidShard {
        /// What is wrong.
        reason: String,
    },
    /// A link points at a shard whose contents break the tree's rules.
    #[error("corrupt tree at shard {cid}: {reason}")]
    CorruptTree {
        /// The shard.
        cid: Cid,
        /// What is wrong.
        reason: String,
    },
    /// A put overflowed a shard that no common-prefix split can relieve;
    /// nothing was changed.
    #[error(
        "shard limit reached: putting {key:?} makes a shard exceed maxSize and no two entries \
         share a prefix to split it by (raise maxSize); nothing was changed"
    )]
    ShardLimit {
        /// The key being put.
        key: String,
    },
    /// A block store failed.
    #[error("block store: {0}")]
    Store(#[source] Box<dyn std::error::Error + Send + Sync>),
}
