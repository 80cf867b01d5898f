//! Every decoder returns a value or a typed error for any byte string.

use keycodec::{
    KeyReader,
    records::decode_key,
    txkey::{full, short},
};
use proptest::prelude::*;

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    // Bias towards the structural bytes so parsing gets deep.
    proptest::collection::vec(
        prop_oneof![
            3 => any::<u8>(),
            1 => prop::sample::select(b"~>;:<#%\x00\x01\x02\x03\xff\x10\x20\x30\x40".to_vec()),
        ],
        0..48,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    #[test]
    fn decoders_never_panic(key in bytes()) {
        let _ = decode_key(&key);
        let _ = short::Key::parse(&key);
        let _ = short::Prefix::parse(&key);
        let _ = short::prefix_from_key(&key);
        let _ = full::Key::parse(&key);
        let _ = full::Prefix::parse(&key);
        let _ = full::shard_from_prefix(&key);
        if let Ok(mut r) = KeyReader::new(&key) {
            let _ = r.clone().bytes();
            let _ = r.clone().str();
            let _ = r.clone().u64();
            let _ = r.clone().i64();
            let _ = r.u16();
            let _ = r.finish();
        }
    }

    #[test]
    fn valid_short_keys_parse_back(f in "[a-z0-9+/=._-]{1,8}", v in "[a-z0-9+/=._-]{1,8}", ckey in any::<u64>()) {
        let key = short::key(&f, &v, ckey).unwrap();
        let parsed = short::Key::parse(&key).unwrap();
        prop_assert_eq!((parsed.field, parsed.view, parsed.ckey), (f.as_str(), v.as_str(), ckey));
    }

    #[test]
    fn valid_full_keys_parse_back(
        i in "[a-z0-9._-]{1,8}", f in "[a-z0-9._-]{1,8}", v in "[a-z0-9._-]{1,8}",
        shard in any::<u64>(), ckey in any::<u64>(),
    ) {
        let key = full::key(&i, &f, &v, shard, ckey).unwrap();
        prop_assert_eq!(full::split(&key).unwrap(), (i.as_str(), f.as_str(), v.as_str(), shard, ckey));
    }
}
