//! The commit block: `{repo, rev, data, prev}` in dag-cbor, and when the
//! repository has a signing key, `version` and `sig` as well.

use bytes::Bytes;
use cid::Cid;
use rkey::Tid;
use serde::{Deserialize, Serialize};

use crate::{error::Error, signing::PublicKey, signing::SignatureError, signing::SigningKey};

/// The `version` of a signed commit. Unsigned commits (all commits before
/// signing existed, and those of repositories without a key) have neither
/// `version` nor `sig`.
pub const SIGNED_COMMIT_VERSION: u64 = 1;

/// A commit: one state of a repository.
///
/// Encoded as the dag-cbor map `{data, prev, repo, rev}` (see
/// `docs/repo.md`): `rev` is a TID string, `data` the Pail root, `prev` the
/// previous commit or null. A signed commit adds `version`
/// ([`SIGNED_COMMIT_VERSION`]) and `sig`: the 64-byte ECDSA signature of
/// the commit's encoding without `sig` ([`CommitData::unsigned_bytes`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommitData {
    /// The repository (a DID or handle).
    pub repo: String,
    /// The commit's rev.
    pub rev: Tid,
    /// The root of the repository's Pail.
    pub data: Cid,
    /// The previous commit, or `None` for the first.
    pub prev: Option<Cid>,
    /// [`SIGNED_COMMIT_VERSION`] on a signed commit, else `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
    /// The signature of a signed commit, else `None`.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "serde_bytes")]
    pub sig: Option<Vec<u8>>,
}

impl CommitData {
    /// An unsigned commit.
    #[must_use]
    pub fn new(repo: String, rev: Tid, data: Cid, prev: Option<Cid>) -> Self {
        Self {
            repo,
            rev,
            data,
            prev,
            version: None,
            sig: None,
        }
    }

    /// The commit signed by `key` (replacing any signature it had).
    #[must_use]
    pub fn signed(mut self, key: &SigningKey) -> Self {
        self.version = Some(SIGNED_COMMIT_VERSION);
        self.sig = None;
        // Without `sig`, the encoding is the unsigned bytes.
        self.sig = Some(key.sign(&self.encode_bytes()).to_vec());
        self
    }

    /// The bytes a signature covers: the commit's dag-cbor encoding
    /// without `sig` (with `version`).
    #[must_use]
    pub fn unsigned_bytes(&self) -> Vec<u8> {
        let unsigned = Self {
            sig: None,
            ..self.clone()
        };
        unsigned.encode_bytes()
    }

    /// The instant its rev encodes, as RFC 3339 UTC with milliseconds.
    #[must_use]
    pub fn time(&self) -> String {
        crate::event::rfc3339(self.rev.timestamp_micros())
    }

    /// Whether the commit carries a signature.
    #[must_use]
    pub fn is_signed(&self) -> bool {
        self.sig.is_some()
    }

    /// The first of `keys` whose signature this is.
    ///
    /// # Errors
    ///
    /// [`SignatureError::Unsigned`] for an unsigned commit, else why the
    /// signature is not any key's (a malformed or high-S signature is
    /// named as such whatever the key).
    pub fn verify<'k>(&self, keys: &'k [PublicKey]) -> Result<&'k PublicKey, SignatureError> {
        let Some(sig) = &self.sig else {
            return Err(SignatureError::Unsigned);
        };
        let message = self.unsigned_bytes();
        let mut error = SignatureError::Mismatch;
        for key in keys {
            match key.verify(&message, sig) {
                Ok(()) => return Ok(key),
                Err(SignatureError::Mismatch) => {}
                Err(e) => error = e,
            }
        }
        Err(error)
    }

    fn encode_bytes(&self) -> Vec<u8> {
        // A struct of strings, integers, bytes and links always encodes.
        serde_ipld_dagcbor::to_vec(self).unwrap_or_default()
    }

    /// The commit's dag-cbor block.
    pub fn encode(&self) -> store::Block {
        store::Block::new(0x71, Bytes::from(self.encode_bytes()))
    }

    /// Decodes a commit block, checking that it is canonical.
    ///
    /// # Errors
    ///
    /// [`Error::MalformedBlock`] when the bytes are not a commit.
    pub fn decode(cid: Cid, bytes: &[u8]) -> Result<Self, Error> {
        let malformed = |reason: String| Error::MalformedBlock { cid, reason };
        let commit: Self = serde_ipld_dagcbor::from_slice(bytes)
            .map_err(|e| malformed(format!("not a commit: {e}")))?;
        match (commit.version, &commit.sig) {
            (None, None) | (Some(SIGNED_COMMIT_VERSION), Some(_)) => {}
            (Some(SIGNED_COMMIT_VERSION), None) => {
                return Err(malformed(
                    "a signed commit's version without its sig".into(),
                ));
            }
            (None, Some(_)) => {
                return Err(malformed(
                    "a sig without the signed commit's version".into(),
                ));
            }
            (Some(v), _) => return Err(malformed(format!("unknown commit version {v}"))),
        }
        if commit.encode_bytes() != *bytes {
            return Err(malformed("not a canonical commit encoding".into()));
        }
        Ok(commit)
    }
}
