//! An S3 store that cannot be reached fails every command at once with an
//! error naming the location and the settings to check; it never hangs.
//! (SlateDB alone retries a failing object store without end.)

use std::{
    net::TcpListener,
    process::{Command, Output, Stdio},
    time::Duration,
};

/// How long a command may take before the test calls it hung: this many
/// polls, [`POLL`] apart (about a minute).
const POLLS: u32 = 3000;
const POLL: Duration = Duration::from_millis(20);

/// An `http://127.0.0.1:PORT` endpoint where nothing listens.
fn closed_endpoint() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

/// Runs `datarepo` against `s3://bucket/prefix` at `endpoint`; kills it and
/// fails the test if it is still running after [`POLLS`] polls.
fn datarepo_on_s3(endpoint: &str, args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_datarepo"))
        .args(["--store", "s3://bucket/prefix"])
        .args(args)
        .env("AWS_ENDPOINT", endpoint)
        .env("AWS_ALLOW_HTTP", "true")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("DATAREPO_TOKEN", "test")
        .env("RUST_LOG", "error")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut polls = 0;
    while child.try_wait().unwrap().is_none() {
        polls += 1;
        if polls > POLLS {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "datarepo {args:?} was still running after {:?}",
                POLL * POLLS
            );
        }
        std::thread::sleep(POLL);
    }
    child.wait_with_output().unwrap()
}

#[test]
fn an_unreachable_endpoint_fails_each_command_with_a_clear_error() {
    let endpoint = closed_endpoint();
    let commands: [&[&str]; 4] = [
        &["--repo", "did:web:a.example", "stats"],
        &["--repo", "did:web:a.example", "put", "app.test.post", "r1"],
        &["serve", "--addr", "127.0.0.1:0"],
        &["serve", "--replica", "--addr", "127.0.0.1:0"],
    ];
    for args in commands {
        let out = datarepo_on_s3(&endpoint, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        // The location, the object store's own error (which names the
        // endpoint it tried), and the settings to check.
        for expected in ["s3://bucket/prefix", endpoint.as_str(), "AWS_ENDPOINT"] {
            assert!(
                stderr.contains(expected),
                "{args:?}: no {expected:?} in {stderr}"
            );
        }
    }
}
