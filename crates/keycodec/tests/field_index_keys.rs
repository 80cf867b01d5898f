//! The field-index record types (`0x8`–`0xC`) and their bitmap containers
//! (`0x6` around a full txkey): exact bytes, written out by hand from
//! `docs/storage-keys.md`, and decoding back.

use std::borrow::Cow;

use proptest::strategy::Just;

use keycodec::{
    RecordType,
    records::{
        COLUMN_FENCES, COLUMN_PACKED, DecodedKey, bitmap_key, column_key, column_rkey_key,
        decode_key, field_index_key, field_index_range, index_epoch_key, keyword_row_key,
        keyword_rows_with_prefix, keyword_value_key, scope_range,
    },
    txkey,
};

#[test]
fn layouts_are_byte_exact() {
    assert_eq!(
        field_index_key("did:web:a", "a.b.c", "langs"),
        b"\x01\x80did:web:a\x00a.b.c\x00langs\x00"
    );
    assert_eq!(index_epoch_key("did:web:a"), b"\x01\x80did:web:a\x00");
    assert_eq!(column_key(7, "3kabc"), b"\x01\x90\x00\x00\x00\x073kabc\x00");
    assert_eq!(
        column_rkey_key(7, 0x0102),
        b"\x01\xa0\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x01\x02"
    );
    // Packed block 1 (2^62 + 1) and fence chunk 0 (2^63) of scope 7: they
    // sort after every single column (below 2^32), fences last.
    assert_eq!(
        column_rkey_key(7, COLUMN_PACKED + 1),
        b"\x01\xa0\x00\x00\x00\x07\x40\x00\x00\x00\x00\x00\x00\x01"
    );
    assert_eq!(
        column_rkey_key(7, COLUMN_FENCES),
        b"\x01\xa0\x00\x00\x00\x07\x80\x00\x00\x00\x00\x00\x00\x00"
    );
    // Keyword values are tagged (01 ‖ UTF-8 for strings, 02 ‖ 00|01 for
    // booleans) and then escaped as any bytes field: 00 → 01 01, 01 → 01 02.
    assert_eq!(
        keyword_row_key(7, "langs", b"\x01en"),
        b"\x01\xb0\x00\x00\x00\x07langs\x00\x01\x02en\x00"
    );
    assert_eq!(
        keyword_row_key(7, "flag", b"\x02\x00"),
        b"\x01\xb0\x00\x00\x00\x07flag\x00\x02\x01\x01\x00"
    );
    assert_eq!(
        keyword_value_key(7, "langs", 3),
        b"\x01\xc0\x00\x00\x00\x07langs\x00\x00\x00\x00\x00\x00\x00\x00\x03"
    );
    // A container: scope 7 as the txkey's index, row 2 of `langs`'s
    // standard view, columns 65,536..131,071 of shard 0: ckey 2·16 + 1.
    let tx = txkey::full::key("7", "langs", "standard", 0, 33).unwrap();
    assert_eq!(
        bitmap_key(&tx),
        [
            b"\x01\x60~7%langs;standard:".as_slice(),
            &[0, 0, 0, 0, 0, 0, 0, 0],
            b"<",
            &[0, 0, 0, 0, 0, 0, 0, 33],
            b"#",
        ]
        .concat()
    );
}

#[test]
fn every_layout_decodes_back() {
    let cases = [
        (
            field_index_key("did:web:a", "a.b.c", "x.$type"),
            DecodedKey::FieldIndex {
                repo: Cow::Borrowed("did:web:a"),
                collection: Cow::Borrowed("a.b.c"),
                path: Cow::Borrowed("x.$type"),
            },
        ),
        (
            column_key(1, "self"),
            DecodedKey::Column {
                scope: 1,
                rkey: Cow::Borrowed("self"),
            },
        ),
        (
            column_rkey_key(u32::MAX, u64::MAX),
            DecodedKey::ColumnRkey {
                scope: u32::MAX,
                column: u64::MAX,
            },
        ),
        (
            keyword_row_key(2, "t", b"\x01a\x00b"),
            DecodedKey::KeywordRow {
                scope: 2,
                path: Cow::Borrowed("t"),
                value: Cow::Owned(b"\x01a\x00b".to_vec()),
            },
        ),
        (
            keyword_value_key(2, "t", 9),
            DecodedKey::KeywordValue {
                scope: 2,
                path: Cow::Borrowed("t"),
                row: 9,
            },
        ),
    ];
    for (key, want) in cases {
        assert_eq!(decode_key(&key).unwrap(), want, "{key:02x?}");
    }
}

#[test]
fn scope_ranges_hold_their_scope_only() {
    let r = scope_range(RecordType::Column, 7, None);
    assert!(r.contains(&column_key(7, "a")));
    assert!(!r.contains(&column_key(8, "a")));
    assert!(!r.contains(&column_key(6, "zzz")));
    let r = scope_range(RecordType::KeywordRow, 7, Some("t"));
    assert!(r.contains(&keyword_row_key(7, "t", b"\x01x")));
    assert!(!r.contains(&keyword_row_key(7, "tt", b"\x01x")));
}

proptest::proptest! {
    /// A prefix range holds exactly the dictionary keys of its path whose
    /// values start with the prefix, escaped bytes (`00`, `01`, `ff`)
    /// included.
    #[test]
    fn prefix_ranges_hold_the_values_with_the_prefix(
        prefix in proptest::collection::vec(proptest::prop_oneof![Just(0u8), Just(1), Just(0xff), Just(b'a'), Just(b'b')], 0..4),
        value in proptest::collection::vec(proptest::prop_oneof![Just(0u8), Just(1), Just(0xff), Just(b'a'), Just(b'b')], 0..6),
    ) {
        let r = keyword_rows_with_prefix(7, "t", &prefix);
        proptest::prop_assert_eq!(
            r.contains(&keyword_row_key(7, "t", &value)),
            value.starts_with(&prefix)
        );
        proptest::prop_assert!(!r.contains(&keyword_row_key(7, "t.u", &value)));
        proptest::prop_assert!(!r.contains(&keyword_row_key(8, "t", &value)));
    }
}

#[test]
fn the_index_epoch_decodes_apart_from_declarations_and_sorts_first() {
    let epoch = index_epoch_key("did:web:a");
    assert_eq!(
        decode_key(&epoch).unwrap(),
        DecodedKey::IndexEpoch {
            repo: Cow::Borrowed("did:web:a")
        }
    );
    assert_eq!(
        decode_key(&epoch).unwrap().record_type(),
        RecordType::FieldIndex
    );
    let declaration = field_index_key("did:web:a", "a.b.c", "langs");
    assert!(epoch < declaration);
    // In the repository's range, not in a collection's, nor in another
    // repository's whose name extends this one.
    assert!(field_index_range("did:web:a", None).contains(&epoch));
    assert!(!field_index_range("did:web:a", Some("a.b.c")).contains(&epoch));
    assert!(!field_index_range("did:web:ab", None).contains(&epoch));
}
