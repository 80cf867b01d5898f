//! Any bytes as a bitmap container value (record type `0x6`), alone and
//! merged with another, and as a group of a bit-sliced slot's rows:
//! decoding and merging never panic, an accepted value re-encodes to a
//! value that decodes to the same container, and a merge of two accepted
//! values is accepted.
#![no_main]

use libfuzzer_sys::fuzz_target;
use store::{ContainerDelta, ContainerGroup};

fuzz_target!(|data: &[u8]| {
    if let Ok(g) = ContainerGroup::decode(data) {
        assert_eq!(ContainerGroup::decode(&g.encode()).as_ref(), Ok(&g));
    }
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
        let same_container =
            x.container().is_none() || y.container().is_none() || x.container() == y.container();
        x.then(&y);
        if same_container {
            assert!(ContainerDelta::decode(&x.encode()).is_ok());
        }
    }
});
