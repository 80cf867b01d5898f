//! Every example in the record-key specifications (`record-keys-rfc.md`
//! and `record-keys-overview.txt`) gets the verdict the spec gives it.

use rkey::{Error, RecordKey, validate_record_key};

const VALID: &[&str] = &[
    // record-keys-rfc.md
    "3jui7kd54zh2y",
    "self",
    "example.com",
    "~1.2-3_",
    "dHJ1ZQ",
    "pre:fix",
    "_",
    // record-keys-overview.txt
    "1a2b3c",
    "example.net",
    "rDg8fH",
    "prefix:suffix",
];

const INVALID: &[&str] = &[
    "alpha/beta",
    ".",
    "..",
    "#extra",
    "@handle",
    "any space",
    "any+space",
    "number[3]",
    "number(3)",
    "\"quote\"",
    "dHJ1ZQ==",
];

#[test]
fn spec_valid_examples_are_valid() {
    for key in VALID {
        assert_eq!(validate_record_key(key), Ok(()), "{key:?}");
        assert_eq!(RecordKey::new(*key).unwrap().as_str(), *key);
    }
}

#[test]
fn spec_invalid_examples_are_invalid() {
    for key in INVALID {
        assert!(validate_record_key(key).is_err(), "{key:?}");
        assert!(key.parse::<RecordKey>().is_err(), "{key:?}");
    }
}

#[test]
fn errors_say_what_and_where() {
    assert_eq!(
        validate_record_key("alpha/beta"),
        Err(Error::RecordKeyChar {
            ch: '/',
            position: 5
        })
    );
    assert_eq!(
        validate_record_key("dHJ1ZQ=="),
        Err(Error::RecordKeyChar {
            ch: '=',
            position: 6
        })
    );
    assert_eq!(
        validate_record_key("abé"),
        Err(Error::RecordKeyChar {
            ch: 'é',
            position: 2
        })
    );
    assert_eq!(validate_record_key(".."), Err(Error::RecordKeyDots("..")));
    assert_eq!(validate_record_key(""), Err(Error::EmptyRecordKey));
    assert_eq!(
        validate_record_key(&"a".repeat(513)),
        Err(Error::RecordKeyTooLong { len: 513 })
    );
    assert_eq!(validate_record_key(&"a".repeat(512)), Ok(()));
    assert_eq!(
        validate_record_key("self\n"),
        Err(Error::RecordKeyChar {
            ch: '\n',
            position: 4
        })
    );
    let message = validate_record_key("any space").unwrap_err().to_string();
    assert!(
        message.contains("' '") && message.contains("position 3"),
        "{message}"
    );
}
