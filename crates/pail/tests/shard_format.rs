//! The shard format is API: exact bytes and CIDs pinned by values taken
//! from `@web3-storage/pail@0.5.0`, our encoder checked against
//! `serde_ipld_dagcbor`, and decoding of untrusted bytes that rejects
//! anything non-canonical and never panics.

use crate::common;

use std::collections::BTreeMap;

use cid::Cid;
use common::{empty_tree, value};
use ipld_core::ipld::Ipld;
use pail::{Shard, ShardConfig, ShardValue};
use proptest::prelude::*;

/// Recorded from the reference: `(await ShardBlock.create()).bytes` in hex.
const EMPTY_DEFAULT_SHARD_HEX: &str =
    "a367656e747269657380676d617853697a651a000800006c6d61784b65794c656e6774681840";

#[test]
fn empty_shard_bytes_match_the_reference() {
    let shard = Shard::empty(ShardConfig::default());
    assert_eq!(hex(shard.bytes()), EMPTY_DEFAULT_SHARD_HEX);
    assert_eq!(
        shard.cid().to_string(),
        "bafyreiflpbpsuu4rm5wackscdscm6gbs7u6bxk6v6obo6f52z3vstwwpyu"
    );
}

#[test]
fn roots_match_the_reference_for_ascii_and_bmp_keys() {
    // Recorded from the reference (tests/oracles/pail-oracle.mjs) for these puts.
    let v: Cid = "bafkreiem4twkqzsq2aj4shbycd4yvoj2cx72vezicletlhi7dijjciqpui"
        .parse()
        .unwrap();
    let (blocks, root) = empty_tree(ShardConfig::default());
    let m = pollster::block_on(pail::put(&blocks, root, "a", v)).unwrap();
    blocks.apply(&m, true);
    assert_eq!(
        m.root.to_string(),
        "bafyreifmvekataldbgrghgz55jjlyu6a2qyajw3eipya6uthunub5upube"
    );
    let m = pollster::block_on(pail::put(&blocks, m.root, "aé漢", v)).unwrap();
    assert_eq!(
        m.root.to_string(),
        "bafyreigetquxc2i2bbelek6ao6sq2k6fsmbie5oz43epykqdmq4hapwhuu"
    );
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn to_ipld(shard: &Shard) -> Ipld {
    let link = Ipld::Link;
    let entries = shard
        .entries()
        .map(|(k, v)| {
            let value = match v {
                ShardValue::Data(d) => link(d),
                ShardValue::Link(l) => Ipld::List(vec![link(l)]),
                ShardValue::LinkData { link: l, data } => Ipld::List(vec![link(l), link(data)]),
            };
            Ipld::List(vec![Ipld::String(k.to_owned()), value])
        })
        .collect();
    let mut map = BTreeMap::new();
    map.insert("entries".to_owned(), Ipld::List(entries));
    map.insert(
        "maxSize".to_owned(),
        Ipld::Integer(shard.config().max_size.into()),
    );
    map.insert(
        "maxKeyLength".to_owned(),
        Ipld::Integer(shard.config().max_key_length.into()),
    );
    Ipld::Map(map)
}

proptest! {
    #[test]
    fn encoding_matches_serde_ipld_dagcbor(
        entries in proptest::collection::btree_map("[a-zé漢]{0,30}", (0u8..3, any::<u64>(), any::<u64>()), 0..40),
        max_size in prop_oneof![Just(0u64), Just(23), Just(24), Just(255), Just(65536), Just(u64::MAX), any::<u64>()],
        max_key_length in prop_oneof![Just(64u64), any::<u64>()],
    ) {
        let entries: Vec<(&str, ShardValue)> = entries
            .iter()
            .map(|(k, (kind, a, b))| {
                let v = match kind {
                    0 => ShardValue::Data(value(*a)),
                    1 => ShardValue::Link(value(*a)),
                    _ => ShardValue::LinkData { link: value(*a), data: value(*b) },
                };
                (k.as_str(), v)
            })
            .collect();
        let shard = Shard::from_entries(ShardConfig { max_size, max_key_length }, entries).unwrap();
        let expected = serde_ipld_dagcbor::to_vec(&to_ipld(&shard)).unwrap();
        prop_assert_eq!(hex(shard.bytes()), hex(&expected));
        let decoded = Shard::decode(shard.bytes()).unwrap();
        prop_assert_eq!(decoded.cid(), shard.cid());
        prop_assert_eq!(decoded.entries().collect::<Vec<_>>(), shard.entries().collect::<Vec<_>>());
    }

    #[test]
    fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = Shard::decode(&bytes);
    }

    #[test]
    fn decoding_mutated_shards_never_panics(flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4)) {
        let v = value(7);
        let shard = Shard::from_entries(ShardConfig::default(), [
            ("a", ShardValue::Data(v)),
            ("b", ShardValue::Link(v)),
            ("c", ShardValue::LinkData { link: v, data: v }),
        ]).unwrap();
        let mut bytes = shard.bytes().to_vec();
        for (i, b) in flips {
            let i = i.index(bytes.len());
            bytes[i] ^= b;
        }
        if let Ok(decoded) = Shard::decode(&bytes) {
            // Anything accepted must be canonical: it re-encodes to itself.
            prop_assert_eq!(decoded.bytes(), bytes.as_slice());
        }
    }
}

#[test]
fn non_canonical_and_foreign_shapes_are_rejected() {
    let v = value(1);
    let ok = Shard::from_entries(ShardConfig::default(), [("a", ShardValue::Data(v))]).unwrap();
    let mut map = match to_ipld(&ok) {
        Ipld::Map(m) => m,
        _ => unreachable!(),
    };
    // An extra field.
    map.insert("extra".into(), Ipld::Null);
    let bytes = serde_ipld_dagcbor::to_vec(&Ipld::Map(map.clone())).unwrap();
    assert!(Shard::decode(&bytes).is_err());
    // Entries out of order.
    map.remove("extra");
    let entries = vec![
        Ipld::List(vec![Ipld::String("b".into()), Ipld::Link(v)]),
        Ipld::List(vec![Ipld::String("a".into()), Ipld::Link(v)]),
    ];
    map.insert("entries".into(), Ipld::List(entries));
    let bytes = serde_ipld_dagcbor::to_vec(&Ipld::Map(map.clone())).unwrap();
    assert!(Shard::decode(&bytes).is_err());
    // A value that is neither a CID nor a list of one or two CIDs.
    map.insert(
        "entries".into(),
        Ipld::List(vec![Ipld::List(vec![
            Ipld::String("a".into()),
            Ipld::Integer(1),
        ])]),
    );
    let bytes = serde_ipld_dagcbor::to_vec(&Ipld::Map(map)).unwrap();
    assert!(Shard::decode(&bytes).is_err());
    // Pail 0.3 shards were a bare list of entries.
    let bytes = serde_ipld_dagcbor::to_vec(&Ipld::List(vec![])).unwrap();
    assert!(Shard::decode(&bytes).is_err());
    // A non-minimal integer head (maxKeyLength 64 as a 2-byte argument).
    let mut bytes = ok.bytes().to_vec();
    let n = bytes.len();
    assert_eq!(&bytes[n - 2..], &[0x18, 0x40]);
    bytes.splice(n - 2.., [0x19, 0x00, 0x40]);
    assert!(Shard::decode(&bytes).is_err());
    assert!(Shard::decode(ok.bytes()).is_ok());
}
