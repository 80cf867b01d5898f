//! Blocks stored as a change to another block (`docs/storage-keys.md`).
//!
//! A commit rewrites every Pail shard on the path to the changed key, and a
//! shard near the root changes in a few bytes of several kilobytes. Such a
//! version is stored under its block-delta key as its *anchor* (a block
//! stored in full) and the operations that rebuild it:
//!
//! ```text
//! value = 01 │ anchor CID │ op …
//! op    = 00 │ offset: u32 BE │ len: u32 BE     copy anchor[offset .. offset + len]
//!       | 01 │ len: u32 BE │ len bytes          insert these bytes
//! ```
//!
//! Copies go forward through the anchor without overlapping, so a block is
//! never longer than its anchor and its value together. The rebuilt bytes
//! are checked against the block's CID like any block read. An anchor is
//! always stored in full, so a read costs at most two lookups.

use bytes::{BufMut, Bytes, BytesMut};
use cid::Cid;

/// The first byte of every delta value: its layout version.
const VERSION: u8 = 0x01;
const COPY: u8 = 0x00;
const INSERT: u8 = 0x01;

/// Blocks smaller than this are stored in full: the saving is small and a
/// delta read costs a second lookup.
pub(crate) const MIN_BLOCK: usize = 1024;

/// A delta is kept only when it is at most this fraction (1/n) of the block.
const MAX_FRACTION: usize = 4;

/// A shorter common run is not worth a copy of its own.
const MIN_RUN: usize = 32;

/// How far past the first difference the encoder looks for the versions
/// to agree again (a shard that gains an entry changes the count in its
/// header, one or two bytes, and then nothing until the new entry).
const RESYNC: usize = 4;

/// A decoded delta value, borrowing its operations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Delta<'a> {
    pub(crate) anchor: Cid,
    ops: &'a [u8],
}

impl<'a> Delta<'a> {
    /// Decodes a stored delta value's head; its operations are checked
    /// when applied.
    ///
    /// # Errors
    ///
    /// Why the bytes are not a delta. Never panics.
    pub(crate) fn decode(value: &'a [u8]) -> Result<Self, String> {
        let Some((&version, rest)) = value.split_first() else {
            return Err("empty".into());
        };
        if version != VERSION {
            return Err(format!("unknown layout version {version}"));
        }
        let mut ops = rest;
        let anchor = Cid::read_bytes(&mut ops).map_err(|e| format!("anchor CID: {e}"))?;
        Ok(Self { anchor, ops })
    }

    /// The block's bytes, given its anchor's.
    ///
    /// # Errors
    ///
    /// An operation that is truncated, unknown, or copies outside the
    /// anchor or backwards. Never panics.
    pub(crate) fn apply(&self, anchor: &[u8]) -> Result<Vec<u8>, String> {
        let mut out = Vec::with_capacity(anchor.len() + self.ops.len());
        let mut ops = self.ops;
        // Where the previous copy ended: copies only go forward.
        let mut copied_to = 0usize;
        while let Some((&op, rest)) = ops.split_first() {
            let (a, rest) = word(rest)?;
            ops = rest;
            match op {
                COPY => {
                    let (len, rest) = word(ops)?;
                    ops = rest;
                    let end = a.checked_add(len).filter(|&e| e <= anchor.len());
                    let Some(end) = end.filter(|_| a >= copied_to) else {
                        return Err(format!(
                            "copies {len} bytes at {a} of a {}-byte anchor after byte {copied_to}",
                            anchor.len()
                        ));
                    };
                    out.extend_from_slice(&anchor[a..end]);
                    copied_to = end;
                }
                INSERT => {
                    let (bytes, rest) = ops
                        .split_at_checked(a)
                        .ok_or_else(|| format!("inserts {a} bytes, {} left", ops.len()))?;
                    out.extend_from_slice(bytes);
                    ops = rest;
                }
                other => return Err(format!("unknown operation {other}")),
            }
        }
        Ok(out)
    }
}

/// A big-endian `u32` at the front of `bytes`, and the rest.
fn word(bytes: &[u8]) -> Result<(usize, &[u8]), String> {
    let (w, rest) = bytes
        .split_first_chunk::<4>()
        .ok_or("truncated operation")?;
    Ok((u32::from_be_bytes(*w) as usize, rest))
}

/// Builds a delta value's operations.
struct Ops {
    out: BytesMut,
}

impl Ops {
    fn copy(&mut self, offset: usize, len: usize) -> Option<()> {
        if len > 0 {
            self.out.put_u8(COPY);
            self.out.put_u32(u32::try_from(offset).ok()?);
            self.out.put_u32(u32::try_from(len).ok()?);
        }
        Some(())
    }

