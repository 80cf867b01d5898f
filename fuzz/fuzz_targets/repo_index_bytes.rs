//! Any bytes as a packed column block or fence chunk, and as a record whose
//! indexed values a build reads straight from its dag-cbor: no panic, and
//! whenever the direct walk answers (it falls back on anything it does not
//! mirror) for bytes that decode as dag-cbor, its values are those of the
//! JSON walk over the decoded record.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = index::fuzzing::packed_columns(data);
    let (walked, by_json) = index::fuzzing::index_values(data, &["a", "a.b", "text", "$type"]);
    if let (Some(walked), Some(by_json)) = (walked, by_json) {
        assert_eq!(walked, by_json);
    }
});
