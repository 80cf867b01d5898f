//! The index error type.

use cid::Cid;

/// Why an index operation failed. The `repo` crate turns each into its own
/// error of the same name and message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A `--where` expression that does not parse or does not fit the
    /// collection's indexes.
    #[error("invalid query: {0}")]
    InvalidQuery(String),
    /// Stored index bytes that do not decode.
    #[error(
        "field index is damaged: {0} (rebuild it: `datarepo index drop` then `datarepo index add`)"
    )]
    MalformedIndex(String),
    /// A record block the tree names is not in the store.
    #[error("block {0} is missing from the store")]
    MissingBlock(Cid),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] store::Error),
    /// Walking a repository's Pail failed.
    #[error(transparent)]
    Pail(#[from] pail::Error),
}

/// A stored index entry that cannot be read.
pub(crate) fn malformed(what: impl std::fmt::Display) -> Error {
    Error::MalformedIndex(what.to_string())
}
