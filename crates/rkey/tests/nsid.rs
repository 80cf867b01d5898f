//! NSID syntax: the rule each invalid example breaks.

use rkey::{Error, NsidRule, validate_nsid};

#[test]
fn valid_and_invalid_nsids() {
    for s in [
        "com.example.fooBar",
        "net.users.bob.ping",
        "a-0.b-1.c",
        "a.b.c",
        "cn.8.lex.stuff",
    ] {
        assert_eq!(validate_nsid(s), Ok(()), "{s}");
    }
    let cases = [
        ("com.exa💩ple.thing", NsidRule::Char),
        ("com.example", NsidRule::TooFewSegments),
        ("com..example.foo", NsidRule::EmptySegment),
        ("com.example-.foo", NsidRule::Hyphen),
        ("1com.example.foo", NsidRule::LeadingDigit),
        ("com.example.3foo", NsidRule::Name),
        ("com.example.foo-bar", NsidRule::Name),
    ];
    for (s, rule) in cases {
        assert!(
            matches!(validate_nsid(s), Err(Error::Nsid { reason, .. }) if reason == rule),
            "{s}"
        );
    }
    let long = format!("com.{}.foo", "a".repeat(64));
    assert!(matches!(
        validate_nsid(&long),
        Err(Error::Nsid {
            reason: NsidRule::SegmentTooLong,
            ..
        })
    ));
}
