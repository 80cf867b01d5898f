//! datarepo's record-type layouts: exact bytes, decoding back, and the
//! scan ranges for a collection and a commit log.

use std::borrow::Cow;

use keycodec::{
    RecordType,
    records::{
        DecodedKey, block_delta_key, block_key, collection_key, commit_log_key, commit_log_range,
        decode_key, event_key, head_key, lexicon_key, record_index_key, record_index_range,
        signing_keys_key,
    },
};

#[test]
fn layouts_are_byte_exact() {
    assert_eq!(head_key("did:web:a"), b"\x01\x20did:web:a\x00");
    assert_eq!(
        commit_log_key("r", 0x0102),
        b"\x01\x30r\x00\x00\x00\x00\x00\x00\x00\x01\x02"
    );
    assert_eq!(
        record_index_key("r", "a.b.c", "self"),
        b"\x01\x40r\x00a.b.c\x00self\x00"
    );
    assert_eq!(collection_key("r", "a.b.c"), b"\x01\x50r\x00a.b.c\x00");
    assert_eq!(signing_keys_key("did:web:a"), b"\x01\xd0did:web:a\x00");
    assert_eq!(lexicon_key("r", "a.b.c"), b"\x01\xf0r\x00a.b.c\x00");
    assert_eq!(
        event_key(0x0102),
        b"\x01\xe0\x00\x00\x00\x00\x00\x00\x01\x02"
    );
    assert_eq!(
        block_key(&[0x01, 0x71, 0x12, 0x20]),
        b"\x01\x10\x01\x71\x12\x20"
    );
    assert_eq!(
        block_delta_key(&[0x01, 0x71, 0x12, 0x20]),
        b"\x01\x70\x01\x71\x12\x20"
    );
}

#[test]
fn every_layout_decodes_back() {
    let cases = [
        (
            block_key(b"\x01\x71\x12\x20abc"),
            DecodedKey::Block {
                cid: b"\x01\x71\x12\x20abc",
            },
        ),
        (
            block_delta_key(b"\x01\x71\x12\x20abc"),
            DecodedKey::BlockDelta {
                cid: b"\x01\x71\x12\x20abc",
            },
        ),
        (
            head_key("did:web:a"),
            DecodedKey::Head {
                repo: Cow::Borrowed("did:web:a"),
            },
        ),
        (
            commit_log_key("did:web:a", 77),
            DecodedKey::CommitLog {
                repo: Cow::Borrowed("did:web:a"),
                rev: 77,
            },
        ),
        (
            record_index_key("did:web:a", "app.bsky.feed.post", "3jui7kd54zh2y"),
            DecodedKey::RecordIndex {
                repo: Cow::Borrowed("did:web:a"),
                collection: Cow::Borrowed("app.bsky.feed.post"),
                rkey: Cow::Borrowed("3jui7kd54zh2y"),
            },
        ),
        (
            collection_key("did:web:a", "app.bsky.feed.post"),
            DecodedKey::Collection {
                repo: Cow::Borrowed("did:web:a"),
                collection: Cow::Borrowed("app.bsky.feed.post"),
            },
        ),
        (event_key(77), DecodedKey::Event { seq: 77 }),
        (
            signing_keys_key("did:web:a"),
            DecodedKey::SigningKeys {
                repo: Cow::Borrowed("did:web:a"),
            },
        ),
        (
            lexicon_key("did:web:a", "app.bsky.richtext.facet"),
            DecodedKey::Lexicon {
                repo: Cow::Borrowed("did:web:a"),
                nsid: Cow::Borrowed("app.bsky.richtext.facet"),
            },
        ),
    ];
    for (key, expected) in cases {
        let decoded = decode_key(&key).unwrap();
        assert_eq!(decoded.record_type(), expected.record_type());
        assert_eq!(decoded, expected);
    }
    let mut trailing = head_key("r");
    trailing.push(9);
    assert!(decode_key(&trailing).is_err());
    assert!(
        decode_key(&[0x01, 0xf0]).is_err(),
        "a lexicon key needs its fields"
    );
    // Found by fuzzing: reserved bits are not ignored (0x14 is not a block
    // key, though its type nibble is 0x1), so every accepted key re-encodes
    // to itself.
    assert_eq!(
        decode_key(&[0x01, 0x14, 0x9d]),
        Err(keycodec::Error::ReservedBits {
            tag: 0x14,
            reserved: 4
        })
    );
}

#[test]
fn collection_range_selects_exactly_its_records() {
    let range = record_index_range("r", "a.b.c");
    assert!(range.contains(&record_index_key("r", "a.b.c", "x")));
    assert!(range.contains(&record_index_key("r", "a.b.c", "~~~")));
    assert!(!range.contains(&record_index_key("r", "a.b.cd", "x")));
    assert!(!range.contains(&record_index_key("r", "a.b.b", "x")));
    assert!(!range.contains(&record_index_key("rr", "a.b.c", "x")));
    let log = commit_log_range("r");
    assert!(log.contains(&commit_log_key("r", 0)) && log.contains(&commit_log_key("r", u64::MAX)));
    assert!(!log.contains(&commit_log_key("s", 0)));
    for t in RecordType::ALL {
        assert!(t.range().contains(&t.prefix().encode()));
    }
}
