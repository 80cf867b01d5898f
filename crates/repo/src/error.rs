//! The repository error type.

use cid::Cid;

/// Why a repository operation failed.
///
/// Every variant that rejects input leaves the repository unchanged.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The repository identifier is neither a DID nor a handle.
    #[error("invalid repository identifier {id:?}: {reason}")]
    InvalidRepoId {
        /// The identifier given.
        id: String,
        /// The rule it breaks.
        reason: String,
    },
    /// A collection name or record key breaks its syntax, or a record key
    /// does not fit the collection's declared key type.
    #[error(transparent)]
    Syntax(#[from] rkey::Error),
    /// The record is not valid AT Protocol data.
    #[error("invalid record: {0}")]
    InvalidRecord(String),
    /// A Lexicon document could not be used.
    #[error("invalid lexicon: {0}")]
    InvalidLexicon(String),
    /// A record breaks its collection's Lexicon (the validator's message,
    /// e.g. `Record/text must not be longer than 3000 graphemes`), or has
    /// none when validation was required.
    #[error("{0}")]
    LexiconValidation(String),
    /// No Lexicon document has this NSID.
    #[error("no Lexicon {0} in this repository")]
    LexiconNotFound(String),
    /// The collection's existing records do not fit a new key type.
    #[error(
        "cannot declare {collection} with key type {key_type}: existing record {rkey:?} does not fit ({reason})"
    )]
    KeyTypeConflict {
        /// The collection.
        collection: String,
        /// The key type asked for.
        key_type: String,
        /// An existing record key that does not fit.
        rkey: String,
        /// Why it does not fit.
        reason: String,
    },
    /// No such repository.
    #[error("repository {0} does not exist")]
    RepoNotFound(String),
    /// The repository already exists.
    #[error("repository {0} already exists")]
    RepoExists(String),
    /// No such record.
    #[error("record not found: {0}")]
    RecordNotFound(String),
    /// Blob bytes could not be stored or read.
    #[error(transparent)]
    Blob(#[from] store::BlobError),
    /// A record refers to a blob the repository does not hold (upload
    /// it first).
    #[error("Could not find blob: {0}")]
    BlobNotFound(String),
    /// A record's blob reference claims another type or size than the
    /// stored blob's.
    #[error("the record says the blob {cid} has {field} {claimed}, the stored blob's is {stored}")]
    BlobMismatch {
        /// The blob.
        cid: String,
        /// `mimeType` or `size`.
        field: &'static str,
        /// What the record says.
        claimed: String,
        /// What the stored blob has.
        stored: String,
    },
    /// A create names a record that exists.
    #[error("record already exists: {0}")]
    RecordExists(String),
    /// A compare-and-swap failed: the commit or record is not the one expected.
    #[error("{what} is {actual}, not {expected} as the write expected")]
    InvalidSwap {
        /// "the head commit" or the record's URI.
        what: String,
        /// The CID the write expected (or "absent").
        expected: String,
        /// The current CID (or "absent").
        actual: String,
    },
    /// No commit with this rev is in the log.
    #[error("no commit with rev {rev} in {repo}")]
    RevNotFound {
        /// The repository.
        repo: String,
        /// The rev asked for.
        rev: String,
    },
    /// The repository signs its commits, but its key cannot sign this one
    /// (the key file is missing, unreadable or holds another key).
    #[error("{repo} signs its commits with {key}, but {reason}")]
    SigningKey {
        /// The repository.
        repo: String,
        /// The public key the repository's next commit must be signed with.
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// A commit's signature is missing or is not by a key the repository
    /// trusts.
    #[error("commit {commit} {reason}")]
    Untrusted {
        /// The commit.
        commit: Cid,
        /// Its rev and repository, and why it is not trusted.
        reason: String,
    },
    /// A CAR file is malformed, tampered with or incomplete.
    #[error("invalid CAR: {0}")]
    InvalidCar(String),
    /// A stored block is not what the repository expects (a bug or corruption).
    #[error("block {cid} is malformed: {reason}")]
    MalformedBlock {
        /// The block.
        cid: Cid,
        /// What is wrong with it.
        reason: String,
    },
    /// A stored block is missing.
    #[error("block {0} is missing from the store")]
    MissingBlock(Cid),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] store::Error),
    /// The Pail failed.
    #[error(transparent)]
    Pail(pail::Error),
    /// A `--where` query (or another index request) is not valid: the
    /// message names the position or path and what to do.
    #[error("invalid query: {0}")]
    InvalidQuery(String),
    /// `index add` of an index that is declared already.
    #[error(
        "{collection} already has an index on {path} (drop it first with `datarepo index drop {collection} {path}`)"
    )]
    IndexExists {
        /// The collection.
        collection: String,
        /// The path.
        path: String,
    },
    /// No index is declared on this path.
    #[error("{collection} has no index on {path} (see `datarepo index list`)")]
    IndexNotFound {
        /// The collection.
        collection: String,
        /// The path.
        path: String,
    },
    /// The repository's records changed under its field indexes (an
    /// import) and their rebuild has not finished: queries would answer
    /// from the old records.
    #[error(
        "the field indexes of {0} are being rebuilt after an import; if no import is running, it was \
         interrupted: run `datarepo index rebuild --repo {0}`"
    )]
    IndexRebuildPending(String),
    /// A stored index entry is not what datarepo writes (a bug or corruption).
    #[error(
        "field index is damaged: {0} (rebuild it: `datarepo index drop` then `datarepo index add`)"
    )]
    MalformedIndex(String),
    /// Reading or writing a file or stream failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

