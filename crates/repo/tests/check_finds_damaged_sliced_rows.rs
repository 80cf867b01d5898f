//! `check` compares an integer index's bit-sliced rows with a rebuild
//! container by container (a record's values are as many slots): a
//! container removed, one holding another slot's bits, and one a rebuild
//! would not write are each reported; an intact index reports nothing.

use crate::common;

use keycodec::KeyRange;
use repo::{IndexKind, Write};
use serde_json::json;
use store::{Kv, WriteOp};

const DID: &str = "did:web:sliced";
const COLLECTION: &str = "app.test.series";

/// The slot a bit-sliced container holds (columns below 2^16: shard 0,
/// container key `slot · 16`), by its key; `None` for other keys.
fn slot_of(key: &[u8]) -> Option<u64> {
    let tx = keycodec::txkey::full::Key::parse(key.get(2..)?).ok()?;
    (tx.view == "bsig_points").then_some(tx.ckey / 16)
}

#[test]
fn damaged_sliced_containers_are_reported() {
    common::rt().block_on(async {
        let repos = common::repos();
        let repo = repos.create(DID).await.unwrap();
        repo.apply_writes(
            vec![
                Write::Create {
                    collection: COLLECTION.into(),
                    rkey: Some("a".into()),
                    value: json!({"points": [1, -2, 3, 4]}),
                },
                Write::Create {
                    collection: COLLECTION.into(),
                    rkey: Some("b".into()),
                    value: json!({"points": [5]}),
                },
            ],
            None,
        )
        .await
        .unwrap();
        repo.add_index(COLLECTION, "points", IndexKind::Integer, |_| {})
            .await
            .unwrap();
        assert_eq!(
            repo.index_differences().await.unwrap(),
            Vec::<String>::new()
        );

        let kv = repos.store().kv();
        let containers: Vec<(u64, bytes::Bytes, bytes::Bytes)> = kv
            .scan(&KeyRange::prefix(&[0x01, 0x60]), false, usize::MAX)
            .await
            .unwrap()
            .into_iter()
            .filter_map(|(k, v)| Some((slot_of(&k)?, k, v)))
            .collect();
        let slots: Vec<u64> = containers.iter().map(|(s, _, _)| *s).collect();
        assert_eq!(slots, [0, 1, 2, 3], "one container per slot");
        let (_, key1, value1) = &containers[1];
        let (_, key2, _) = &containers[2];
        let (_, key3, value3) = &containers[3];
        // Slot 1's container gone, slot 3's bits under slot 2, and a slot
        // past every record's values.
        let past = [&key3[..key3.len() - 2], &[0x50, b'#']].concat();
        assert_eq!(slot_of(&past), Some(5));
        kv.write(vec![
            WriteOp::Delete(key1.to_vec()),
            WriteOp::Put(key2.to_vec(), value3.clone()),
            WriteOp::Put(past, value1.clone()),
        ])
        .await
        .unwrap();

        let problems = repo.index_differences().await.unwrap();
        let about = |row: u64, what: &str| {
            problems
                .iter()
                .any(|p| p.contains(&format!("row: {row} }}")) && p.contains(what))
        };
        // Slot 1 holds -2: exists (row 66), sign (67), bit 1 (69).
        assert!(about(66, "is missing"), "{problems:#?}");
        assert!(about(69, "is missing"), "{problems:#?}");
        // Slot 2 (3: rows 132, 134, 135) now holds 4's bits (132, 136).
        assert!(
            about(136, "holds 1 records that a rebuild does not"),
            "{problems:#?}"
        );
        assert!(about(134, "is missing"), "{problems:#?}");
        assert!(
            !about(132, ""),
            "slot 2's exists row is intact: {problems:#?}"
        );
        // Slot 5: -2's rows moved there.
        assert!(
            about(5 * 66 + 1, "that a rebuild does not"),
            "{problems:#?}"
        );
        assert!(
            problems.iter().all(|p| p.contains("in columns 0–65535")),
            "{problems:#?}"
        );
    });
}
