//! Records must read back through the JSON the API serves unchanged: import
//! refuses a record the write API would refuse (a float, an integer outside
//! the signed 64-bit range, a plain map with a `$link` or `$bytes` key, a
//! `$type` that is not the collection, or none), naming the record and the
//! rule, and writes nothing; `check` reports such a record in a store.
//!
//! The records are canonical dag-cbor, planted with the `pail` and `store`
//! crates under a repository written normally (the store keeps any bytes).

use crate::common;

use std::collections::BTreeMap;

use ipld_core::ipld::Ipld;
use repo::{Error, Write};
use serde_json::json;
use store::{Block, RecordChange};

const DID: &str = "did:web:model.example";
const COLLECTION: &str = "com.example.post";

fn record(fields: Vec<(&str, Ipld)>) -> Block {
    let map: BTreeMap<String, Ipld> = fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
    Block::new(
        0x71,
        serde_ipld_dagcbor::to_vec(&Ipld::Map(map)).unwrap().into(),
    )
}

fn typed(field: &str, value: Ipld) -> Block {
    record(vec![
        ("$type", Ipld::String(COLLECTION.into())),
        (field, value),
    ])
}

/// The bad records, each with what the error must say.
fn bad_records() -> Vec<(&'static str, Block, &'static str)> {
    let link_text = "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm";
    vec![
        ("float", typed("n", Ipld::Float(1.5)), "is a float"),
        ("big", typed("n", Ipld::Integer(1 << 63)), "out of range"),
        (
            "small",
            typed("n", Ipld::Integer(-(1 << 63) - 1)),
            "out of range",
        ),
        (
            "fakelink",
            typed(
                "ref",
                Ipld::Map(BTreeMap::from([(
                    "$link".into(),
                    Ipld::String(link_text.into()),
                )])),
            ),
            "$link",
        ),
        (
            "fakebytes",
            typed(
                "blob",
                Ipld::List(vec![Ipld::Map(BTreeMap::from([(
                    "$bytes".into(),
                    Ipld::String("aGk".into()),
                )]))]),
            ),
            "$bytes",
        ),
        (
            "othertype",
            record(vec![("$type", Ipld::String("com.example.other".into()))]),
            "$type",
        ),
        (
            "notype",
            record(vec![("text", Ipld::String("hi".into()))]),
            "$type",
        ),
    ]
}

/// A repository with a few good records and `bad` planted under `rkey`.
async fn plant(repos: &repo::Repos<store::MemoryKv>, rkey: &str, bad: &Block) {
    let repo = repos.create(DID).await.unwrap();
    let writes = (0..3)
        .map(|i| Write::Create {
            collection: COLLECTION.into(),
            rkey: Some(format!("good{i}")),
            value: json!({ "n": i }),
        })
        .collect();
    repo.apply_writes(writes, None).await.unwrap();
    let store = repos.store();
    let head = repo.head().await.unwrap();
    let mut batch = pail::Batch::new(&**store, head.data).await.unwrap();
    batch
        .put(&format!("{COLLECTION}/{rkey}"), bad.cid())
        .await
        .unwrap();
    let mutation = batch.commit();
    let blocks = mutation.additions.iter().map(Block::from_shard).collect();
    let rev = rkey::Tid::from_u64(head.rev.as_u64() + 1);
    let records = vec![RecordChange {
        collection: COLLECTION.into(),
        rkey: rkey.into(),
        record: Some(bad.clone()),
    }];
    common::land_raw_commit(repos, DID, &head, rev, mutation.root, blocks, records).await;
}

#[test]
fn import_refuses_records_the_write_api_refuses() {
    common::rt().block_on(async {
        for (rkey, bad, rule) in bad_records() {
            let source = common::repos();
            plant(&source, rkey, &bad).await;
            let car = common::export(&source, DID).await;
            let fresh = common::repos();
            let err = fresh.import_car(&car[..], None).await.unwrap_err();
            assert!(matches!(err, Error::InvalidCar(_)), "{rkey}: {err}");
            let message = err.to_string();
            assert!(
                message.contains(&format!("record {COLLECTION}/{rkey}")) && message.contains(rule),
                "{rkey}: {message}"
            );
            assert!(
                fresh.list().await.unwrap().is_empty(),
                "{rkey}: something was written"
            );
        }
    });
}

#[test]
fn check_reports_records_the_write_api_refuses() {
    common::rt().block_on(async {
        for (rkey, bad, rule) in bad_records() {
            let source = common::repos();
            plant(&source, rkey, &bad).await;
            let report = source.check(DID, |_| {}).await.unwrap();
            assert!(!report.is_intact(), "{rkey}: check called it intact");
            assert!(
                report
                    .problems
                    .iter()
                    .any(|p| p.contains(&format!("{COLLECTION}/{rkey}")) && p.contains(rule)),
                "{rkey}: {:?}",
                report.problems
            );
        }
    });
}

#[test]
fn the_api_accepts_exactly_the_signed_64_bit_range() {
    let ok = |n: serde_json::Value| {
        repo::Record::from_json(COLLECTION, json!({ "n": n }))
            .map(drop)
            .map_err(|e| e.to_string())
    };
    assert!(ok(json!(i64::MAX)).is_ok());
    assert!(ok(json!(i64::MIN)).is_ok());
    for out in [
        "9223372036854775808",
        "18446744073709551615",
        "-9223372036854775809",
        "1e30",
    ] {
        let n: serde_json::Value = serde_json::from_str(out).unwrap();
        let err = ok(n).unwrap_err();
        assert!(err.contains("out of range"), "{out}: {err}");
    }
    let err = ok(json!(1.5)).unwrap_err();
    assert!(err.contains("not an integer"), "{err}");
}
