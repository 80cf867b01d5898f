//! `verify` of an unsigned repository's export checks everything but the
//! signatures (it still finds a tampered block) and says the file is
//! unsigned, instead of refusing, also where there is no store; asked to
//! check against a key, it refuses as before.

use crate::common;

use common::{datarepo, json_lines};

const DID: &str = "did:web:unsigned.example";
const POST: &str = "app.test.post";

#[test]
fn an_unsigned_export_is_verified_and_said_to_be_unsigned() {
    let tmp = testkit::tempdir("cli-verify-unsigned");
    let store = tmp.path().join("data");
    let store = store.to_str().unwrap();
    let car = tmp.path().join("backup.car");
    let car = car.to_str().unwrap();
    let run = |args: &[&str], stdin: &str| {
        let mut all = vec!["--store", store, "--repo", DID];
        all.extend_from_slice(args);
        datarepo(&all, stdin)
    };
    assert!(run(&["init"], "").status.success());
    for rkey in ["a", "b"] {
        let put = run(
            &["put", POST, rkey],
            &format!(r#"{{"text": "tamper-me-{rkey}"}}"#),
        );
        assert!(put.status.success(), "{put:?}");
    }
    assert!(run(&["export", "--history", car], "").status.success());

    let out = run(&["verify", car], "");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("UNSIGNED"), "{text}");
    assert!(text.contains("3 commits"), "{text}");
    let report = &json_lines(&run(&["verify", car, "--json"], ""))[0];
    assert_eq!(report["signed"], false, "{report}");
    assert_eq!(report["records"], 2, "{report}");
    assert!(
        report["commits"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["key"].is_null())
    );

    // Where no store is (a machine the file was copied to), the same.
    let elsewhere = tmp.path().join("no-store-here");
    let out = datarepo(&["--store", elsewhere.to_str().unwrap(), "verify", car], "");
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("UNSIGNED"),
        "{out:?}"
    );
    assert!(!elsewhere.exists(), "verify made a store at {elsewhere:?}");

    // The rest is still checked: a changed byte in a record is found.
    let mut bytes = std::fs::read(car).unwrap();
    let at = bytes
        .windows(11)
        .position(|w| w == b"tamper-me-a")
        .expect("the record's text is in the file");
    bytes[at] = b'T';
    let tampered = tmp.path().join("tampered.car");
    std::fs::write(&tampered, bytes).unwrap();
    let out = run(&["verify", tampered.to_str().unwrap()], "");
    assert_eq!(out.status.code(), Some(1), "{out:?}");

    // Checked against a key, unsigned commits fail.
    let key = tmp.path().join("k.key");
    let generated = datarepo(
        &["key", "generate", "--out", key.to_str().unwrap(), "--json"],
        "",
    );
    let did_key = json_lines(&generated)[0]["didKey"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = run(&["verify", car, "--key", &did_key], "");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not signed"),
        "{out:?}"
    );
}
