//! `KeyType` parses from and prints as its schema string, and `check`
//! accepts exactly the keys of its type, with a reason when not.

use rkey::{Error, KeyType, RecordKey};

fn key(s: &str) -> RecordKey {
    RecordKey::new(s).unwrap()
}

#[test]
fn schema_strings_round_trip() {
    for s in ["tid", "any", "nsid", "literal:self", "literal:a.b:c~d_e-f"] {
        let t: KeyType = s.parse().unwrap();
        assert_eq!(t.to_string(), s);
    }
    for s in [
        "",
        "TID",
        "literal:",
        "literal:..",
        "literal:a/b",
        "record-key",
        " tid",
    ] {
        assert!(
            matches!(s.parse::<KeyType>(), Err(Error::KeyType { .. })),
            "{s:?}"
        );
    }
}

#[test]
fn check_accepts_exactly_its_keys() {
    let cases: &[(&str, &str, bool)] = &[
        ("any", "anything.goes:~", true),
        ("tid", "3jui7kd54zh2y", true),
        ("tid", "3jui7kd54zh2", false),
        ("tid", "self", false),
        ("tid", "kjui7kd54zh2y", false),
        ("literal:self", "self", true),
        ("literal:self", "Self", false),
        ("literal:self", "self2", false),
        ("nsid", "app.bsky.feed.post", true),
        ("nsid", "self", false),
        ("nsid", "app.bsky.feed-post", false),
    ];
    for &(ty, k, ok) in cases {
        let t: KeyType = ty.parse().unwrap();
        let result = t.check(&key(k));
        assert_eq!(result.is_ok(), ok, "{ty} / {k}: {result:?}");
        if let Err(e) = result {
            let message = e.to_string();
            assert!(message.contains(ty) && message.contains(k), "{message}");
        }
    }
}
