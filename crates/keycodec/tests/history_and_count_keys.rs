//! The two layouts that use their type's reserved bits: a record's history
//! (`0x41`) and a collection's record count (`0x51`), byte for byte as
//! `docs/storage-keys.md` draws them.

use std::borrow::Cow;

use keycodec::records::{
    DecodedKey, RecordType, decode_key, history_start_key, record_count_key, record_history_key,
    record_history_range, record_index_key, record_index_range, repo_history_range,
};

#[test]
fn record_history_key_bytes_are_pinned() {
    let key = record_history_key("r", "a.b.c", "x", 5);
    let expected: Vec<u8> = [
        &[0x01, 0x41][..],
        b"r\x00",
        b"a.b.c\x00",
        b"x\x00",
        &[0, 0, 0, 0, 0, 0, 0, 5],
    ]
    .concat();
    assert_eq!(key, expected);
    assert_eq!(history_start_key("r"), [0x01, 0x41, b'r', 0x00]);
}

#[test]
fn record_count_key_bytes_are_pinned() {
    let key = record_count_key("did:web:a", "app.bsky.feed.post");
    let expected: Vec<u8> = [
        &[0x01, 0x51][..],
        b"did:web:a\x00",
        b"app.bsky.feed.post\x00",
    ]
    .concat();
    assert_eq!(key, expected);
}

#[test]
fn both_decode_and_belong_to_their_record_types() {
    assert_eq!(
        decode_key(&record_history_key("r", "a.b.c", "x", 5)).unwrap(),
        DecodedKey::RecordHistory {
            repo: Cow::Borrowed("r"),
            collection: Cow::Borrowed("a.b.c"),
            rkey: Cow::Borrowed("x"),
            rev: 5,
        }
    );
    assert_eq!(
        decode_key(&history_start_key("r")).unwrap(),
        DecodedKey::HistoryStart {
            repo: Cow::Borrowed("r")
        }
    );
    let count_key = record_count_key("r", "a.b.c");
    let count = decode_key(&count_key).unwrap();
    assert_eq!(
        count,
        DecodedKey::RecordCount {
            repo: Cow::Borrowed("r"),
            collection: Cow::Borrowed("a.b.c"),
        }
    );
    assert_eq!(count.record_type(), RecordType::Collection);
    assert!(
        RecordType::RecordIndex
            .range()
            .contains(&record_history_key("r", "a.b.c", "x", 5))
    );
    // Other reserved values stay refused.
    assert!(decode_key(&[0x01, 0x42, b'r', 0x00]).is_err());
    assert!(decode_key(&[0x01, 0x52, b'r', 0x00, b'c', 0x00]).is_err());
}

#[test]
fn histories_stay_apart_from_the_record_index_and_in_rev_order() {
    let index = record_index_range("r", "a.b.c");
    assert!(!index.contains(&record_history_key("r", "a.b.c", "x", 5)));
    assert!(
        !record_history_range("r", "a.b.c", "x").contains(&record_index_key("r", "a.b.c", "x"))
    );
    let range = record_history_range("r", "a.b.c", "x");
    assert!(range.contains(&record_history_key("r", "a.b.c", "x", 0)));
    assert!(range.contains(&record_history_key("r", "a.b.c", "x", u64::MAX)));
    // The rkey "x\0…" is another record, whatever its entries' revs.
    assert!(!range.contains(&record_history_key("r", "a.b.c", "xy", 0)));
    assert!(record_history_key("r", "a.b.c", "x", 1) < record_history_key("r", "a.b.c", "x", 256));
    let all = repo_history_range("r");
    assert!(all.contains(&history_start_key("r")));
    assert!(history_start_key("r") < record_history_key("r", "a", "a", 0));
    assert!(!all.contains(&history_start_key("rr")));
}
