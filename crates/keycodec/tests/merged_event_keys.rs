//! A partitioned store's merged event log keys (`0xE2`: the event type,
//! reserved bits 2, by merged sequence number) and merge marks (`0xE3`,
//! by partition), and the merged `/subscribe` stream's (`0xE4` by merged
//! time, `0xE5` by partition): bytes pinned, decoded back, ordered, and
//! apart from each other and from the firehose's and the stream's events.

use keycodec::records::{
    DecodedKey, RecordType, decode_key, event_key, events_range, merge_mark_key, merge_marks_range,
    merged_event_key, merged_events_range, merged_stream_event_key, merged_stream_events_range,
    stream_event_key, stream_events_range, stream_merge_mark_key, stream_merge_marks_range,
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

#[test]
fn merged_stream_log_keys_are_pinned_and_apart() {
    assert_eq!(
        merged_stream_event_key(0x0102_0304_0506_0708),
        [0x01, 0xE4, 1, 2, 3, 4, 5, 6, 7, 8]
    );
    assert_eq!(stream_merge_mark_key(7), [0x01, 0xE5, 0, 0, 0, 7]);
    for t in [0u64, 1, 1_764_201_600_000_000, u64::MAX] {
        let key = merged_stream_event_key(t);
        assert_eq!(
            decode_key(&key).unwrap(),
            DecodedKey::MergedStreamEvent { time_us: t }
        );
        assert!(merged_stream_events_range().contains(&key));
        for other in [
            events_range(),
            stream_events_range(),
            merged_events_range(),
            merge_marks_range(),
            stream_merge_marks_range(),
        ] {
            assert!(!other.contains(&key));
        }
    }
    let mark = stream_merge_mark_key(3);
    assert_eq!(
        decode_key(&mark).unwrap(),
        DecodedKey::StreamMergeMark { partition: 3 }
    );
    assert_eq!(decode_key(&mark).unwrap().record_type(), RecordType::Event);
    assert!(!merge_marks_range().contains(&mark));
    assert!(merged_stream_event_key(1) < merged_stream_event_key(2));
}
