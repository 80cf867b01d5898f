//! TID round trips, ordering, layout, and the generator's guarantees:
//! strictly increasing and unique across threads, with a frozen or
//! backwards clock, and when resumed after a persisted TID.

use std::{
    collections::HashSet,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use proptest::prelude::*;
use rkey::{Error, MAX_TID_MICROS, Tid, TidGenerator};

proptest! {
    #[test]
    fn print_parse_round_trip(v in any::<u64>()) {
        let tid = Tid::from_u64(v);
        let s = tid.to_string();
        prop_assert_eq!(s.len(), 13);
        prop_assert_eq!(Tid::parse(&s), Ok(tid));
        prop_assert_eq!(tid.top_bit_set(), v >> 63 == 1);
    }

    #[test]
    fn order_equals_string_order(a in any::<u64>(), b in any::<u64>()) {
        let (ta, tb) = (Tid::from_u64(a), Tid::from_u64(b));
        prop_assert_eq!(ta.cmp(&tb), ta.to_string().cmp(&tb.to_string()));
    }

    #[test]
    fn parts_round_trip(micros in 0..=MAX_TID_MICROS, clock_id in 0u64..1024) {
        let tid = Tid::from_parts(micros, clock_id).unwrap();
        prop_assert_eq!(tid.timestamp_micros(), micros);
        prop_assert_eq!(u64::from(tid.clock_id()), clock_id);
        prop_assert!(!tid.top_bit_set());
        prop_assert_eq!(tid.as_u64(), (micros << 10) | clock_id);
    }

    #[test]
    fn parse_never_panics(s in ".{0,20}") {
        let _ = Tid::parse(&s);
    }
}

#[test]
fn layout_and_range_errors() {
    // Known TID from the spec examples: decodes by value >> 10 and & 0x3ff.
    let tid = Tid::parse("3jui7kd54zh2y").unwrap();
    assert_eq!(tid.timestamp_micros(), tid.as_u64() >> 10);
    assert_eq!(u64::from(tid.clock_id()), tid.as_u64() & 0x3ff);
    assert_eq!(Tid::MIN.to_string(), "2222222222222");
    assert_eq!(Tid::from_u64(u64::MAX).to_string(), "jzzzzzzzzzzzz");
    assert!(Tid::from_u64(u64::MAX).top_bit_set());
    assert_eq!(Tid::from_u64(u64::MAX >> 1).to_string(), "bzzzzzzzzzzzz");
    assert_eq!(
        Tid::from_parts(MAX_TID_MICROS + 1, 0),
        Err(Error::TidTimestampRange {
            micros: MAX_TID_MICROS + 1
        })
    );
    assert_eq!(
        Tid::from_parts(0, 1024),
        Err(Error::TidClockIdRange { clock_id: 1024 })
    );
    assert_eq!(
        Tid::parse("3jui7kd54zh2"),
        Err(Error::TidLength { len: 12 })
    );
    assert!(matches!(
        Tid::parse("3JUI7KD54ZH2Y"),
        Err(Error::TidChar {
            ch: 'J',
            position: 1,
            ..
        })
    ));
    assert!(matches!(
        Tid::parse("3jui-7kd-54zh"),
        Err(Error::TidChar {
            ch: '-',
            position: 4,
            ..
        })
    ));
    assert!(matches!(
        Tid::parse("kjui7kd54zh2y"),
        Err(Error::TidChar {
            ch: 'k',
            position: 0,
            ..
        })
    ));
}

#[test]
fn frozen_clock_still_strictly_increasing() {
    let tids = TidGenerator::builder()
        .clock(|| 1_000_000)
        .clock_id(3)
        .build()
        .unwrap();
    let mut prev = None;
    for _ in 0..10_000 {
        let t = tids.next_tid().unwrap();
        assert_eq!(t.clock_id(), 3);
        assert!(prev < Some(t));
        prev = Some(t);
    }
    assert_eq!(tids.lead_micros(), 9_999);
}

#[test]
fn backwards_clock_never_repeats() {
    let now = Arc::new(AtomicU64::new(5_000_000));
    let clock = {
        let now = Arc::clone(&now);
        move || now.load(Ordering::Relaxed)
    };
    let tids = TidGenerator::builder()
        .clock(clock)
        .clock_id(1000)
        .build()
        .unwrap();
    let a = tids.next_tid().unwrap();
    now.store(4_000_000, Ordering::Relaxed); // clock steps back one second
    let b = tids.next_tid().unwrap();
    assert!(b > a);
    assert_eq!(b.timestamp_micros(), a.timestamp_micros() + 1);
    assert_eq!(tids.lead_micros(), 1_000_001);
    now.store(6_000_000, Ordering::Relaxed); // and forward again
    let c = tids.next_tid().unwrap();
    assert_eq!(c.timestamp_micros(), 6_000_000);
    assert_eq!(tids.lead_micros(), 0);
}

#[test]
fn unique_and_increasing_across_threads() {
    let tids = Arc::new(
        TidGenerator::builder()
            .clock(|| 42)
            .clock_id(9)
            .build()
            .unwrap(),
    );
    let per_thread = 20_000;
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let tids = Arc::clone(&tids);
            std::thread::spawn(move || {
                let mut mine = Vec::with_capacity(per_thread);
                for _ in 0..per_thread {
                    mine.push(tids.next_tid().unwrap());
                }
                mine
            })
        })
        .collect();
    let mut all = HashSet::new();
    for h in handles {
        let mine = h.join().unwrap();
        assert!(
            mine.windows(2).all(|w| w[0] < w[1]),
            "each thread sees increasing TIDs"
        );
        all.extend(mine);
    }
    assert_eq!(all.len(), 4 * per_thread);
}

#[test]
fn resume_after_persisted_tid() {
    // The persisted TID is far ahead of the clock and has a larger clock id.
    let persisted = Tid::from_parts(9_000_000, 1023).unwrap();
    let tids = TidGenerator::builder()
        .clock(|| 1_000)
        .clock_id(5)
        .resume_after(persisted)
        .build()
        .unwrap();
    let next = tids.next_tid().unwrap();
    assert!(next > persisted);
    assert_eq!(next, Tid::from_parts(9_000_001, 5).unwrap());
    // A smaller clock id of ours in the same microsecond would be lower, so
    // it moves on; a larger one can stay in the same microsecond.
    let persisted = Tid::from_parts(9_000_000, 2).unwrap();
    let tids = TidGenerator::builder()
        .clock(|| 1_000)
        .clock_id(5)
        .resume_after(persisted)
        .build()
        .unwrap();
    assert_eq!(
        tids.next_tid().unwrap(),
        Tid::from_parts(9_000_000, 5).unwrap()
    );
}

#[test]
fn exhaustion_is_an_error_not_a_panic() {
    let tids = TidGenerator::builder()
        .clock(|| u64::MAX)
        .clock_id(0)
        .build()
        .unwrap();
    assert_eq!(tids.next_tid(), Err(Error::TidExhausted));
    let tids = TidGenerator::builder()
        .clock(|| 0)
        .clock_id(1023)
        .resume_after(Tid::from_parts(MAX_TID_MICROS, 1023).unwrap())
        .build()
        .unwrap();
    assert_eq!(tids.next_tid(), Err(Error::TidExhausted));
    assert!(TidGenerator::builder().clock_id(1024).build().is_err());
}

#[test]
fn clock_id_comes_from_injected_randomness() {
    let tids = TidGenerator::builder()
        .clock(|| 7)
        .build_with_random(|| 0xabcd_0000_0000_0123)
        .unwrap();
    assert_eq!(tids.clock_id(), 0x123);
}
