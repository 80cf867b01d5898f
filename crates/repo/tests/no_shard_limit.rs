//! The default shard configuration holds any keys: a shard that cannot be
//! split (no two entries share a first character) holds at most one entry
//! per character a record path can contain (68), and 69 of the largest
//! entries fit in `maxSize` (the bound is worked out on
//! `repo::default_shard_config`). These keys build exactly that shard,
//! the worst case; with a smaller `maxSize` (4096) the same puts fail with
//! a shard-limit error.

use std::sync::Arc;

use pail::{Batch, MemoryBlocks, Shard, ShardConfig};

/// Every character a record path can hold: NSID and record key characters
/// and the `/` between them.
fn alphabet() -> Vec<char> {
    ('A'..='Z')
        .chain('a'..='z')
        .chain('0'..='9')
        .chain("._:~-/".chars())
        .collect()
}

/// Puts, for each character, a key of `maxKeyLength` characters and a
/// longer one it prefixes: one `[key, [link, data]]` entry per character,
/// all in the root shard.
fn fill(config: ShardConfig) -> Result<usize, pail::Error> {
    pollster::block_on(async {
        let blocks = MemoryBlocks::new();
        let empty = Arc::new(Shard::empty(config));
        blocks.insert(Arc::clone(&empty));
        let mut batch = Batch::new(&blocks, empty.cid()).await?;
        let len = usize::try_from(config.max_key_length).unwrap();
        for c in alphabet() {
            let key = format!("{c}{}", "x".repeat(len - 1));
            batch.put(&key, empty.cid()).await?;
            batch.put(&format!("{key}y"), empty.cid()).await?;
        }
        let m = batch.commit();
        blocks.apply(&m, false);
        let root = pail::entries(&blocks, m.root, &pail::EntriesOptions::default()).await?;
        let shard = pail::ShardFetcher::get_shard(&blocks, &m.root).await?;
        assert_eq!(shard.len(), alphabet().len(), "one entry per character");
        assert!(shard.bytes().len() as u64 <= config.max_size);
        Ok(root.len())
    })
}

#[test]
fn the_worst_case_fits_the_default_shards() {
    let config = repo::default_shard_config();
    assert_eq!(fill(config).unwrap(), 2 * alphabet().len());
}

#[test]
fn smaller_shards_would_refuse_it() {
    let config = ShardConfig {
        max_size: 4096,
        ..repo::default_shard_config()
    };
    let err = fill(config).unwrap_err();
    assert!(matches!(err, pail::Error::ShardLimit { .. }), "{err}");
}
