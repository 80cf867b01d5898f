//! `datarepo serve` logs one access line per request (method, path,
//! status, duration) at info level, and writes no colour codes to a file
//! or pipe.

use crate::common;

use std::process::Stdio;

use common::{ServerProcess, free_port, http, serve, wait_until_up};

#[test]
fn serve_logs_plain_access_lines_to_a_file() {
    let tmp = testkit::tempdir("cli-serve-logs");
    let store = tmp.path().join("store");
    let log = tmp.path().join("serve.log");
    let port = free_port();
    let mut server = ServerProcess(
        serve(store.to_str().unwrap(), port, "log-token")
            .env("RUST_LOG", "info")
            .env_remove("NO_COLOR")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    assert!(wait_until_up(port), "the server did not start");
    let (status, _) = http(
        port,
        "GET",
        "/xrpc/com.atproto.sync.listRepos?limit=5",
        "log-token",
        "",
    )
    .unwrap();
    assert_eq!(status, 200);
    assert!(server.terminate());
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        !text.contains('\u{1b}'),
        "colour codes in a log file:\n{text}"
    );
    let access = text
        .lines()
        .find(|l| l.contains("datarepo::access") && l.contains("/xrpc/com.atproto.sync.listRepos"))
        .unwrap_or_else(|| panic!("no access line:\n{text}"));
    for part in ["method=GET", "status=200", "ms="] {
        assert!(access.contains(part), "{part} missing from {access}");
    }
    // The query is not logged.
    assert!(!access.contains("limit=5"), "{access}");
    // The duration in hundredths of a millisecond at most (`ms=0.72`).
    let ms = access
        .split_whitespace()
        .find_map(|p| p.strip_prefix("ms="))
        .unwrap();
    let decimals = ms.split_once('.').map_or(0, |(_, d)| d.len());
    assert!(decimals <= 2, "{access}");
    assert!(ms.parse::<f64>().is_ok(), "{access}");
}