    fn insert(&mut self, bytes: &[u8]) -> Option<()> {
        if !bytes.is_empty() {
            self.out.put_u8(INSERT);
            self.out.put_u32(u32::try_from(bytes.len()).ok()?);
            self.out.put_slice(bytes);
        }
        Some(())
    }
}

/// The delta value that rebuilds `block` from `anchor_bytes`, when it is
/// small enough to be worth keeping instead of the block.
///
/// The versions are compared from both ends; where they first differ, the
/// encoder also looks a few bytes further for a long common run (a count
/// in a header changed, then nothing until the real change), so a shard
/// that gained an entry is two short inserts.
pub(crate) fn encode(anchor: &Cid, anchor_bytes: &[u8], block: &[u8]) -> Option<Bytes> {
    if block.len() < MIN_BLOCK {
        return None;
    }
    let (a, b) = (anchor_bytes, block);
    let prefix = common_prefix(a, b);
    // The suffix never overlaps the prefix, in either.
    let room = a.len().min(b.len()) - prefix;
    let suffix = common_suffix(&a[a.len() - room..], &b[b.len() - room..]);
    let (a_mid, b_mid) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    // The first long run that starts at most RESYNC bytes into both
    // middles: the same distance into both first (a count that kept its
    // length), nearest first.
    let equal = (1..=RESYNC).map(|d| (d, d));
    let unequal =
        (1..=RESYNC).flat_map(|a| (1..=RESYNC).filter(move |&b| b != a).map(move |b| (a, b)));
    let run = equal
        .chain(unequal)
        .filter(|&(skip_a, skip_b)| skip_a <= a_mid.len() && skip_b <= b_mid.len())
        .map(|(skip_a, skip_b)| {
            (
                skip_a,
                skip_b,
                common_prefix(&a_mid[skip_a..], &b_mid[skip_b..]),
            )
        })
        .find(|&(_, _, len)| len >= MIN_RUN)
        .unwrap_or_default();
    let mut ops = Ops {
        out: BytesMut::with_capacity(block.len() / MAX_FRACTION + 64),
    };
    ops.out.put_u8(VERSION);
    ops.out.put_slice(&anchor.to_bytes());
    ops.copy(0, prefix)?;
    let (skip_a, skip_b, len) = run;
    if len >= MIN_RUN {
        ops.insert(&b_mid[..skip_b])?;
        ops.copy(prefix + skip_a, len)?;
        ops.insert(&b_mid[skip_b + len..])?;
    } else {
        ops.insert(b_mid)?;
    }
    ops.copy(a.len() - suffix, suffix)?;
    // Copied out: the store keeps the value, and the buffer is larger.
    (ops.out.len() <= block.len() / MAX_FRACTION).then(|| Bytes::copy_from_slice(&ops.out))
}

/// How many leading bytes `a` and `b` share.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const CHUNK: usize = 32;
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + CHUNK <= n && a[i..i + CHUNK] == b[i..i + CHUNK] {
        i += CHUNK;
    }
    i + a[i..n]
        .iter()
        .zip(&b[i..n])
        .take_while(|(x, y)| x == y)
        .count()
}

/// How many trailing bytes `a` and `b` share.
fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    const CHUNK: usize = 32;
    let n = a.len().min(b.len());
    let (a, b) = (&a[a.len() - n..], &b[b.len() - n..]);
    let mut i = 0;
    while i + CHUNK <= n && a[n - i - CHUNK..n - i] == b[n - i - CHUNK..n - i] {
        i += CHUNK;
    }
    i + a[..n - i]
        .iter()
        .rev()
        .zip(b[..n - i].iter().rev())
        .take_while(|(x, y)| x == y)
        .count()
}

#[cfg(test)]
mod tests {
    use multihash_codetable::{Code, MultihashDigest};
    use proptest::prelude::*;

    use super::*;

    fn cid_of(bytes: &[u8]) -> Cid {
        Cid::new_v1(0x71, Code::Sha2_256.digest(bytes))
    }

