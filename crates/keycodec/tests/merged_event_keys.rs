//! A partitioned store's merged event log keys (`0xE2`: the event type,
//! reserved bits 2, by merged sequence number) and merge marks (`0xE3`,
//! by partition): bytes pinned, decoded back, ordered, and apart from the
//! firehose's and the stream's events.

use keycodec::records::{
    DecodedKey, RecordType, decode_key, event_key, events_range, merge_mark_key, merge_marks_range,
    merged_event_key, merged_events_range, stream_event_key, stream_events_range,
};

#[test]
fn merged_log_key_bytes_are_pinned() {
    // Version 1, tag 0xE2, the sequence number as 8 big-endian bytes.
    assert_eq!(
        merged_event_key(0x0102_0304_0506_0708),
        [0x01, 0xE2, 1, 2, 3, 4, 5, 6, 7, 8]
    );
    // Version 1, tag 0xE3, the partition as 4 big-endian bytes.
    assert_eq!(
        merge_mark_key(0x0A0B_0C0D),
        [0x01, 0xE3, 0x0A, 0x0B, 0x0C, 0x0D]
    );
}

#[test]
fn merged_log_keys_decode_sort_and_stay_apart() {
    let seqs = [0u64, 1, 255, 256, 1 << 40, u64::MAX];
    for pair in seqs.windows(2) {
        assert!(merged_event_key(pair[0]) < merged_event_key(pair[1]));
    }
    for seq in seqs {
        let key = merged_event_key(seq);
        let decoded = decode_key(&key).unwrap();
        assert_eq!(decoded, DecodedKey::MergedEvent { seq });
        assert_eq!(decoded.record_type(), RecordType::Event);
        assert!(merged_events_range().contains(&key));
        assert!(!events_range().contains(&key));
        assert!(!stream_events_range().contains(&key));
        assert!(!merge_marks_range().contains(&key));
    }
    for partition in [0u32, 1, 63, 1023, u32::MAX] {
        let key = merge_mark_key(partition);
        assert_eq!(
            decode_key(&key).unwrap(),
            DecodedKey::MergeMark { partition }
        );
        assert!(merge_marks_range().contains(&key));
        assert!(!merged_events_range().contains(&key));
    }
    assert!(merge_mark_key(1) < merge_mark_key(2));
    assert!(!merged_events_range().contains(&event_key(7)));
    assert!(!merged_events_range().contains(&stream_event_key(7)));
}
