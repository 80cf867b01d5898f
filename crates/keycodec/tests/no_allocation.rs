#![allow(unsafe_code)] // a counting global allocator needs unsafe
//! Decoding keys allocates nothing: record-index keys (strings without
//! escapes are borrowed) and both txkey forms.

use std::{
    alloc::{GlobalAlloc, Layout, System},
    sync::atomic::{AtomicUsize, Ordering},
};

use keycodec::{
    records::{decode_key, record_index_key},
    txkey::{full, short},
};

struct CountingAlloc;
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: delegates to the system allocator; only counts calls.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

#[test]
fn decode_paths_do_not_allocate() {
    let record = record_index_key("did:web:example.com", "app.bsky.feed.post", "3jui7kd54zh2y");
    let s = short::key("field", "standard", 42).unwrap();
    let f = full::key("index", "field", "standard", 7, 42).unwrap();
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let mut n = 0;
    for _ in 0..1000 {
        n += usize::from(decode_key(std::hint::black_box(&record)).is_ok());
        n += usize::from(short::Key::parse(std::hint::black_box(&s)).is_ok());
        n += usize::from(full::Key::parse(std::hint::black_box(&f)).is_ok());
    }
    let after = ALLOCATIONS.load(Ordering::Relaxed);
    assert_eq!(n, 3000);
    assert_eq!(after - before, 0, "allocations on the decode path");
}
