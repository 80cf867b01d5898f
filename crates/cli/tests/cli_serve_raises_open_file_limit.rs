//! `datarepo serve` raises its soft open-file limit to the hard limit at
//! start-up, so the common soft limit of 1,024 does not cap connections
//! and the store's files together.

use crate::common;

use std::process::Stdio;

/// The soft and hard "Max open files" of process `pid`.
fn open_file_limits(pid: u32) -> (String, String) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap()
        .to_owned();
    let mut fields = line["Max open files".len()..].split_whitespace();
    (
        fields.next().unwrap().to_owned(),
        fields.next().unwrap().to_owned(),
    )
}

#[test]
fn serve_raises_the_soft_open_file_limit_to_the_hard_one() {
    let hard = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "ulimit -Hn"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let hard = hard.trim();
    if hard != "unlimited" && hard.parse::<u64>().unwrap() <= 300 {
        eprintln!("skipped: the hard open-file limit ({hard}) leaves nothing to raise");
        return;
    }
    let tmp = testkit::tempdir("serve-nofile");
    let store = tmp.path().join("data");
    let port = common::free_port();
    let datarepo = env!("CARGO_BIN_EXE_datarepo");
    let mut server = common::ServerProcess(
        std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "ulimit -Sn 300 && exec '{datarepo}' --store '{}' serve --addr 127.0.0.1:{port}",
                store.display()
            ))
            .env("DATAREPO_TOKEN", "nofile-token")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert!(common::wait_until_up(port), "the server did not start");
    let (soft, hard) = open_file_limits(server.0.id());
    assert_eq!(soft, hard, "soft limit not raised");
    assert!(server.terminate());
}
