//! Any bytes as a bitmap container value (record type `0x6`), alone and
//! merged with another: decoding and merging never panic, an accepted
//! value re-encodes to a value that decodes to the same container, and a
//! merge of two accepted values is accepted.
#![no_main]

use libfuzzer_sys::fuzz_target;
use store::ContainerDelta;

fuzz_target!(|data: &[u8]| {
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let (a, b) = rest.split_at(usize::from(split).min(rest.len()));
    let da = ContainerDelta::decode(a);
    let db = ContainerDelta::decode(b);
    if let Ok(d) = &da {
        assert_eq!(ContainerDelta::decode(&d.encode()).as_ref(), Ok(d));
    }
    if let (Ok(mut x), Ok(y)) = (da, db) {
        let same_container = x.container().is_none() || y.container().is_none() || x.container() == y.container();
        x.then(&y);
        if same_container {
            assert!(ContainerDelta::decode(&x.encode()).is_ok());
        }
    }
});
