//! Records encode exactly as `serde_ipld_dagcbor` encodes the same data as
//! an `Ipld` value, at every CBOR head boundary: integers of every width
//! and sign (beyond JavaScript's safe range, which the npm oracle in
//! `records_vs_atproto.rs` cannot reach), and strings, byte strings,
//! arrays and maps of every length class; CIDv0 and CIDv1 links.

use std::collections::BTreeMap;

use base64::Engine as _;
use ipld_core::ipld::Ipld;
use repo::Record;
use serde_json::{Value, json};

const COLLECTION: &str = "com.example.record";

fn lengths() -> Vec<usize> {
    vec![0, 1, 23, 24, 255, 256, 65_535, 65_536]
}

/// Our encoding of `{"$type", "v": v}` against the reference's of
/// `{"$type", "v": expected}`.
fn check(v: Value, expected: Ipld) {
    let ours = Record::from_json(COLLECTION, json!({ "v": v })).unwrap();
    let reference = Ipld::Map(BTreeMap::from([
        ("$type".to_owned(), Ipld::String(COLLECTION.to_owned())),
        ("v".to_owned(), expected),
    ]));
    let reference = serde_ipld_dagcbor::to_vec(&reference).unwrap();
    assert!(
        ours.bytes().as_ref() == reference.as_slice(),
        "encoding differs for {:.80}",
        v.to_string()
    );
}

#[test]
fn integers_of_every_width_and_sign() {
    // AT Protocol integers are signed 64-bit: larger ones are refused
    // (`import_keeps_to_the_data_model.rs`), so the widest head is i64::MAX.
    let mut unsigned = vec![0u64, i64::MAX as u64, i64::MAX as u64 - 1];
    for bits in [5, 8, 16, 32] {
        let edge = 1u64 << bits;
        unsigned.extend([edge - 1, edge, edge + 1]);
    }
    unsigned.push(23);
    for u in unsigned {
        check(json!(u), Ipld::Integer(u.into()));
        if let Ok(i) = i64::try_from(u) {
            check(json!(-i), Ipld::Integer((-i).into()));
            check(json!(-i - 1), Ipld::Integer((-i - 1).into()));
        }
    }
    check(json!(i64::MIN), Ipld::Integer(i64::MIN.into()));
}

#[test]
fn strings_bytes_arrays_and_maps_of_every_length_class() {
    for n in lengths() {
        let s = "é".repeat(n / 2) + &"a".repeat(n % 2);
        check(json!(s), Ipld::String(s.clone()));

        let bytes: Vec<u8> = (0..n).map(|i| (i * 7) as u8).collect();
        let b64 = base64::engine::general_purpose::STANDARD_NO_PAD.encode(&bytes);
        check(json!({ "$bytes": b64 }), Ipld::Bytes(bytes));

        let items: Vec<Value> = (0..n).map(|i| json!(i)).collect();
        let list = (0..n as u64).map(|i| Ipld::Integer(i.into())).collect();
        check(Value::Array(items), Ipld::List(list));
    }
    for n in [0, 1, 23, 24, 300] {
        // Keys of varied lengths, inserted in reverse order.
        let keys: Vec<String> = (0..n).rev().map(|i| format!("k{}", i * 37)).collect();
        let map: serde_json::Map<String, Value> =
            keys.iter().map(|k| (k.clone(), json!(k.len()))).collect();
        let ipld = keys
            .iter()
            .map(|k| (k.clone(), Ipld::Integer((k.len() as u64).into())))
            .collect();
        check(Value::Object(map), Ipld::Map(ipld));
    }
}

#[test]
fn links_of_both_versions() {
    for s in [
        "QmdfTbBqBPQ7VNxZEYEj14VmRuZBkqFbiwReogJgS1zR1n",
        "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm",
        "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku",
    ] {
        let cid = cid::Cid::try_from(s).unwrap();
        check(json!({ "$link": s }), Ipld::Link(cid));
    }
}
