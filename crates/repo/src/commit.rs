//! The commit block: `{repo, rev, data, prev}` in dag-cbor.

use bytes::Bytes;
use cid::Cid;
use rkey::Tid;
use serde::{Deserialize, Serialize};

use crate::Error;

/// A commit: one state of a repository.
///
/// Encoded as the dag-cbor map `{data, prev, repo, rev}` (see
/// `docs/repo.md`): `rev` is a TID string, `data` the Pail root, `prev` the
/// previous commit or null.
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
}

impl CommitData {
    /// The commit's dag-cbor block.
    pub fn encode(&self) -> store::Block {
        // A struct of strings and links always encodes.
        let bytes = serde_ipld_dagcbor::to_vec(self).unwrap_or_default();
        store::Block::new(0x71, Bytes::from(bytes))
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
        if commit.encode().bytes()[..] != *bytes {
            return Err(malformed("not a canonical commit encoding".into()));
        }
        Ok(commit)
    }
}
