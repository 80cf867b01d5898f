//! Pail: an ordered key/value map stored as an IPLD DAG of dag-cbor shards.
//!
//! A tree is named by the CID of its root [`Shard`]. Keys are strings,
//! values are CIDs. Shards are the dag-cbor map `{entries, maxKeyLength,
//! maxSize}` that `@web3-storage/pail` 0.5 writes, byte for byte: the same
//! operations give the same root CID (for keys in the Basic Multilingual
//! Plane; see `docs/pail.md`). Where the reference loses data, this crate
//! keeps the map semantics: after any operations, [`get`] and [`entries`]
//! agree with a plain ordered map.
//!
//! - Writes: [`put`], [`del`], and [`Batch`] for many at once (each changed
//!   shard is encoded and hashed once). Each returns a [`Mutation`]: the new
//!   root, the shards added and the CIDs of the shards replaced.
//! - Reads: [`get`], [`entries`] / [`for_each_entry`] with prefix and range
//!   bounds, reverse order and a limit.
//! - [`diff`] between two roots and [`merge`] of trees into a base.
//! - Blocks come from a [`ShardFetcher`]; [`MemoryBlocks`] keeps them in memory,
//!   [`LiveBlocks`] keeps only the shards one tree reaches.
//!
//! This crate is not a block store (see the `store` crate) and does no I/O.
//!
//! ```
//! # pollster::block_on(async {
//! use pail::{MemoryBlocks, Shard, ShardConfig};
//! use std::sync::Arc;
//!
//! let blocks = MemoryBlocks::new();
//! let empty = Arc::new(Shard::empty(ShardConfig::default()));
//! blocks.insert(empty.clone());
//! let value = empty.cid();
//!
//! let m = pail::put(&blocks, empty.cid(), "hello", value).await?;
//! blocks.apply(&m, true);
//! assert_eq!(pail::get(&blocks, m.root, "hello").await?, Some(value));
//! # Ok::<_, pail::Error>(()) }).unwrap();
//! ```

#![warn(clippy::unwrap_used)]

mod batch;
mod cbor;
mod diff;
mod error;
mod fetcher;
mod hash;
mod read;
mod shard;
mod value;

use std::sync::Arc;

pub use batch::Batch;
pub use cid::Cid;
pub use diff::{Diff, KeyChange, diff, merge};
pub use error::Error;
pub use fetcher::{LiveBlocks, MemoryBlocks, ShardFetcher};
pub use read::{EntriesOptions, entries, for_each_entry, get};
pub use shard::{
    DAG_CBOR, DEFAULT_MAX_KEY_LENGTH, DEFAULT_MAX_SIZE, Shard, ShardConfig, shard_cid,
};
pub use value::ShardValue;

/// The result of a write: the new root, the shards it added, and the CIDs
/// of the shards it replaced.
///
/// A replaced shard may still be reachable from another root, or from
/// elsewhere in this tree when two shards have equal contents (and so one
/// CID); delete blocks by reachability, not from this list alone.
#[derive(Debug, Clone)]
pub struct Mutation {
    /// The new root.
    pub root: Cid,
    /// New shards, each once.
    pub additions: Vec<Arc<Shard>>,
    /// CIDs of the shards replaced, each once.
    pub removals: Vec<Cid>,
}

/// Puts `value` under `key` in the tree at `root`.
///
/// # Errors
///
/// [`Error::ShardLimit`] when the key cannot fit (nothing changes), or a
/// fetch error.
pub async fn put<F: ShardFetcher>(
    fetcher: &F,
    root: Cid,
    key: &str,
    value: Cid,
) -> Result<Mutation, Error> {
    let mut batch = Batch::new(fetcher, root).await?;
    batch.put(key, value).await?;
    Ok(batch.commit())
}

/// Deletes `key` from the tree at `root` (a no-op when absent).
///
/// # Errors
///
/// A fetch error.
pub async fn del<F: ShardFetcher>(fetcher: &F, root: Cid, key: &str) -> Result<Mutation, Error> {
    let mut batch = Batch::new(fetcher, root).await?;
    batch.del(key).await?;
    Ok(batch.commit())
}
