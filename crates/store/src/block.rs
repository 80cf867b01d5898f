//! [`Block`]: bytes together with a CID known to be their hash.

use std::sync::Arc;

use bytes::Bytes;
use cid::Cid;
use multihash_codetable::{Code, MultihashDigest};
use pail::Shard;
use sha2::Digest as _;

use crate::error::Error;

const SHA2_256: u64 = 0x12;

/// A block whose CID is the SHA-256 hash of its bytes.
///
/// Every constructor establishes that invariant (by hashing, by checking,
/// or, for a Pail shard, because a [`Shard`]'s CID is computed from its own
/// bytes), so a commit of blocks need not hash them again.
#[derive(Debug, Clone)]
pub struct Block {
    cid: Cid,
    bytes: Bytes,
    /// The decoded shard, for a block made from one: a commit stores a
    /// shard made from a previous version as a change to it when that is
    /// much smaller (`delta.rs`), and caches it decoded.
    shard: Option<Arc<Shard>>,
}

/// Blocks are equal when their CIDs and bytes are.
impl PartialEq for Block {
    fn eq(&self, other: &Self) -> bool {
        self.cid == other.cid && self.bytes == other.bytes
    }
}

impl Eq for Block {}

impl Block {
    /// Hashes `bytes` into a CIDv1 with `codec` (0x71 for dag-cbor).
    #[must_use]
    pub fn new(codec: u64, bytes: Bytes) -> Self {
        Self {
            cid: Cid::new_v1(codec, Code::Sha2_256.digest(&bytes)),
            bytes,
            shard: None,
        }
    }

    /// Checks that `bytes` hash to `cid`.
    ///
    /// # Errors
    ///
    /// [`Error::HashMismatch`] when they do not, [`Error::UnsupportedHash`]
    /// for a hash other than SHA-256.
    pub fn verify(cid: Cid, bytes: Bytes) -> Result<Self, Error> {
        if verify(&cid, &bytes)? {
            Ok(Self {
                cid,
                bytes,
                shard: None,
            })
        } else {
            Err(Error::HashMismatch { cid })
        }
    }

    /// A Pail shard's block (shared bytes, no hashing: a shard's CID is
    /// computed from its bytes when it is built or decoded).
    #[must_use]
    pub fn from_shard(shard: &Arc<Shard>) -> Self {
        debug_assert_eq!(shard.cid().hash().code(), SHA2_256);
        Self {
            cid: shard.cid(),
            bytes: shard.encoded(),
            shard: Some(Arc::clone(shard)),
        }
    }

    /// The decoded shard, for a block made by [`Block::from_shard`].
    pub(crate) fn shard(&self) -> Option<&Arc<Shard>> {
        self.shard.as_ref()
    }

    /// The block's CID.
    #[must_use]
    pub fn cid(&self) -> Cid {
        self.cid
    }

    /// The block's bytes.
    #[must_use]
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }
}

/// Checks that `bytes` hash to `cid`.
pub(crate) fn verify(cid: &Cid, bytes: &[u8]) -> Result<bool, Error> {
    if cid.hash().code() != u64::from(Code::Sha2_256) {
        return Err(Error::UnsupportedHash { cid: *cid });
    }
    Ok(sha2::Sha256::digest(bytes).as_slice() == cid.hash().digest())
}
