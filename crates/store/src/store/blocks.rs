//! Blocks and shards: written, read back checked against their CIDs, and
//! shards rebuilt from their deltas.

use std::sync::Arc;

use bytes::Bytes;
use cid::Cid;
use pail::{Shard, ShardFetcher};

use super::{
    keys::{BlockKey, block_key, block_put},
    state::{AnchorMemo, Store},
};
use crate::{
    block::Block, delta, error::Error, kv::interface::Kv, kv::interface::WriteOp,
    shard_cache::Anchor,
};

/// Wanted blocks one range scan of [`Store::each_block`] covers.
const BLOCKS_PER_SCAN: usize = 64;

/// Keys one scan of [`Store::each_block`] reads, at most, per wanted block:
/// where other blocks lie between the wanted ones more thickly, the rest
/// of them are read one by one. This bounds what a scan reads for nothing
/// (and holds: a block can be a few MiB).
const KEYS_PER_WANTED_BLOCK: usize = 2;

/// Range scans [`Store::each_block`] keeps in flight (on object storage
/// each waits for its SST blocks to arrive).
const SCANS_IN_FLIGHT: usize = 4;

/// Point reads [`Store::each_block`] keeps in flight for the blocks its
/// scans did not find.
const POINT_READS_IN_FLIGHT: usize = 16;

/// Stored bytes of block `cid` as a block, checked against the CID: a
/// mismatch is stored data gone bad ([`Error::Corrupt`]).
fn stored_block_checked(cid: &Cid, bytes: Bytes) -> Result<Block, Error> {
    Block::verify(*cid, bytes).map_err(|e| match e {
        Error::HashMismatch { cid } => Error::Corrupt { cid },
        e => e,
    })
}

impl<K: Kv> ShardFetcher for Store<K> {
    async fn get_shard(&self, cid: &Cid) -> Result<Arc<Shard>, pail::Error> {
        if let Some(shard) = self.cache().get(cid) {
            return Ok(shard);
        }
        let (shard, anchor) = self.read_stored_shard(cid, true).await?;
        let shard = Arc::new(shard);
        self.cache().insert(Arc::clone(&shard), anchor);
        Ok(shard)
    }
}

impl<K: Kv> Store<K> {
    /// Stores blocks, each checked against its CID, in one durable write.
    ///
    /// # Errors
    ///
    /// [`Error::HashMismatch`] (nothing is written),
    /// [`Error::DurabilityTimeout`] or a storage error.
    pub async fn put_blocks(&self, blocks: &[(Cid, Bytes)]) -> Result<(), Error> {
        let mut ops = Vec::with_capacity(blocks.len());
        for (cid, bytes) in blocks {
            if !crate::block::verify(cid, bytes)? {
                return Err(Error::HashMismatch { cid: *cid });
            }
            ops.push(WriteOp::Put(block_key(cid), bytes.clone()));
        }
        let durability = {
            let _sweep = self.sweep_order.lock().await;
            self.note_written(blocks.iter().map(|(cid, _)| *cid));
            self.kv.apply(ops).await?
        };
        self.wait_durable(durability).await
    }

    /// A block's bytes, checked against its CID.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] when the stored bytes do not hash to `cid`, or a
    /// storage error.
    pub async fn get_block(&self, cid: &Cid) -> Result<Option<Block>, Error> {
        let Some((bytes, _)) = self.stored_block(cid, false).await? else {
            return Ok(None);
        };
        stored_block_checked(cid, bytes).map(Some)
    }

