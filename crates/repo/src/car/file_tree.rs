//! The tree of an imported file: its entries, their keys and their records,
//! checked before anything is written.

use std::sync::{Arc, Mutex};

use cid::Cid;
use foldhash::HashMap;
use pail::{Shard, ShardFetcher};
use rkey::{Nsid, RecordKey};
use store::{Block, Kv, Store};

use super::read::{FileBlocks, car_err};
use crate::{error::Error, record::Record};

/// A tree entry: its key and where its record is.
pub(super) fn located(blocks: &FileBlocks, key: String, cid: Cid) -> TreeEntry {
    TreeEntry {
        key,
        record: match blocks.position(&cid) {
            Some(p) => Located::File(p),
            None => Located::Stored(Box::new(cid)),
        },
    }
}

/// A record's block from the imported file, else from the store.
pub(super) async fn record_block<K: Kv>(
    blocks: &FileBlocks,
    store: &Store<K>,
    cid: Cid,
) -> Result<Block, Error> {
    match blocks.get(&cid) {
        Some(block) => Ok(block.clone()),
        None => store.get_block(&cid).await?.ok_or(Error::MissingBlock(cid)),
    }
}

/// A key of an imported tree and where its record is.
pub(super) struct TreeEntry {
    pub(super) key: String,
    pub(super) record: Located,
}

/// Where an imported tree's record is.
pub(super) enum Located {
    /// At this position of the file's blocks.
    File(usize),
    /// Not in the file, so it must already be in the store.
    Stored(Box<Cid>),
}

impl TreeEntry {
    /// The entry's record block.
    pub(super) async fn record<K: Kv>(
        &self,
        blocks: &FileBlocks,
        store: &Store<K>,
    ) -> Result<Block, Error> {
        match &self.record {
            Located::File(p) => Ok(blocks.blocks[*p].clone()),
            Located::Stored(cid) => store
                .get_block(cid)
                .await?
                .ok_or(Error::MissingBlock(**cid)),
        }
    }
}

/// Checks that each tree key is `collection/rkey` with a valid NSID and
/// record key.
pub(super) fn check_keys(entries: &[TreeEntry]) -> Result<(), Error> {
    // Keys come in order, so a collection's keys are adjacent: its NSID is
    // checked once.
    let mut checked_collection = None;
    for entry in entries {
        let key = &entry.key;
        let (collection, rkey) = key
            .split_once('/')
            .ok_or_else(|| car_err(format!("tree key {key:?} is not collection/rkey")))?;
        if checked_collection != Some(collection) {
            Nsid::new(collection).map_err(|e| car_err(format!("tree key {key:?}: {e}")))?;
            checked_collection = Some(collection);
        }
        RecordKey::new(rkey).map_err(|e| car_err(format!("tree key {key:?}: {e}")))?;
    }
    Ok(())
}

/// Checks every record the tree names, once each: a record in the file
/// must be a canonical dag-cbor map; one not in the file must be in the
/// store. Returns the positions of the file's records.
pub(super) async fn check_records<K: Kv>(
    blocks: &FileBlocks,
    entries: &[TreeEntry],
    store: &Store<K>,
) -> Result<Vec<usize>, Error> {
    let mut seen = vec![false; blocks.len()];
    // (entry, position) of each record's first entry.
    let mut in_file = Vec::with_capacity(entries.len());
    // The entries whose records must be in the store.
    let mut stored: Vec<(usize, Cid)> = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        match &entry.record {
            Located::File(p) => {
                if !std::mem::replace(&mut seen[*p], true) {
                    in_file.push((i, *p));
                }
            }
            Located::Stored(cid) => stored.push((i, **cid)),
        }
    }
    // Read together (an increment's tree names every record of the
    // repository, most of them stored): the first absent one in tree
    // order is the error.
    let mut absent: Option<(usize, Cid)> = None;
    store
        .each_block(
            stored.len(),
            |n| stored[n].1,
            |n, block| -> Result<(), Error> {
                if block?.is_none() && absent.is_none_or(|(i, _)| stored[n].0 < i) {
                    absent = Some(stored[n]);
                }
                Ok(())
            },
        )
        .await?;
    if let Some((i, cid)) = absent {
        return Err(car_err(format!(
            "record {} ({cid}) is neither in the file nor in the store",
            entries[i].key
        )));
    }
    let check = |part: &[(usize, usize)]| {
        part.iter().find_map(|&(i, p)| {
            let block = &blocks.blocks[p];
            let key = &entries[i].key;
            let collection = key.split_once('/').map_or(key.as_str(), |(c, _)| c);
            Record::check_encoding(block.cid(), block.bytes())
                .and_then(|()| Record::check_data_model(collection, block.bytes()))
                .err()
                .map(|e| car_err(format!("record {key}: {e}")))
        })
    };
    // Decoding and re-encoding each record is most of an import's CPU:
    // spread over the cores, reporting the first bad record in tree order.
    let error = crate::parallel::in_parts(&mut in_file, |part| check(part))
        .into_iter()
        .flatten()
        .next();
    match error {
        Some(e) => Err(e),
        None => Ok(in_file.into_iter().map(|(_, p)| p).collect()),
    }
}

/// Shards from an imported file's blocks, else from the store.
pub(super) struct ImportBlocks<'a, K> {
    pub(super) blocks: &'a FileBlocks,
    pub(super) store: &'a Store<K>,
    pub(super) decoded: Mutex<HashMap<Cid, Arc<Shard>>>,
}

impl<K: Kv> ShardFetcher for ImportBlocks<'_, K> {
    async fn get_shard(&self, cid: &Cid) -> Result<Arc<Shard>, pail::Error> {
        if let Some(shard) = self
            .decoded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(cid)
        {
            return Ok(Arc::clone(shard));
        }
        let Some(block) = self.blocks.get(cid) else {
            return self.store.get_shard(cid).await;
        };
        let shard = Shard::decode(block.bytes())?;
        if shard.cid() != *cid {
            return Err(pail::Error::InvalidShard {
                reason: format!("block {cid} does not hash to its CID"),
            });
        }
        let shard = Arc::new(shard);
        self.decoded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(*cid, Arc::clone(&shard));
        Ok(shard)
    }
}
