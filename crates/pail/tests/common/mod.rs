//! Helpers shared by the pail integration tests.
#![allow(dead_code, unreachable_pub)]

use std::{collections::BTreeMap, sync::Arc};

use cid::Cid;
use multihash_codetable::{Code, MultihashDigest};
use pail::{EntriesOptions, MemoryBlocks, Shard, ShardConfig};

/// A raw-codec CID for value number `n`.
pub fn value(n: u64) -> Cid {
    Cid::new_v1(0x55, Code::Sha2_256.digest(&n.to_be_bytes()))
}

/// An in-memory store holding an empty tree; returns it and the root.
pub fn empty_tree(config: ShardConfig) -> (MemoryBlocks, Cid) {
    let blocks = MemoryBlocks::new();
    let root = Arc::new(Shard::empty(config));
    blocks.insert(Arc::clone(&root));
    (blocks, root.cid())
}

/// All entries of a tree, in order.
pub fn all_entries(blocks: &MemoryBlocks, root: Cid) -> Vec<(String, Cid)> {
    pollster::block_on(pail::entries(blocks, root, &EntriesOptions::default())).unwrap()
}

/// The model's entries, in UTF-8 byte order.
pub fn model_entries(model: &BTreeMap<String, Cid>) -> Vec<(String, Cid)> {
    model.iter().map(|(k, v)| (k.clone(), *v)).collect()
}