impl Error {
    /// The XRPC error name of this failure, as the HTTP API answers it
    /// (`{"error": NAME, "message"}`) and `datarepo --json` prints it.
    #[must_use]
    pub fn xrpc_name(&self) -> &'static str {
        match self {
            Self::RecordNotFound(_) => "RecordNotFound",
            Self::BlobNotFound(_) => "BlobNotFound",
            Self::BlobMismatch { .. } => "InvalidRequest",
            Self::RepoNotFound(_) => "RepoNotFound",
            Self::InvalidSwap { .. } => "InvalidSwap",
            Self::LexiconValidation(_) => "InvalidRecord",
            Self::LexiconNotFound(_) => "LexiconNotFound",
            Self::RevNotFound { .. }
            | Self::InvalidRepoId { .. }
            | Self::Syntax(_)
            | Self::InvalidRecord(_)
            | Self::InvalidLexicon(_)
            | Self::KeyTypeConflict { .. }
            | Self::RecordExists(_)
            | Self::RepoExists(_)
            | Self::InvalidQuery(_)
            | Self::IndexExists { .. }
            | Self::IndexNotFound { .. }
            | Self::InvalidCar(_)
            | Self::Store(store::Error::ReadOnly) => "InvalidRequest",
            Self::IndexRebuildPending(_)
            | Self::Store(
                store::Error::DurabilityBlocked { .. }
                | store::Error::NotWritable { .. }
                | store::Error::DurabilityTimeout(_)
                | store::Error::Unavailable(_)
                | store::Error::Fenced,
            ) => "ServiceUnavailable",
            Self::Store(store::Error::Conflict(_)) => "Conflict",
            _ => "InternalServerError",
        }
    }
}

impl From<pail::Error> for Error {
    fn from(e: pail::Error) -> Self {
        match e {
            pail::Error::Store(inner) => match inner.downcast::<store::Error>() {
                Ok(store) => Self::Store(*store),
                Err(other) => Self::Pail(pail::Error::Store(other)),
            },
            pail::Error::MissingBlock(cid) => Self::MissingBlock(cid),
            other => Self::Pail(other),
        }
    }
}

impl From<index::Error> for Error {
    fn from(e: index::Error) -> Self {
        match e {
            index::Error::InvalidQuery(reason) => Self::InvalidQuery(reason),
            index::Error::MalformedIndex(reason) => Self::MalformedIndex(reason),
            index::Error::MissingBlock(cid) => Self::MissingBlock(cid),
            index::Error::Store(e) => Self::Store(e),
            index::Error::Pail(e) => Self::from(e),
            other => Self::MalformedIndex(other.to_string()),
        }
    }
}
