//! `CountingAlloc` counts this thread's allocations and no other thread's.

#[global_allocator]
static GLOBAL: testkit::CountingAlloc = testkit::CountingAlloc;

/// This thread's allocations while a scoped thread makes `n` of its own.
fn allocations_around_thread_making(n: usize) -> usize {
    let before = testkit::allocations();
    std::thread::scope(|s| {
        s.spawn(|| {
            let start = testkit::allocations();
            for i in 0..n {
                drop(std::hint::black_box(vec![i as u8; 64]));
            }
            assert_eq!(testkit::allocations() - start, n);
        });
    });
    testkit::allocations() - before
}

#[test]
fn counts_this_threads_allocations_only() {
    let before = testkit::allocations();
    let mine = std::hint::black_box(vec![1u8; 64]);
    assert_eq!(testkit::allocations() - before, 1);
    drop(mine);

    // The first spawn also initialises std's thread machinery.
    allocations_around_thread_making(0);
    // Spawning allocates on this thread, the same whatever the spawned
    // thread then allocates.
    assert_eq!(
        allocations_around_thread_making(1),
        allocations_around_thread_making(100)
    );
}
