//! Small inputs that must be refused with a message that says what is
//! wrong: an empty Pail key, a zero `--max-key-length`, and a CAR file whose
//! header names no root (not "an empty CAR file": it may hold blocks).

use crate::common;

const VALUE: &str = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy";

#[test]
fn pail_put_refuses_an_empty_key_and_a_zero_key_length() {
    let tmp = testkit::tempdir("pail-input");
    let car = tmp.path().join("t.car");
    let car = car.to_str().unwrap();
    let out = common::datarepo(&["pail", "put", "--path", car, "", VALUE], "");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("a key must not be empty"));
    assert!(!std::path::Path::new(car).exists(), "nothing is written");

    let out = common::datarepo(
        &[
            "pail",
            "put",
            "--path",
            car,
            "--max-key-length",
            "0",
            "a",
            VALUE,
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--max-key-length"));

    let out = common::datarepo(
        &["pail", "apply"],
        &format!("{{\"op\":\"put\",\"key\":\"\",\"value\":\"{VALUE}\"}}\n"),
    );
    assert!(out.status.success());
    let reply: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(reply["error"], "a key must not be empty");
}

/// A CAR v1 file whose header's roots list is empty, with one block.
fn car_without_roots() -> Vec<u8> {
    use multihash_codetable::{Code, MultihashDigest};
    let header = [
        &[0xa2, 0x65][..],
        b"roots",
        &[0x80, 0x67],
        b"version",
        &[0x01],
    ]
    .concat();
    let data = [0xa1, 0x61, b'a', 0x01];
    let cid = cid::Cid::new_v1(0x71, Code::Sha2_256.digest(&data)).to_bytes();
    let block = [cid, data.to_vec()].concat();
    let mut out = vec![u8::try_from(header.len()).unwrap()];
    out.extend_from_slice(&header);
    out.push(u8::try_from(block.len()).unwrap());
    out.extend_from_slice(&block);
    out
}

#[test]
fn a_car_without_a_root_is_named_as_such() {
    let tmp = testkit::tempdir("car-no-root");
    let file = tmp.path().join("noroot.car");
    std::fs::write(&file, car_without_roots()).unwrap();
    let store = tmp.path().join("data");
    let out = common::datarepo(
        &[
            "--store",
            store.to_str().unwrap(),
            "import",
            file.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("names no root"), "{stderr}");
    assert!(!stderr.contains("empty CAR"), "{stderr}");

    let out = common::datarepo(&["pail", "ls", "--path", file.to_str().unwrap()], "");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("names no root"));
}
