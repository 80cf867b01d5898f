//! `datarepo rkey validate` and `datarepo tid validate|new|decode`: output
//! shapes and exit codes, as scripts depend on them.

use crate::common;

use common::{datarepo, json_lines};
use serde_json::json;

#[test]
fn rkey_validate_arguments() {
    let out = datarepo(&["rkey", "validate", "self", "3jui7kd54zh2y"], "");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        json_lines(&out),
        vec![
            json!({"input": "self", "valid": true}),
            json!({"input": "3jui7kd54zh2y", "valid": true})
        ]
    );
    let out = datarepo(&["rkey", "validate", "self", "a/b"], "");
    assert_eq!(out.status.code(), Some(1));
    let lines = json_lines(&out);
    assert_eq!(lines[1]["input"], "a/b");
    assert_eq!(lines[1]["valid"], false);
    assert!(lines[1]["error"].as_str().unwrap().contains("'/'"));
}

#[test]
fn rkey_validate_stdin_lines_are_not_trimmed() {
    let out = datarepo(&["rkey", "validate"], "self\n a\n..\n");
    assert_eq!(out.status.code(), Some(1));
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0], json!({"input": "self", "valid": true}));
    assert_eq!(lines[1]["input"], " a");
    assert_eq!(lines[1]["valid"], false);
    assert_eq!(lines[2]["valid"], false);
}

#[test]
fn rkey_validate_json_lines() {
    let out = datarepo(
        &["rkey", "validate", "--json-lines"],
        "\"self\\n\"\n\"ok\"\n",
    );
    assert_eq!(out.status.code(), Some(1));
    let lines = json_lines(&out);
    assert_eq!(lines[0]["input"], "self\n");
    assert_eq!(lines[0]["valid"], false);
    assert_eq!(lines[1], json!({"input": "ok", "valid": true}));
    // A line that is not a JSON string literal is a usage error.
    let out = datarepo(&["rkey", "validate", "--json-lines"], "self\n");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(
        datarepo(&["rkey", "validate", "--nope"], "").status.code(),
        Some(2)
    );
    assert_eq!(
        datarepo(&["tid", "new", "--clock-id", "1024"], "")
            .status
            .code(),
        Some(2)
    );
    assert_eq!(datarepo(&["frobnicate"], "").status.code(), Some(2));
}

#[test]
fn tid_validate_reports_parts() {
    let out = datarepo(
        &[
            "tid",
            "validate",
            "3jui7kd54zh2y",
            "jzzzzzzzzzzzz",
            "3JUI7KD54ZH2Y",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1));
    let lines = json_lines(&out);
    let expected = rkey::Tid::parse("3jui7kd54zh2y").unwrap();
    assert_eq!(
        lines[0],
        json!({"input": "3jui7kd54zh2y", "valid": true, "timestamp_us": expected.timestamp_micros(),
               "clock_id": expected.clock_id(), "top_bit_set": false,
               "timestampUs": expected.timestamp_micros(), "clockId": expected.clock_id(),
               "topBitSet": false})
    );
    assert_eq!(lines[1]["top_bit_set"], true);
    assert_eq!(lines[1]["topBitSet"], true);
    assert_eq!(lines[2]["valid"], false);
}

#[test]
fn tid_new_makes_increasing_tids_with_the_clock_id() {
    let out = datarepo(&["tid", "new", "-n", "500", "--clock-id", "77"], "");
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    let tids: Vec<rkey::Tid> = text.lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(tids.len(), 500);
    assert!(tids.windows(2).all(|w| w[0] < w[1]));
    assert!(tids.iter().all(|t| t.clock_id() == 77 && !t.top_bit_set()));
}

#[test]
fn tid_decode_shows_time_and_clock_id() {
    // 2023-04-29T03:42:21.953005Z is 1682739741953005 µs after the epoch.
    let tid = rkey::Tid::from_parts(1_682_739_741_953_005, 30)
        .unwrap()
        .to_string();
    let out = datarepo(&["tid", "decode", &tid], "");
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("2023-04-29T03:42:21.953005Z"), "{text}");
    assert!(text.contains("clock id:   30"), "{text}");
    assert_eq!(
        datarepo(&["tid", "decode", "nope"], "").status.code(),
        Some(1)
    );
    // --json: one object on stdout; an error as JSON on stderr.
    let out = datarepo(&["tid", "decode", &tid, "--json"], "");
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"tid": tid, "time": "2023-04-29T03:42:21.953005Z",
                           "micros": 1_682_739_741_953_005_u64, "clockId": 30, "topBitSet": false})
    );
    let out = datarepo(&["tid", "decode", "nope", "--json"], "");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let e: serde_json::Value = serde_json::from_slice(&out.stderr).unwrap();
    assert!(e["error"].as_str().unwrap().contains("nope"), "{e}");
}
