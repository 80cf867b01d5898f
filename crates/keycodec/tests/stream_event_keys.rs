//! The stream event key (`0xE1`: the event type, reserved bits 1): bytes
//! pinned, decoded back, ordered by time, and apart from the firehose's
//! events (`0xE0`).

use keycodec::records::{
    DecodedKey, RecordType, decode_key, event_key, events_range, stream_event_key,
    stream_events_range,
};

#[test]
fn stream_event_key_bytes_are_pinned() {
    // Version 1, tag 0xE1, the time as 8 big-endian bytes.
    assert_eq!(
        stream_event_key(0x0102_0304_0506_0708),
        [0x01, 0xE1, 1, 2, 3, 4, 5, 6, 7, 8]
    );
}

#[test]
fn stream_event_keys_decode_and_sort_by_time() {
    let times = [0u64, 1, 255, 256, 1_764_201_600_000_000, u64::MAX];
    for pair in times.windows(2) {
        assert!(stream_event_key(pair[0]) < stream_event_key(pair[1]));
    }
    for t in times {
        let key = stream_event_key(t);
        let decoded = decode_key(&key).unwrap();
        assert_eq!(decoded, DecodedKey::StreamEvent { time_us: t });
        assert_eq!(decoded.record_type(), RecordType::Event);
        assert!(stream_events_range().contains(&key));
        assert!(!events_range().contains(&key));
    }
    assert!(!stream_events_range().contains(&event_key(7)));
    assert!(events_range().contains(&event_key(7)));
}
