//! Validating a record key and parsing or printing a TID allocate nothing.

#[global_allocator]
static GLOBAL: testkit::CountingAlloc = testkit::CountingAlloc;

#[test]
fn hot_paths_do_not_allocate() {
    let keys = ["3jui7kd54zh2y", "self", "example.com", "bad key", ".."];
    let before = testkit::allocations();
    let mut valid = 0;
    for _ in 0..1000 {
        for k in keys {
            valid += usize::from(rkey::validate_record_key(std::hint::black_box(k)).is_ok());
        }
        let tid = rkey::Tid::parse(std::hint::black_box("3jui7kd54zh2y")).unwrap();
        std::hint::black_box(tid.encode());
    }
    let after = testkit::allocations();
    assert_eq!(valid, 3000);
    assert_eq!(after - before, 0, "allocations on the validation path");
}
