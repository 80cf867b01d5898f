//! Keys exactly at, one under and one over maxKeyLength (counted in
//! characters, multi-byte ones included), and chains several pieces long.

use crate::common;

use common::{all_entries, empty_tree, value};
use pail::{ShardConfig, ShardValue};

#[test]
fn keys_around_max_key_length() {
    let config = ShardConfig::default();
    for (len, ch) in [
        (63, 'a'),
        (64, 'a'),
        (65, 'a'),
        (64, '漢'),
        (65, '漢'),
        (129, 'é'),
        (200, 'z'),
    ] {
        let key: String = std::iter::repeat_n(ch, len).collect();
        let (blocks, root) = empty_tree(config);
        let m = pollster::block_on(pail::put(&blocks, root, &key, value(1))).unwrap();
        blocks.apply(&m, true);
        let root_shard = blocks
            .shards()
            .into_iter()
            .find(|s| s.cid() == m.root)
            .unwrap();
        let (first_key, first_value) = root_shard.entries().next().unwrap();
        let pieces = len.div_ceil(64);
        assert_eq!(
            m.additions.len(),
            pieces,
            "one shard per 64-character piece for {len} × {ch}"
        );
        assert_eq!(first_key.chars().count(), len.min(64));
        if len <= 64 {
            assert_eq!(first_value, ShardValue::Data(value(1)));
        } else {
            assert!(matches!(first_value, ShardValue::Link(_)));
        }
        assert_eq!(
            pollster::block_on(pail::get(&blocks, m.root, &key)).unwrap(),
            Some(value(1))
        );
        assert_eq!(all_entries(&blocks, m.root), vec![(key, value(1))]);
    }
}

#[test]
fn a_put_that_cannot_fit_fails_and_changes_nothing() {
    // Room for the first entry only, and no shared prefix to split by.
    let config = ShardConfig {
        max_size: 120,
        max_key_length: 64,
    };
    let (blocks, root) = empty_tree(config);
    let m = pollster::block_on(pail::put(&blocks, root, "apple", value(1))).unwrap();
    blocks.apply(&m, true);
    let err = pollster::block_on(pail::put(&blocks, m.root, "zebra", value(2))).unwrap_err();
    assert!(
        matches!(err, pail::Error::ShardLimit { ref key } if key == "zebra"),
        "{err}"
    );
    assert!(err.to_string().contains("nothing was changed"));
    assert_eq!(
        all_entries(&blocks, m.root),
        vec![("apple".to_owned(), value(1))]
    );
}

#[test]
fn shard_splits_exactly_when_over_max_size() {
    // Grow a shard one key at a time; it must split on the first put that
    // makes its encoding exceed maxSize, and not before.
    let config = ShardConfig {
        max_size: 600,
        max_key_length: 64,
    };
    let (blocks, mut root) = empty_tree(config);
    let mut split = false;
    for i in 0..40u64 {
        let key = format!("key{i:03}");
        let before = blocks
            .shards()
            .into_iter()
            .find(|s| s.cid() == root)
            .unwrap();
        let m = pollster::block_on(pail::put(&blocks, root, &key, value(i))).unwrap();
        blocks.apply(&m, false);
        root = m.root;
        let after = blocks
            .shards()
            .into_iter()
            .find(|s| s.cid() == root)
            .unwrap();
        let unsplit_size = before.bytes().len()
            + 1
            + 1
            + key.len()
            + 2
            + 2
            + 37
            + usize::from(before.len() + 1 == 24); // array head grows at 24 entries
        if unsplit_size as u64 > config.max_size {
            assert!(
                after.len() < before.len() + 1,
                "put {i} should have split ({unsplit_size} bytes)"
            );
            split = true;
            break;
        }
        assert_eq!(
            after.len(),
            before.len() + 1,
            "put {i} must not split ({unsplit_size} bytes)"
        );
        assert_eq!(after.bytes().len(), unsplit_size);
    }
    assert!(split, "the shard never reached maxSize");
}
