//! Any bytes: `Shard::decode` returns a shard or an error; an accepted
//! shard is canonical (re-encodes to the same bytes) and every entry reads.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(shard) = pail::Shard::decode(data) else {
        return;
    };
    assert_eq!(shard.bytes(), data);
    for (key, value) in shard.entries() {
        assert!(value.data().is_some() || value.link().is_some());
        let _ = key.len();
    }
});
