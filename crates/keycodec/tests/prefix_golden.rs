//! The 2-byte prefix: exact bytes, every rejection, and scan ranges that
//! stay correct when the prefix ends in `0xff` bytes.

use keycodec::{
    CURRENT_VERSION, Error, KeyPrefix, KeyRange, RecordTag, RecordType, prefix_successor,
};

#[test]
fn prefix_bytes_follow_the_rfc() {
    // RFC 0001: record_tag = (record_type << 4) | (reserved & 0x0F).
    let tag = RecordTag::new(0x3, 0x5).unwrap();
    assert_eq!(tag.byte(), 0x35);
    assert_eq!((tag.record_type(), tag.reserved()), (0x3, 0x5));
    assert_eq!(KeyPrefix::new(tag).encode(), [0x01, 0x35]);
    assert_eq!(CURRENT_VERSION, 0x01);
    assert_eq!(RecordType::Block.prefix().encode(), [0x01, 0x10]);
    assert_eq!(RecordType::RecordIndex.prefix().encode(), [0x01, 0x40]);
}

#[test]
fn invalid_prefixes_are_typed_errors() {
    assert_eq!(
        KeyPrefix::decode(&[0x00, 0x10]),
        Err(Error::ReservedVersion)
    );
    assert_eq!(
        KeyPrefix::decode(&[0x02, 0x10]),
        Err(Error::UnknownVersion(2))
    );
    assert_eq!(
        KeyPrefix::decode(&[0x01, 0x0f]),
        Err(Error::ReservedRecordType { tag: 0x0f })
    );
    assert!(matches!(
        KeyPrefix::decode(&[0x01]),
        Err(Error::TooShort { len: 1, .. })
    ));
    assert!(matches!(
        KeyPrefix::decode(&[]),
        Err(Error::TooShort { len: 0, .. })
    ));
    assert_eq!(
        RecordTag::new(0, 1),
        Err(Error::ReservedRecordType { tag: 0x01 })
    );
    assert!(matches!(
        RecordTag::new(16, 0),
        Err(Error::TagFieldRange { value: 16, .. })
    ));
    assert!(matches!(
        RecordTag::new(1, 16),
        Err(Error::TagFieldRange { value: 16, .. })
    ));
    let (p, rest) = KeyPrefix::decode(&[0x01, 0xf7, 9, 9]).unwrap();
    assert_eq!(
        (p.tag().record_type(), p.tag().reserved(), rest),
        (0xf, 0x7, &[9u8, 9][..])
    );
    // Every record type nibble (1..=15) is defined, each exactly once.
    for nibble in 1..=15u8 {
        let t = RecordType::from_tag(RecordTag::new(nibble, 0).unwrap()).unwrap();
        assert_eq!(t as u8, nibble);
    }
}

#[test]
fn successor_skips_trailing_ff() {
    assert_eq!(prefix_successor(&[1, 2, 3]), Some(vec![1, 2, 4]));
    assert_eq!(prefix_successor(&[1, 0xff]), Some(vec![2]));
    assert_eq!(
        prefix_successor(&[1, 0xfe, 0xff, 0xff]),
        Some(vec![1, 0xff])
    );
    assert_eq!(prefix_successor(&[0xff, 0xff]), None);
    assert_eq!(prefix_successor(&[]), None);
}

#[test]
fn prefix_range_contains_exactly_the_prefixed_keys() {
    for prefix in [
        &[1u8, 0x20][..],
        &[1, 0xff],
        &[1, 0x20, 0xff, 0xff],
        &[0xff],
    ] {
        let range = KeyRange::prefix(prefix);
        let mut inside = prefix.to_vec();
        assert!(range.contains(&inside));
        inside.extend_from_slice(&[0xff; 8]);
        assert!(range.contains(&inside), "{prefix:?} + ff..");
        let mut before = prefix.to_vec();
        before.pop();
        assert!(!range.contains(&before), "{prefix:?} without its last byte");
        if let Some(end) = &range.end {
            assert!(!range.contains(end));
        }
    }
}

#[test]
fn record_type_range_spans_all_reserved_bits() {
    let range = RecordType::Head.range();
    assert!(range.contains(&[1, 0x20]));
    assert!(range.contains(&[1, 0x2f, 0xff, 0xff]));
    assert!(!range.contains(&[1, 0x30]));
    assert!(!range.contains(&[1, 0x1f, 0xff]));
    // Type 0xF: the range ends where version 0x02 would begin.
    let last = KeyPrefix::new(RecordTag::new(0xf, 3).unwrap()).record_type_range();
    assert_eq!(last.start, vec![1, 0xf0]);
    assert_eq!(last.end, Some(vec![2]));
    assert!(last.contains(&[1, 0xff, 0xff]));
}
