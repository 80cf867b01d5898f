#![allow(unsafe_code)] // a counting global allocator needs unsafe
//! Validating a record key and parsing or printing a TID allocate nothing.

use std::{
    alloc::{GlobalAlloc, Layout, System},
    sync::atomic::{AtomicUsize, Ordering},
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
fn hot_paths_do_not_allocate() {
    let keys = ["3jui7kd54zh2y", "self", "example.com", "bad key", ".."];
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let mut valid = 0;
    for _ in 0..1000 {
        for k in keys {
            valid += usize::from(rkey::validate_record_key(std::hint::black_box(k)).is_ok());
        }
        let tid = rkey::Tid::parse(std::hint::black_box("3jui7kd54zh2y")).unwrap();
        std::hint::black_box(tid.encode());
    }
    let after = ALLOCATIONS.load(Ordering::Relaxed);
    assert_eq!(valid, 3000);
    assert_eq!(after - before, 0, "allocations on the validation path");
}
