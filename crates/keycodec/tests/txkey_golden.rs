//! txkey layouts pinned by the facts the FeatureBase seed states, and its
//! text forms.

use keycodec::{
    Error,
    txkey::{NamePart, full, short},
};

#[test]
fn shortest_short_key_is_14_bytes() {
    // Seed: "The shortest possible key is 14 bytes ... ~f;v<12345678#".
    let key = short::key("f", "v", 0x3132_3334_3536_3738).unwrap();
    assert_eq!(key, b"~f;v<12345678#");
    assert_eq!(key.len(), short::MIN_KEY_LEN);
    // Seed: the prefix ends at, and includes, the '<' (the key minus 9 bytes).
    assert_eq!(short::prefix_from_key(&key).unwrap(), b"~f;v<");
    assert_eq!(short::prefix("f", "v").unwrap(), b"~f;v<");
    let (k, p) = short::key_and_prefix("f", "v", 0x3132_3334_3536_3738).unwrap();
    assert_eq!((k.as_slice(), p.as_slice()), (&key[..], &b"~f;v<"[..]));
    assert_eq!(
        short::extract_container_key(&key).unwrap(),
        0x3132_3334_3536_3738
    );
    assert_eq!(
        short::split(&key).unwrap(),
        ("f", "v", 0x3132_3334_3536_3738)
    );
    assert_eq!(short::split_prefix(b"~f;v<").unwrap(), ("f", "v"));
    assert_eq!(short::field_prefix("f").unwrap(), b"~f;");
    assert_eq!(short::all_shard_prefix("f", "v").unwrap(), b"~f;v<");
    assert_eq!(short::index_only_prefix(), b"~");
}

#[test]
fn shortest_full_key_is_25_bytes() {
    // FeatureBase's full form: "~i%f;v:12345678<12345678#", 25 bytes.
    let key = full::key("i", "f", "v", 0x3132_3334_3536_3738, 0x3132_3334_3536_3738).unwrap();
    assert_eq!(key, b"~i%f;v:12345678<12345678#");
    assert_eq!(key.len(), full::MIN_KEY_LEN);
    assert_eq!(full::prefix_from_key(&key).unwrap(), b"~i%f;v:12345678<");
    assert_eq!(full::all_shard_prefix("i", "f", "v").unwrap(), b"~i%f;v:");
    assert_eq!(full::field_prefix("i", "f").unwrap(), b"~i%f;");
    assert_eq!(full::index_only_prefix("i").unwrap(), b"~i%");
    assert_eq!(full::shard_from_key(&key).unwrap(), 0x3132_3334_3536_3738);
    assert_eq!(
        full::shard_from_prefix(b"~i%f;v:12345678<").unwrap(),
        0x3132_3334_3536_3738
    );
    let parsed = full::Key::parse(&key).unwrap();
    assert_eq!((parsed.index, parsed.field, parsed.view), ("i", "f", "v"));
    assert!(!parsed.is_symlink);
}

#[test]
fn text_forms_match_featurebase() {
    let key = short::key("f", "v", 42).unwrap();
    assert_eq!(
        short::Key::parse(&key).unwrap().to_string(),
        "fld:'f';vw:'v';ckey@00000000000000000042"
    );
    assert_eq!(
        short::Prefix::parse(b"~f;v<").unwrap().to_string(),
        "fld:'f';vw:'v';"
    );
    let key = full::key("i", "f", "v", 3, 42).unwrap();
    assert_eq!(
        full::Key::parse(&key).unwrap().to_string(),
        "idx:'i';fld:'f';vw:'v';shd:'00000000000000000003';ckey@00000000000000000042"
    );
    let prefix = full::prefix("i", "f", "v", 3).unwrap();
    assert_eq!(
        full::Prefix::parse(&prefix).unwrap().to_string(),
        "idx:'i';fld:'f';vw:'v';shd:'00000000000000000003';"
    );
    let fv = short::Key::parse(&short::key("fld", "standard", 1).unwrap())
        .unwrap()
        .field_view();
    assert_eq!((fv.field.as_str(), fv.view.as_str()), ("fld", "standard"));
}

#[test]
fn container_key_bytes_may_hold_reserved_bytes() {
    // ';', '<' and '#' inside the 8-byte ckey/shard must not confuse parsing.
    let ckey = u64::from_be_bytes(*b";<#%:~>!");
    let key = short::key("f", "v", ckey).unwrap();
    assert_eq!(short::split(&key).unwrap(), ("f", "v", ckey));
    let key = full::key("i", "f", "v", ckey, ckey).unwrap();
    assert_eq!(full::split(&key).unwrap(), ("i", "f", "v", ckey, ckey));
}

#[test]
fn names_are_checked() {
    assert_eq!(
        short::key("", "v", 1),
        Err(Error::EmptyName {
            part: NamePart::Field
        })
    );
    assert_eq!(
        short::key("f", "", 1),
        Err(Error::EmptyName {
            part: NamePart::View
        })
    );
    for (i, &b) in keycodec::txkey::RESERVED.iter().enumerate() {
        let name = format!("a{}b", char::from(b));
        assert_eq!(
            short::key(&name, "v", 1),
            Err(Error::ReservedByte {
                part: NamePart::Field,
                byte: char::from(b),
                position: 1
            }),
            "reserved byte #{i}"
        );
        assert!(matches!(
            full::key(&name, "f", "v", 0, 1),
            Err(Error::ReservedByte {
                part: NamePart::Index,
                ..
            })
        ));
    }
    // The bytes the seed allows for base-64 names.
    assert!(short::key("a+/-_.=", "v", 1).is_ok());
}

#[test]
fn malformed_keys_are_typed_errors() {
    assert!(matches!(
        short::Key::parse(b"~f;v<1234567#"),
        Err(Error::TooShort { len: 13, .. })
    ));
    assert!(matches!(
        short::Key::parse(b"=f;v<12345678#"),
        Err(Error::Marker { position: 0, .. })
    ));
    assert!(matches!(
        short::Key::parse(b"~f;v<12345678$"),
        Err(Error::Marker { expected: '#', .. })
    ));
    assert!(matches!(
        short::Key::parse(b"~fv<<12345678#"),
        Err(Error::MissingSeparator { expected: ';' })
    ));
    assert!(matches!(
        short::Key::parse(b"~;fv<12345678#"),
        Err(Error::EmptyName {
            part: NamePart::Field
        })
    ));
    assert!(matches!(
        short::Key::parse(b"~f;\xffv<12345678#"),
        Err(Error::NameNotUtf8 { .. })
    ));
    let symlink = short::Key::parse(b">f;v<12345678#").unwrap();
    assert!(symlink.is_symlink);
    assert!(matches!(
        full::Key::parse(b"~i%f;v;12345678<12345678#"),
        Err(Error::Marker { expected: ':', .. })
    ));
    assert!(matches!(
        full::Key::parse(b"~if;v:12345678<12345678#x"),
        Err(Error::Marker { .. })
    ));
    assert!(matches!(
        full::Key::parse(b"~i%f;v:12345678<12345678"),
        Err(Error::TooShort { .. })
    ));
}
