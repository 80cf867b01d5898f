//! The one error type of this crate.

use cid::Cid;

/// What can go wrong in the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The underlying KV store failed (I/O, object storage).
    #[error("storage unavailable: {0}")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A block's bytes do not hash to its CID: the stored data is corrupt.
    #[error("block {cid} is corrupt: its bytes do not hash to its CID")]
    Corrupt {
        /// The block.
        cid: Cid,
    },
    /// A block stored as a change to another block (its anchor) whose
    /// anchor is missing: the block cannot be rebuilt.
    #[error("block {cid} is stored as a change to block {anchor}, which is missing")]
    MissingAnchor {
        /// The block.
        cid: Cid,
        /// The block it is stored as a change to (boxed: two CIDs would
        /// double the size of every `Result` of this crate).
        anchor: Box<Cid>,
    },
    /// A block offered for storage does not hash to the CID given for it.
    #[error("block {cid} rejected: its bytes do not hash to its CID")]
    HashMismatch {
        /// The CID given.
        cid: Cid,
    },
    /// A CID whose hash this store cannot check.
    #[error("block {cid} uses an unsupported hash (only sha2-256 is supported)")]
    UnsupportedHash {
        /// The CID.
        cid: Cid,
    },
    /// A stored value that cannot be decoded.
    #[error("stored {what} is malformed: {reason}")]
    Malformed {
        /// What was being read.
        what: &'static str,
        /// Why it could not be decoded.
        reason: String,
    },
    /// A compare-and-swap on a repository head failed: another writer
    /// committed first. Nothing was written; rebuild on the new head and retry.
    #[error(
        "conflict on {}: expected head {}, found {}; nothing was written",
        .0.repo,
        show(.0.expected.as_ref()),
        show(.0.actual.as_ref())
    )]
    Conflict(Box<Conflict>),
    /// A commit was applied but not confirmed durable in time (the object
    /// store is failing or slow). Its outcome is unknown: it may still become
    /// durable, or be lost in a crash; read the head to find out.
    #[error(
        "commit not confirmed durable within {0:?} (object storage failing or slow); \
         its outcome is unknown: read the head to find out, then retry if it is absent"
    )]
    DurabilityTimeout(std::time::Duration),
    /// A commit was applied but not confirmed durable in time, and the
    /// store's local directory cannot be written now (a full disk, a mount
    /// gone read-only): the likely cause. Its outcome is unknown, as for
    /// [`Error::DurabilityTimeout`].
    #[error(
        "commit not confirmed durable within {after:?}: the store at {location} cannot be \
         written ({source}); its outcome is unknown: fix that, then read the head to find out"
    )]
    DurabilityBlocked {
        /// How long the commit waited.
        after: std::time::Duration,
        /// The store's directory.
        location: String,
        /// Why it cannot be written.
        source: std::io::Error,
    },
    /// The store's local directory cannot be written (a full disk, a
    /// read-only mount, permissions), so it cannot be opened for writing.
    #[error("cannot write to the store at {location}: {source}")]
    NotWritable {
        /// The store's directory.
        location: String,
        /// Why it cannot be written.
        source: std::io::Error,
    },
    /// Another writer opened the same database, which fences this one: it
    /// can no longer write. Everything it acknowledged before is kept.
    #[error(
        "this process was fenced: another writer opened the same database, so this one can no \
         longer write (only one writer per database; reopen to continue)"
    )]
    Fenced,
    /// A write on a read-only opener.
    #[error("this store was opened read-only")]
    ReadOnly,
    /// A store location that cannot be used.
    #[error("invalid store location {location:?}: {reason}")]
    Location {
        /// What was given.
        location: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// A SlateDB settings file that cannot be read or parsed.
    #[error("SlateDB settings file {file:?} cannot be used: {reason}")]
    Settings {
        /// The file's path.
        file: String,
        /// Why it cannot be used.
        reason: String,
    },
}

/// Details of [`Error::Conflict`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The repository.
    pub repo: String,
    /// The head the writer expected (`None`: no repository).
    pub expected: Option<Cid>,
    /// The head found.
    pub actual: Option<Cid>,
}

fn show(cid: Option<&Cid>) -> String {
    cid.map_or_else(|| "none".to_owned(), ToString::to_string)
}

impl From<slatedb::Error> for Error {
    fn from(e: slatedb::Error) -> Self {
        match e.kind() {
            slatedb::ErrorKind::Closed(slatedb::CloseReason::Fenced) => Self::Fenced,
            _ => Self::Unavailable(Box::new(e)),
        }
    }
}
