//! Any bytes after a valid prefix: every field reader fails cleanly, and a
//! byte string that decodes re-encodes to the same bytes.
#![no_main]

use keycodec::{KeyBuilder, KeyReader};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(mut r) = KeyReader::new(data) else {
        return;
    };
    let prefix = r.prefix();
    let _ = r.clone().u64();
    let _ = r.clone().i64();
    let _ = r.clone().str();
    if let Ok(bytes) = r.bytes() {
        let end = r.position();
        let again = KeyBuilder::new(prefix).bytes(&bytes).finish();
        assert_eq!(again, &data[..end]);
    }
});
