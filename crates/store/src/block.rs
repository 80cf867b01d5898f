//! [`Block`]: bytes together with a CID known to be their hash.

use bytes::Bytes;
use cid::Cid;
use multihash_codetable::{Code, MultihashDigest};
use pail::Shard;

use crate::Error;

const SHA2_256: u64 = 0x12;

/// A block whose CID is the SHA-256 hash of its bytes.
///
/// Every constructor establishes that invariant (by hashing, by checking,
/// or, for a Pail shard, because a [`Shard`]'s CID is computed from its own
/// bytes), so a commit of blocks need not hash them again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    cid: Cid,
    bytes: Bytes,
}

impl Block {
    /// Hashes `bytes` into a CIDv1 with `codec` (0x71 for dag-cbor).
    #[must_use]
    pub fn new(codec: u64, bytes: Bytes) -> Self {
        Self {
            cid: Cid::new_v1(codec, Code::Sha2_256.digest(&bytes)),
            bytes,
        }
    }

    /// Checks that `bytes` hash to `cid`.
    ///
    /// # Errors
    ///
    /// [`Error::HashMismatch`] when they do not, [`Error::UnsupportedHash`]
    /// for a hash other than SHA-256.
    pub fn verify(cid: Cid, bytes: Bytes) -> Result<Self, Error> {
        if crate::store::verify(&cid, &bytes)? {
            Ok(Self { cid, bytes })
        } else {
            Err(Error::HashMismatch { cid })
        }
    }

    /// A Pail shard's block (shared bytes, no hashing: a shard's CID is
    /// computed from its bytes when it is built or decoded).
    #[must_use]
    pub fn from_shard(shard: &Shard) -> Self {
        debug_assert_eq!(shard.cid().hash().code(), SHA2_256);
        Self {
            cid: shard.cid(),
            bytes: shard.encoded(),
        }
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