    /// The layout, byte for byte (`docs/storage-keys.md`): a header byte
    /// changed, and two bytes inserted further on.
    #[test]
    fn layout_is_pinned() {
        let anchor: Vec<u8> = (0..2048u32).map(|i| (i % 251) as u8).collect();
        let mut block = anchor.clone();
        block[10] = 0xee;
        block.splice(1000..1000, [0xff, 0xfe]);
        let cid = cid_of(&anchor);
        let value = encode(&cid, &anchor, &block).unwrap();
        let mut expected = vec![0x01];
        expected.extend_from_slice(&cid.to_bytes());
        let copy = |offset: u32, len: u32| {
            let mut op = vec![0x00];
            op.extend_from_slice(&offset.to_be_bytes());
            op.extend_from_slice(&len.to_be_bytes());
            op
        };
        let insert = |bytes: &[u8]| {
            let mut op = vec![0x01];
            op.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
            op.extend_from_slice(bytes);
            op
        };
        expected.extend(copy(0, 10));
        expected.extend(insert(&[0xee]));
        expected.extend(copy(11, 989));
        expected.extend(insert(&[0xff, 0xfe]));
        expected.extend(copy(1000, 1048));
        assert_eq!(&value[..], &expected[..]);
        let delta = Delta::decode(&value).unwrap();
        assert_eq!(delta.anchor, cid);
        assert_eq!(delta.apply(&anchor).unwrap(), block);
    }

    #[test]
    fn small_or_different_blocks_are_not_deltas() {
        let anchor = vec![7u8; 4096];
        let cid = cid_of(&anchor);
        assert!(encode(&cid, &anchor, &[7u8; MIN_BLOCK - 1]).is_none());
        let other: Vec<u8> = (0..4096u32).map(|i| (i % 13) as u8).collect();
        assert!(encode(&cid, &anchor, &other).is_none());
    }

    #[test]
    fn bad_operations_are_errors() {
        let anchor = vec![1u8; 100];
        let head = |ops: &[u8]| {
            let mut v = vec![0x01];
            v.extend_from_slice(&cid_of(&anchor).to_bytes());
            v.extend_from_slice(ops);
            v
        };
        for ops in [
            &[0x00, 0, 0, 0, 90, 0, 0, 0, 11][..], // past the end
            &[0x00, 0, 0, 0, 50, 0, 0, 0, 10, 0x00, 0, 0, 0, 0, 0, 0, 0, 1], // backwards
            &[0x01, 0, 0, 0, 5, 1, 2],             // short insert
            &[0x02, 0, 0, 0, 0],                   // unknown
            &[0x00, 0, 0],                         // truncated
        ] {
            let value = head(ops);
            let delta = Delta::decode(&value).unwrap();
            assert!(delta.apply(&anchor).is_err(), "{ops:?}");
        }
        assert!(Delta::decode(&[0x02]).is_err());
        assert!(Delta::decode(&[]).is_err());
    }

    proptest! {
        /// Any block rebuilds exactly from its anchor and its delta: one
        /// region replaced, or a few header bytes and a region replaced.
        #[test]
        fn a_delta_rebuilds_its_block(
            anchor in proptest::collection::vec(0u8..4, 0..3000),
            header in proptest::collection::vec(0u8..4, 0..4),
            cut in 0usize..3000,
            keep in 0usize..3000,
            insert in proptest::collection::vec(0u8..4, 0..200),
        ) {
            let cut = cut.min(anchor.len());
            let keep = keep.min(anchor.len() - cut);
            let mut block = anchor[..cut].to_vec();
            block.extend_from_slice(&insert);
            block.extend_from_slice(&anchor[anchor.len() - keep..]);
            let h = header.len().min(block.len());
            block[..h].copy_from_slice(&header[..h]);
            let cid = cid_of(&anchor);
            if let Some(value) = encode(&cid, &anchor, &block) {
                let delta = Delta::decode(&value).unwrap();
                prop_assert_eq!(delta.anchor, cid);
                prop_assert_eq!(delta.apply(&anchor).unwrap(), block);
            }
        }

        /// The chunked comparisons agree with byte-at-a-time ones.
        #[test]
        fn common_runs_match_a_byte_loop(
            shared in proptest::collection::vec(0u8..3, 0..100),
            x in proptest::collection::vec(0u8..3, 0..40),
            y in proptest::collection::vec(0u8..3, 0..40),
            at_end in any::<bool>(),
        ) {
            let join = |own: &[u8]| if at_end {
                [own, &shared].concat()
            } else {
                [&shared, own].concat()
            };
            let (a, b) = (join(&x), join(&y));
            let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
            let suffix = a.iter().rev().zip(b.iter().rev()).take_while(|(x, y)| x == y).count();
            prop_assert_eq!(common_prefix(&a, &b), prefix);
            prop_assert_eq!(common_suffix(&a, &b), suffix);
        }

        /// Decoding and applying arbitrary bytes never panics, and what is
        /// rebuilt is never longer than the anchor and the value together.
        #[test]
        fn arbitrary_values_never_panic(
            value in proptest::collection::vec(any::<u8>(), 0..200),
            anchor in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            if let Ok(delta) = Delta::decode(&value)
                && let Ok(out) = delta.apply(&anchor)
            {
                prop_assert!(out.len() <= anchor.len() + value.len());
            }
        }
    }
}
