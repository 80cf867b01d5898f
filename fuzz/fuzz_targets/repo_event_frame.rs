//! Any bytes as an event stream frame (what `datarepo follow` reads from a
//! server): `decode_frame` returns a frame or an error, never panics; a
//! decoded commit frames back to a frame that decodes to it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use repo::{Frame, decode_frame};

fuzz_target!(|data: &[u8]| {
    if let Ok(Frame::Commit(event)) = decode_frame(data) {
        let again = event.to_frame();
        assert_eq!(decode_frame(&again).unwrap(), Frame::Commit(event));
    }
});
