//! Block keys: where a block and a shard delta are stored.

use cid::Cid;
use keycodec::RecordType;

use crate::{block::Block, kv::interface::WriteOp};

pub(super) const SHA2_256: u64 = 0x12;

/// The write that stores `block`.
pub(super) fn block_put(block: &Block) -> WriteOp {
    WriteOp::Put(block_key(&block.cid()), block.bytes().clone())
}

/// The storage key of a block.
pub(crate) fn block_key(cid: &Cid) -> Vec<u8> {
    BlockKey::new(cid).to_vec()
}

/// The storage key of a block, built on the stack: a get needs no
/// allocation for its key.
pub(crate) struct BlockKey {
    bytes: [u8; BlockKey::MAX_LEN],
    len: usize,
}

impl BlockKey {
    /// The 2-byte prefix and the longest CID bytes a `Cid` can have
    /// (version, codec and hash code as varints of up to 10 bytes, digest
    /// size of up to 2, digest of up to 64).
    const MAX_LEN: usize = 2 + 1 + 10 + 10 + 2 + 64;

    pub(crate) fn new(cid: &Cid) -> Self {
        Self::of_type(RecordType::Block, cid)
    }

    /// The key under which a block stored as a delta is kept.
    pub(crate) fn delta(cid: &Cid) -> Self {
        Self::of_type(RecordType::BlockDelta, cid)
    }

    fn of_type(record_type: RecordType, cid: &Cid) -> Self {
        let mut bytes = [0; Self::MAX_LEN];
        bytes[..2].copy_from_slice(&record_type.prefix().encode());
        let hash = cid.hash();
        let len = match u8::try_from(cid.codec()) {
            // The usual CID, a SHA-256 CIDv1 whose codec is a 1-byte
            // varint, laid out directly (`Cid::write_bytes` goes through
            // `io::Write` a varint at a time).
            Ok(codec)
                if cid.version() == cid::Version::V1
                    && codec < 0x80
                    && hash.code() == SHA2_256
                    && hash.size() == 32 =>
            {
                bytes[2..6].copy_from_slice(&[1, codec, 0x12, 32]);
                bytes[6..38].copy_from_slice(hash.digest());
                38
            }
            _ => {
                let mut rest = &mut bytes[2..];
                // MAX_LEN holds any CID, so writing cannot fail.
                let _ = cid.write_bytes(&mut rest);
                Self::MAX_LEN - rest.len()
            }
        };
        Self { bytes, len }
    }
}

impl std::ops::Deref for BlockKey {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use keycodec::records;

    /// Block keys built on the stack are the keys `keycodec` defines, for
    /// the usual CIDs (laid out directly) and any other (written as CID
    /// bytes), up to the largest a `Cid` can hold.
    #[test]
    fn block_keys_are_keycodec_block_keys() {
        use multihash_codetable::{Code, MultihashDigest};
        let largest = Cid::new_v1(
            u64::MAX,
            cid::multihash::Multihash::wrap(u64::MAX, &[7; 64]).unwrap(),
        );
        let cids = [
            Cid::new_v1(0x71, Code::Sha2_256.digest(b"a record")),
            Cid::new_v1(0x55, Code::Sha2_256.digest(b"raw bytes")),
            Cid::new_v1(0x7f, Code::Sha2_256.digest(b"largest 1-byte codec")),
            Cid::new_v1(0x80, Code::Sha2_256.digest(b"smallest 2-byte codec")),
            Cid::new_v1(0x71, Code::Sha2_512.digest(b"another hash")),
            Cid::new_v1(0x71, Code::Sha2_256.digest(b"x").truncate(20)),
            Cid::new_v0(Code::Sha2_256.digest(b"version 0")).unwrap(),
            largest,
        ];
        for cid in cids {
            let expected = records::block_key(&cid.to_bytes());
            assert_eq!(&*BlockKey::new(&cid), &expected[..], "{cid}");
            assert_eq!(block_key(&cid), expected);
        }
    }
}
