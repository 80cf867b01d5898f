//! Any string: record key, NSID, TID and key type parsers fail cleanly, and
//! a parsed TID prints back to its input.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let _ = rkey::validate_record_key(s);
    let _ = rkey::validate_nsid(s);
    let _ = s.parse::<rkey::KeyType>();
    if let Ok(tid) = rkey::Tid::parse(s) {
        assert_eq!(tid.to_string(), s);
    }
});
