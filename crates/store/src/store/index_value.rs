//! The record index's values: a record's CID, and its block inline when
//! small.

use bytes::Bytes;
use cid::Cid;

use super::keys::SHA2_256;
use crate::{block::Block, error::Error};

/// Records up to this size are copied into their index entry.
pub const INLINE_RECORD_BYTES: usize = 4096;

/// An index entry: the record's CID bytes, then (optionally) its bytes.
pub(super) fn index_value(block: &Block) -> Bytes {
    let (cid, bytes) = (block.cid(), block.bytes());
    let inline = if bytes.len() <= INLINE_RECORD_BYTES {
        bytes.as_ref()
    } else {
        &[]
    };
    let mut out = Vec::with_capacity(cid.encoded_len() + inline.len());
    // Writing to a Vec cannot fail.
    let _ = cid.write_bytes(&mut out);
    out.extend_from_slice(inline);
    Bytes::from(out)
}

/// The record of an index entry: `Ok` the verified block when it is kept
/// inline, `Err` its CID when it is stored only as a block.
pub(super) fn inline_block(value: &Bytes) -> Result<Result<Block, Cid>, Error> {
    let (cid, inline) = parse_index_value(value)?;
    Ok(match inline {
        Some(bytes) => match Block::verify(cid, bytes) {
            Ok(block) => Ok(block),
            Err(Error::HashMismatch { cid }) => return Err(Error::Corrupt { cid }),
            Err(e) => return Err(e),
        },
        None => Err(cid),
    })
}

/// Splits an index entry into the CID and the inline bytes (if any).
pub(super) fn parse_index_value(value: &Bytes) -> Result<(Cid, Option<Bytes>), Error> {
    // Every CID datarepo writes is a CIDv1 with a one-byte codec and a
    // SHA-256 digest; parse those directly (the general reader below goes
    // through `io::Read` a varint at a time, a tenth of an export's time).
    if let [1, codec @ 0..0x80, 0x12, 0x20, rest @ ..] = value.as_ref()
        && let Some(digest) = rest.get(..32)
    {
        let hash =
            cid::multihash::Multihash::wrap(SHA2_256, digest).map_err(|e| Error::Malformed {
                what: "record index entry",
                reason: e.to_string(),
            })?;
        let cid = Cid::new_v1(u64::from(*codec), hash);
        let rest = value.slice(4 + 32..);
        return Ok((cid, (!rest.is_empty()).then_some(rest)));
    }
    let mut cursor = std::io::Cursor::new(value.as_ref());
    let cid = Cid::read_bytes(&mut cursor).map_err(|e| Error::Malformed {
        what: "record index entry",
        reason: e.to_string(),
    })?;
    let at = usize::try_from(cursor.position()).unwrap_or(usize::MAX);
    let rest = value.slice(at.min(value.len())..);
    Ok((cid, (!rest.is_empty()).then_some(rest)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The direct parse of SHA-256 CIDv1s reads what the general CID
    /// reader reads, and anything else still goes to the general reader.
    #[test]
    fn index_values_parse_as_the_cid_reader_reads_them() {
        use multihash_codetable::{Code, MultihashDigest};
        let cids = [
            Cid::new_v1(0x71, Code::Sha2_256.digest(b"a record")),
            Cid::new_v1(0x55, Code::Sha2_256.digest(b"raw bytes")),
            Cid::new_v1(0x71, Code::Sha2_512.digest(b"another hash")),
            Cid::new_v1(0x0129, Code::Sha2_256.digest(b"a two-byte codec")),
            Cid::new_v0(Code::Sha2_256.digest(b"version 0")).unwrap(),
        ];
        for cid in cids {
            for inline in [&b""[..], b"x", &[0xa1; 200]] {
                let mut value = cid.to_bytes();
                value.extend_from_slice(inline);
                let (parsed, rest) = parse_index_value(&Bytes::from(value)).unwrap();
                assert_eq!(parsed, cid);
                assert_eq!(rest.as_deref().unwrap_or_default(), inline);
            }
            // Cut short: an error, never a panic.
            let bytes = cid.to_bytes();
            for len in 0..bytes.len() {
                assert!(parse_index_value(&Bytes::copy_from_slice(&bytes[..len])).is_err());
            }
        }
    }
}
