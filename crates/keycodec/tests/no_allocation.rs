//! Decoding keys allocates nothing: record-index keys (strings without
//! escapes are borrowed) and both txkey forms.

use keycodec::{
    records::{decode_key, record_index_key},
    txkey::{full, short},
};

#[global_allocator]
static GLOBAL: testkit::CountingAlloc = testkit::CountingAlloc;

#[test]
fn decode_paths_do_not_allocate() {
    let record = record_index_key("did:web:example.com", "app.bsky.feed.post", "3jui7kd54zh2y");
    let s = short::key("field", "standard", 42).unwrap();
    let f = full::key("index", "field", "standard", 7, 42).unwrap();
    let before = testkit::allocations();
    let mut n = 0;
    for _ in 0..1000 {
        n += usize::from(decode_key(std::hint::black_box(&record)).is_ok());
        n += usize::from(short::Key::parse(std::hint::black_box(&s)).is_ok());
        n += usize::from(full::Key::parse(std::hint::black_box(&f)).is_ok());
    }
    let after = testkit::allocations();
    assert_eq!(n, 3000);
    assert_eq!(after - before, 0, "allocations on the decode path");
}
