//! Range helpers select exactly the keys they name, with no wrap-around at
//! `u64::MAX`; bit positions round-trip.

use keycodec::txkey::{BitPosition, bit_position, full, row_column, short};
use proptest::prelude::*;

#[test]
fn container_range_at_the_top_does_not_wrap() {
    let r = short::container_range("f", "v", u64::MAX - 1, u64::MAX).unwrap();
    assert!(r.contains(&short::key("f", "v", u64::MAX).unwrap()));
    assert!(r.contains(&short::key("f", "v", u64::MAX - 1).unwrap()));
    assert!(!r.contains(&short::key("f", "v", u64::MAX - 2).unwrap()));
    assert!(!r.contains(&short::key("f", "vv", 0).unwrap()));
    assert_eq!(r.end, Some(b"~f;v=".to_vec()));
    let r = full::container_range("i", "f", "v", u64::MAX, 0, u64::MAX).unwrap();
    assert!(r.contains(&full::key("i", "f", "v", u64::MAX, 0).unwrap()));
    assert!(r.contains(&full::key("i", "f", "v", u64::MAX, u64::MAX).unwrap()));
    let empty = short::container_range("f", "v", 5, 4).unwrap();
    assert!(!empty.contains(&short::key("f", "v", 5).unwrap()));
}

proptest! {
    #[test]
    fn ranges_select_exactly_their_keys(
        f in "[ab]{1,2}", v in "[ab]{1,2}", i in "[ab]{1,2}", shard in any::<u64>(),
        ckey in prop_oneof![Just(0u64), Just(u64::MAX), any::<u64>()],
        (lo, hi) in (any::<u64>(), any::<u64>()),
        (f2, v2, i2) in ("[ab]{1,2}", "[ab]{1,2}", "[ab]{1,2}"),
    ) {
        let key = short::key(&f2, &v2, ckey).unwrap();
        prop_assert_eq!(short::fragment_range(&f, &v).unwrap().contains(&key), f == f2 && v == v2);
        prop_assert_eq!(short::field_range(&f).unwrap().contains(&key), f == f2);
        prop_assert!(short::index_range().contains(&key));
        prop_assert_eq!(
            short::container_range(&f, &v, lo, hi).unwrap().contains(&key),
            f == f2 && v == v2 && lo <= ckey && ckey <= hi
        );
        let key = full::key(&i2, &f2, &v2, shard, ckey).unwrap();
        prop_assert_eq!(full::index_range(&i).unwrap().contains(&key), i == i2);
        prop_assert_eq!(full::field_range(&i, &f).unwrap().contains(&key), i == i2 && f == f2);
        prop_assert_eq!(
            full::fragment_range(&i, &f, &v, shard).unwrap().contains(&key),
            i == i2 && f == f2 && v == v2
        );
        prop_assert_eq!(
            full::container_range(&i, &f, &v, shard, lo, hi).unwrap().contains(&key),
            i == i2 && f == f2 && v == v2 && lo <= ckey && ckey <= hi
        );
    }

    #[test]
    fn bit_positions_round_trip(row in 0u64..(1 << 44), column in any::<u64>()) {
        let at = bit_position(row, column).unwrap();
        prop_assert_eq!(at.shard, column >> 20);
        prop_assert_eq!((at.ckey << 16) | u64::from(at.bit), (row << 20) | (column & 0xfffff));
        prop_assert_eq!(row_column(at).unwrap(), (row, column));
    }
}

#[test]
fn bit_position_examples_and_overflow() {
    // Row 1, column 5 of shard 0: position 2^20 + 5 → ckey 16, bit 5.
    assert_eq!(
        bit_position(1, 5).unwrap(),
        BitPosition {
            shard: 0,
            ckey: 16,
            bit: 5
        }
    );
    // Column 2^20 + 70000 is in shard 1; position 70000 → ckey 1, bit 4464.
    assert_eq!(
        bit_position(0, (1 << 20) + 70_000).unwrap(),
        BitPosition {
            shard: 1,
            ckey: 1,
            bit: 4464
        }
    );
    assert!(bit_position(1 << 44, 0).is_err());
    assert!(
        row_column(BitPosition {
            shard: 0,
            ckey: 1 << 48,
            bit: 0
        })
        .is_err()
    );
    assert!(
        row_column(BitPosition {
            shard: 1 << 44,
            ckey: 0,
            bit: 0
        })
        .is_err()
    );
}
