//! Any string as a `--where` expression: the parser never panics, and an
//! error names a position inside the input (or at its end).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(e) = repo::parse_where(src) {
        let at: usize = e
            .strip_prefix("at position ")
            .and_then(|r| r.split(':').next())
            .and_then(|n| n.parse().ok())
            .expect("errors start with their position");
        assert!(at <= src.len(), "{e}");
    }
});
