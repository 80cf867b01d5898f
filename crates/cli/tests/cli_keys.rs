//! `datarepo keys txkey encode|decode` and `datarepo keys decode`: JSON
//! shapes on stdout, errors on stderr (a JSON object with `--json`) and
//! exit codes.

use std::process::{Command, Output};

use serde_json::{Value, json};

fn datarepo(args: &[&str]) -> (Value, Option<i32>) {
    let out: Output = Command::new(env!("CARGO_BIN_EXE_datarepo"))
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    (
        serde_json::from_str(text.trim()).unwrap_or(Value::Null),
        out.status.code(),
    )
}

#[test]
fn txkey_encode_short_and_full() {
    let (v, code) = datarepo(&[
        "keys", "txkey", "encode", "--short", "--field", "f", "--view", "v", "--ckey", "42",
    ]);
    assert_eq!(code, Some(0));
    // '~' 'f' ';' 'v' '<' BE64(42) '#'
    assert_eq!(
        v,
        json!({"key": "7e663b763c000000000000002a23", "prefix": "7e663b763c"})
    );
    let (v, code) = datarepo(&[
        "keys", "txkey", "encode", "--full", "--index", "i", "--field", "f", "--view", "v",
        "--shard", "3", "--ckey", "42",
    ]);
    assert_eq!(code, Some(0));
    assert_eq!(
        v,
        json!({"key": "7e6925663b763a00000000000000033c000000000000002a23",
               "prefix": "7e6925663b763a00000000000000033c"})
    );
}

#[test]
fn txkey_decode_round_trips() {
    let (v, code) = datarepo(&[
        "keys",
        "txkey",
        "decode",
        "--short",
        "7e663b763c000000000000002a23",
    ]);
    assert_eq!(code, Some(0));
    assert_eq!(
        (&v["field"], &v["view"], &v["ckey"]),
        (&json!("f"), &json!("v"), &json!(42))
    );
    let (v, code) = datarepo(&[
        "keys",
        "txkey",
        "decode",
        "--full",
        "7e6925663b763a00000000000000033c000000000000002a23",
    ]);
    assert_eq!(code, Some(0));
    assert_eq!(
        (&v["index"], &v["shard"], &v["ckey"]),
        (&json!("i"), &json!(3), &json!(42))
    );
}

/// stdout, stderr and exit code of `datarepo args`.
fn run(args: &[&str]) -> (String, String, Option<i32>) {
    let out: Output = Command::new(env!("CARGO_BIN_EXE_datarepo"))
        .args(args)
        .output()
        .unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
        out.status.code(),
    )
}

#[test]
fn invalid_input_prints_an_error_on_stderr_and_exits_1() {
    for args in [
        &[
            "keys", "txkey", "encode", "--short", "--field", "a;b", "--view", "v", "--ckey", "1",
        ][..],
        &[
            "keys", "txkey", "encode", "--short", "--field", "", "--view", "v", "--ckey", "1",
        ],
        &["keys", "txkey", "decode", "--short", "zz"],
        &["keys", "txkey", "decode", "--short", "7e663b"],
        &[
            "keys",
            "txkey",
            "decode",
            "--full",
            "7e663b763c000000000000002a23",
        ],
        &["keys", "decode", "0210"],
        &["keys", "decode", "01e0"],
    ] {
        let (stdout, stderr, code) = run(args);
        assert_eq!(code, Some(1), "{args:?}");
        assert_eq!(stdout, "", "{args:?}: an error printed on stdout");
        assert!(stderr.starts_with("datarepo: "), "{args:?}: {stderr}");

        let mut with_json = args.to_vec();
        with_json.push("--json");
        let (stdout, stderr, code) = run(&with_json);
        assert_eq!(code, Some(1), "{args:?}");
        assert_eq!(stdout, "", "{args:?}");
        let v: Value = serde_json::from_str(stderr.trim()).unwrap();
        assert!(
            v["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{args:?}: {v}"
        );
    }
}

#[test]
fn keys_decode_explains_a_record_index_key() {
    let key = keycodec::records::record_index_key("did:web:a", "app.bsky.feed.post", "self");
    let (v, code) = datarepo(&["keys", "decode", &hex::encode(&key)]);
    assert_eq!(code, Some(0));
    assert_eq!(
        v,
        json!({"version": 1, "recordTag": "0x40", "recordType": "record-index",
               "fields": {"repo": "did:web:a", "collection": "app.bsky.feed.post", "rkey": "self"}})
    );
    let key = keycodec::records::commit_log_key(
        "did:web:a",
        rkey::Tid::parse("3jui7kd54zh2y").unwrap().as_u64(),
    );
    let (v, _) = datarepo(&["keys", "decode", &hex::encode(&key)]);
    assert_eq!(v["fields"]["revTid"], "3jui7kd54zh2y");
}

#[test]
fn keys_decode_explains_history_and_count_keys_with_their_own_tags() {
    // 01 41 "r" 00 "a.b.c" 00 "x" 00 rev 5; 01 51 "r" 00 "a.b.c" 00
    let (v, code) = datarepo(&[
        "keys",
        "decode",
        "0141720061 2e622e6300 7800 0000000000000005"
            .replace(' ', "")
            .as_str(),
    ]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["recordTag"], "0x41");
    assert_eq!(v["recordType"], "record-index");
    assert_eq!(v["fields"]["rkey"], "x");
    assert_eq!(v["fields"]["rev"], 5);
    let (v, code) = datarepo(&[
        "keys",
        "decode",
        "015172006 12e622e6300".replace(' ', "").as_str(),
    ]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["recordTag"], "0x51");
    assert_eq!(
        v["fields"],
        json!({"repo": "r", "collection": "a.b.c", "recordCount": true})
    );
}

#[test]
fn keys_decode_names_packed_column_blocks_and_fence_chunks() {
    for (hex_key, field, at) in [
        ("01a0000000074000000000000001", "packedBlock", 1),
        ("01a0000000078000000000000002", "fenceChunk", 2),
    ] {
        let (v, code) = datarepo(&["keys", "decode", hex_key]);
        assert_eq!(code, Some(0));
        assert_eq!(v["recordType"], "column-rkey");
        assert_eq!(v["fields"]["scope"], 7);
        assert_eq!(v["fields"][field], at, "{v}");
    }
    let (v, _) = datarepo(&["keys", "decode", "01a0000000070000000000000102"]);
    assert_eq!(v["fields"], json!({"scope": 7, "column": 258}));
}

#[test]
fn keys_decode_names_the_index_epoch() {
    // `01 80 did:web:a 00`: the field-index type with the repository alone.
    let (v, code) = datarepo(&["keys", "decode", "01806469643a7765623a6100"]);
    assert_eq!(code, Some(0));
    assert_eq!(
        v,
        json!({"version": 1, "recordTag": "0x80", "recordType": "field-index",
               "fields": {"repo": "did:web:a", "indexEpoch": true}})
    );
}