    /// Reads the blocks `cid_at(0..count)` (each checked against its CID,
    /// as [`Store::get_block`]; `None`: not stored) and hands each to
    /// `each` with its place, in no set order (about their keys').
    /// Stops at the first error `each` returns.
    ///
    /// For many blocks: they are read in their keys' order, a range scan
    /// for every [`BLOCKS_PER_SCAN`] of them, where SlateDB answers each
    /// point read by building an iterator over every source of its tree
    /// (one per record was most of a repository check's time). A block the
    /// scans do not find (one stored as a delta, a missing one, or one among
    /// more other blocks than the scan reads) is read by itself.
    ///
    /// # Errors
    ///
    /// The first error of `each`, or [`Error::Unavailable`] (converted)
    /// when a scan cannot read the store; a block's own read errors go to
    /// `each`.
    pub async fn each_block<E: From<Error>>(
        &self,
        count: usize,
        cid_at: impl Fn(usize) -> Cid + Sync,
        mut each: impl FnMut(usize, Result<Option<Block>, Error>) -> Result<(), E>,
    ) -> Result<(), E> {
        use futures::StreamExt as _;
        // Key order for the usual CIDs (CIDv1, SHA-256, a 1-byte codec),
        // the same prefix before the digest; any other order only sends
        // more blocks to the point reads below.
        let key = |i| BlockKey::new(&cid_at(i));
        let mut order: Vec<usize> = (0..count).collect();
        order.sort_unstable_by_key(|&i| cid_at(i));
        let scans = futures::stream::iter(order.chunks(BLOCKS_PER_SCAN))
            .map(|chunk| async move {
                // `chunks` yields no empty chunk.
                let (Some(&first), Some(&last)) = (chunk.first(), chunk.last()) else {
                    return Ok((chunk, Vec::new()));
                };
                let range = keycodec::KeyRange {
                    start: key(first).to_vec(),
                    // The key right after the last one.
                    end: Some([&*key(last), &[0]].concat()),
                };
                let limit = chunk.len() * KEYS_PER_WANTED_BLOCK;
                if range.end.as_ref().is_some_and(|end| range.start < *end) {
                    Ok((chunk, self.kv.scan(&range, false, limit).await?))
                } else {
                    Ok((chunk, Vec::new()))
                }
            })
            .buffered(SCANS_IN_FLIGHT);
        futures::pin_mut!(scans);
        while let Some(scanned) = scans.next().await {
            let (chunk, entries) = scanned.map_err(E::from)?;
            let mut unread = Vec::new();
            let mut wanted = chunk.iter().copied().peekable();
            for (stored, value) in &entries {
                // The wanted blocks up to this key: found, or not where a
                // plain block's key would be.
                while let Some(&i) = wanted.peek() {
                    let cid = cid_at(i);
                    let wanted_key = BlockKey::new(&cid);
                    if *wanted_key > stored[..] {
                        break;
                    }
                    wanted.next();
                    if *wanted_key == stored[..] {
                        each(i, stored_block_checked(&cid, value.clone()).map(Some))?;
                    } else {
                        unread.push(i);
                    }
                }
            }
            unread.extend(wanted);
            let mut reads = futures::stream::iter(unread)
                .map(|i| {
                    let cid = cid_at(i);
                    async move { (i, self.get_block(&cid).await) }
                })
                .buffered(POINT_READS_IN_FLIGHT);
            while let Some((i, result)) = reads.next().await {
                each(i, result)?;
            }
        }
        Ok(())
    }

    /// The block of shard `cid` for a reader that goes through many shard
    /// versions in commit order (a firehose replay): most versions are
    /// stored as deltas, so the delta key is tried first, and the anchors
    /// they are rebuilt from come from `anchors` (the versions of a shard
    /// share one anchor for many commits) or the decoded-shard cache before
    /// the store. Checked against its CID like [`Store::get_block`].
    ///
    /// # Errors
    ///
    /// As [`Store::get_block`].
    pub async fn get_shard_block(
        &self,
        cid: &Cid,
        anchors: &AnchorMemo,
    ) -> Result<Option<Block>, Error> {
        let bytes = match self.kv.get(&BlockKey::delta(cid)).await? {
            None => match self.kv.get(&BlockKey::new(cid)).await? {
                Some(bytes) => bytes,
                None => return Ok(None),
            },
            Some(value) => {
                let (bytes, anchor) = self
                    .apply_delta(cid, &value, |a| {
                        anchors
                            .get(a)
                            .or_else(|| self.cache().get(a).map(|s| s.encoded()))
                    })
                    .await?;
                anchors.insert(anchor.cid, anchor.bytes);
                bytes
            }
        };
        stored_block_checked(cid, bytes).map(Some)
    }

    /// Puts `block`, a new version of a shard, as a change to the full
    /// block its previous version is stored as or changes, when that is
    /// much smaller (`delta.rs`); returns the anchor it is stored against.
    pub(super) fn delta_put(
        &self,
        block: &Block,
        shard: &Shard,
        ops: &mut Vec<WriteOp>,
    ) -> Option<Anchor> {
        let anchor = shard
            .previous()
            .and_then(|previous| self.cache().anchor_for(&previous))
            .filter(|anchor| anchor.cid != block.cid());
        if let Some(anchor) = anchor
            && let Some(delta) = delta::encode(&anchor.cid, &anchor.bytes, block.bytes())
        {
            ops.push(WriteOp::Put(BlockKey::delta(&block.cid()).to_vec(), delta));
            return Some(anchor);
        }
        ops.push(block_put(block));
        None
    }

