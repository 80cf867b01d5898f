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

/// Deterministic splitmix64.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    pub fn string(&mut self, alphabet: &[char], len: usize) -> String {
        (0..len)
            .map(|_| alphabet[self.below(alphabet.len())])
            .collect()
    }
}

/// All entries of a tree, in order.
pub fn all_entries(blocks: &MemoryBlocks, root: Cid) -> Vec<(String, Cid)> {
    pollster::block_on(pail::entries(blocks, root, &EntriesOptions::default())).unwrap()
}

/// The model's entries, in UTF-8 byte order.
pub fn model_entries(model: &BTreeMap<String, Cid>) -> Vec<(String, Cid)> {
    model.iter().map(|(k, v)| (k.clone(), *v)).collect()
}
