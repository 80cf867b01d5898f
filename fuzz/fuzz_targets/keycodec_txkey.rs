//! Any bytes: both txkey forms parse or fail cleanly, and a parsed key
//! rebuilds to the same bytes (symlink keys aside).
#![no_main]

use keycodec::txkey::{full, short};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(k) = short::Key::parse(data)
        && !k.is_symlink
    {
        assert_eq!(
            short::key(k.field, k.view, k.ckey).ok().as_deref(),
            Some(data)
        );
    }
    if let Ok(k) = full::Key::parse(data)
        && !k.is_symlink
    {
        assert_eq!(
            full::key(k.index, k.field, k.view, k.shard, k.ckey)
                .ok()
                .as_deref(),
            Some(data)
        );
    }
    let _ = short::Prefix::parse(data);
    let _ = full::Prefix::parse(data);
});