    /// The stored bytes of block `cid`, unverified, and the anchor they
    /// were rebuilt from if it is stored as a delta.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] for a delta that does not decode or fit its
    /// anchor, [`Error::MissingAnchor`], or a storage error.
    ///
    /// With `cached`, an anchor in the decoded-shard cache is not read
    /// again; without, everything comes from storage (what a check needs).
    pub(crate) async fn stored_block(
        &self,
        cid: &Cid,
        cached: bool,
    ) -> Result<Option<(Bytes, Option<Anchor>)>, Error> {
        if let Some(bytes) = self.kv.get(&BlockKey::new(cid)).await? {
            return Ok(Some((bytes, None)));
        }
        let Some(value) = self.kv.get(&BlockKey::delta(cid)).await? else {
            return Ok(None);
        };
        let (bytes, anchor) = self
            .apply_delta(cid, &value, |a| {
                cached
                    .then(|| self.cache().get(a).map(|s| s.encoded()))
                    .flatten()
            })
            .await?;
        Ok(Some((bytes, Some(anchor))))
    }

    /// Block `cid` rebuilt from its stored delta `value`, and the anchor it
    /// was rebuilt from: the bytes `known` gives for the anchor's CID, else
    /// those the store holds.
    pub(super) async fn apply_delta(
        &self,
        cid: &Cid,
        value: &[u8],
        known: impl FnOnce(&Cid) -> Option<Bytes>,
    ) -> Result<(Bytes, Anchor), Error> {
        let corrupt = |_| Error::Corrupt { cid: *cid };
        let delta = delta::Delta::decode(value).map_err(corrupt)?;
        let anchor_bytes = match known(&delta.anchor) {
            Some(bytes) => bytes,
            None => self
                .kv
                .get(&BlockKey::new(&delta.anchor))
                .await?
                .ok_or_else(|| Error::MissingAnchor {
                    cid: *cid,
                    anchor: Box::new(delta.anchor),
                })?,
        };
        let bytes = delta.apply(&anchor_bytes).map_err(corrupt)?;
        let anchor = Anchor {
            cid: delta.anchor,
            bytes: anchor_bytes,
        };
        Ok((Bytes::from(bytes), anchor))
    }

    /// A shard read from storage, bypassing (and not filling) the
    /// decoded-shard cache: what is stored, checked against `cid`.
    ///
    /// # Errors
    ///
    /// [`pail::Error::MissingBlock`], [`Error::Corrupt`] (as
    /// [`pail::Error::Store`]) when the bytes do not hash to `cid`,
    /// [`pail::Error::InvalidShard`] for a valid block that is not a shard,
    /// or a storage error.
    pub async fn read_shard(&self, cid: &Cid) -> Result<Shard, pail::Error> {
        self.read_stored_shard(cid, false)
            .await
            .map(|(shard, _)| shard)
    }

    /// [`Store::read_shard`], and the anchor it was rebuilt from if it is
    /// stored as a delta.
    pub(super) async fn read_stored_shard(
        &self,
        cid: &Cid,
        cached: bool,
    ) -> Result<(Shard, Option<Anchor>), pail::Error> {
        let store_err = |e: Error| pail::Error::Store(Box::new(e));
        let (bytes, anchor) = self
            .stored_block(cid, cached)
            .await
            .map_err(store_err)?
            .ok_or(pail::Error::MissingBlock(*cid))?;
        // Decoding hashes the bytes to compute the shard's CID, so comparing
        // it with `cid` is the verification: each shard is hashed once.
        let corrupt = || store_err(Error::Corrupt { cid: *cid });
        match Shard::decode(&bytes) {
            Ok(shard) if shard.cid() == *cid => Ok((shard, anchor)),
            Ok(_) => Err(corrupt()),
            // Undecodable bytes are corrupt unless they are a valid block
            // that is simply not a shard.
            Err(e) => Err(if crate::block::verify(cid, &bytes).map_err(store_err)? {
                e
            } else {
                corrupt()
            }),
        }
    }

    /// The shard `cid` if the decoded-shard cache holds it (a recent
    /// commit's shards do), without reading the store (a miss adds
    /// nothing to the cache).
    #[must_use]
    pub fn cached_shard(&self, cid: &Cid) -> Option<Arc<Shard>> {
        self.cache().get(cid)
    }
}
