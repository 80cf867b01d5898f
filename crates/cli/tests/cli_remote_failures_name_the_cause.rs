//! `--server` mode says what to do when the server refuses the token (none
//! given, or not the server's: both name DATAREPO_TOKEN) and what stopped a
//! request that never reached a server (the refused connection).

use crate::common;

use std::process::{Command, Output};

use common::{datarepo_with, start_server};

fn put(server: &str, token: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_datarepo"));
    cmd.args(["--server", server, "--repo", "did:web:remote.example"])
        .args(["put", "app.test.post", "a"])
        .env_remove("DATAREPO_TOKEN");
    if let Some(t) = token {
        cmd.env("DATAREPO_TOKEN", t);
    }
    datarepo_with(&mut cmd, r#"{"text": "x"}"#)
}

#[test]
fn refusals_and_unreachable_servers_name_the_cause() {
    let tmp = testkit::tempdir("cli-remote-causes");
    let store = tmp.path().join("data");
    let (_server, port) = start_server(store.to_str().unwrap(), "the-token");
    let url = format!("http://127.0.0.1:{port}");

    for (token, says) in [
        (None, "no token given"),
        (Some("wrong"), "is not this server's"),
    ] {
        let out = put(&url, token);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("401"), "{stderr}");
        assert!(
            stderr.contains("DATAREPO_TOKEN") && stderr.contains(says),
            "{stderr}"
        );
    }
    assert!(put(&url, Some("the-token")).status.success());

    // A port nothing listens on (taken, then released).
    let closed = format!("http://127.0.0.1:{}", common::free_port());
    let out = put(&closed, Some("the-token"));
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("cannot reach the server at {closed}")),
        "{stderr}"
    );
    assert!(
        stderr.to_lowercase().contains("connection refused"),
        "{stderr}"
    );
}
