//! Why an account or session operation failed.

/// Why an account or session operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The handle is not a valid AT Protocol handle.
    #[error("invalid handle {handle:?}: {reason}")]
    InvalidHandle {
        /// The handle given.
        handle: String,
        /// The rule it breaks.
        reason: String,
    },
    /// The DID is not a valid DID.
    #[error("invalid DID {did:?}: {reason}")]
    InvalidDid {
        /// The DID given.
        did: String,
        /// The rule it breaks.
        reason: String,
    },
    /// Another account has this handle (handles compare case-insensitively).
    #[error("the handle {0} is already taken")]
    HandleTaken(String),
    /// Another account has this DID.
    #[error("an account with DID {0} already exists")]
    DidTaken(String),
    /// No account has this handle or DID.
    #[error("no account {0}")]
    AccountNotFound(String),
    /// A password that cannot be used (empty, or too long to hash).
    #[error("invalid password: {0}")]
    InvalidPassword(&'static str),
    /// No usable invite code: unknown, disabled or used up.
    #[error("the invite code is not valid (unknown, disabled or used up)")]
    InvalidInviteCode,
    /// The account already has an app password of this name.
    #[error("an app password named {0:?} already exists")]
    AppPasswordExists(String),
    /// The account has no app password of this name.
    #[error("no app password named {0:?}")]
    AppPasswordNotFound(String),
    /// The account holds as many app passwords as it may.
    #[error("an account holds at most {0} app passwords: revoke one first")]
    TooManyAppPasswords(usize),
    /// A stored account or session that does not decode.
    #[error("malformed stored {what}: {reason}")]
    Malformed {
        /// What was being read.
        what: &'static str,
        /// Why it does not decode.
        reason: String,
    },
    /// A storage error.
    #[error(transparent)]
    Store(#[from] store::Error),
}
