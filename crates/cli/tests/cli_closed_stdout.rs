//! A reader that goes away (`datarepo … | head`) ends every command
//! quietly with success: no panic, no "Broken pipe" message.

use crate::common;

use std::{
    io::Write,
    process::{Command, Stdio},
};

use common::datarepo;

/// Runs `datarepo args` with its standard output's read end closed as soon
/// as it starts, and checks that it ends with status 0 and nothing on
/// standard error.
fn with_closed_stdout(args: &[&str], stdin: &str) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_datarepo"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let mut input = child.stdin.take().unwrap();
    // The command may stop reading once its output is gone.
    let _ = input.write_all(stdin.as_bytes());
    drop(input);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
    assert!(stderr.is_empty(), "{args:?}: {stderr}");
}

#[test]
fn commands_end_quietly_when_their_reader_goes_away() {
    let tmp = testkit::tempdir("cli-closed-stdout");
    let store = tmp.path().join("store");
    let store = store.to_str().unwrap();
    let car = tmp.path().join("tree.car");
    let car = car.to_str().unwrap();
    let did = "did:web:pipe.example";

    // Outputs far larger than a pipe's buffer.
    with_closed_stdout(&["tid", "new", "--count", "200000"], "");
    let rkeys: String = (0..20_000).map(|i| format!("key-{i}\n")).collect();
    with_closed_stdout(&["rkey", "validate"], &rkeys);
    let ops: String = (0..5_000)
        .map(|i| format!("{{\"op\":\"put\",\"key\":\"k{i:05}\",\"value\":\"bafyreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy\"}}\n"))
        .collect();
    with_closed_stdout(&["pail", "apply"], &ops);

    // A tree to list, and a repository to list, log, export and check.
    for i in 0..3 {
        let key = format!("k{i}");
        let out = datarepo(
            &[
                "pail",
                "put",
                "--path",
                car,
                &key,
                "bafyreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy",
            ],
            "",
        );
        assert!(out.status.success(), "{out:?}");
    }
    with_closed_stdout(&["pail", "ls", "--path", car], "");
    with_closed_stdout(&["pail", "tree", "--path", car], "");

    let out = datarepo(&["--store", store, "--repo", did, "init"], "");
    assert!(out.status.success(), "{out:?}");
    for rkey in ["a", "b", "c"] {
        let out = datarepo(
            &[
                "--store",
                store,
                "--repo",
                did,
                "put",
                "app.bsky.feed.post",
                rkey,
            ],
            r#"{"text":"hello"}"#,
        );
        assert!(out.status.success(), "{out:?}");
    }
    for args in [
        &["ls", "app.bsky.feed.post"][..],
        &["--json", "ls", "app.bsky.feed.post"],
        &["log"],
        &["get", "app.bsky.feed.post", "a"],
        &["export", "-"],
        &["check"],
    ] {
        let mut all = vec!["--store", store, "--repo", did];
        all.extend_from_slice(args);
        with_closed_stdout(&all, "");
    }
}
