//! Helpers shared by the store integration tests.
#![allow(dead_code, unreachable_pub)]

use bytes::Bytes;
use cid::Cid;
use multihash_codetable::{Code, MultihashDigest};

/// A raw block and its CID.
pub fn block(n: u64) -> (Cid, Bytes) {
    let bytes = Bytes::from(format!("block number {n}"));
    (Cid::new_v1(0x55, Code::Sha2_256.digest(&bytes)), bytes)
}

/// Runs this test binary's test `child` with `env` set to `dir`, lets it
/// work for `for_how_long`, kills it with SIGKILL and returns the last rev
/// it printed as `ACK <rev>` (0 if none).
pub fn run_then_kill(
    child: &str,
    env: &str,
    dir: &std::path::Path,
    for_how_long: std::time::Duration,
) -> u64 {
    use std::io::BufRead;
    let mut process = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", child, "--nocapture", "--test-threads=1"])
        .env(env, dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = process.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut last = 0u64;
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(rev) = line
                .strip_prefix("ACK ")
                .and_then(|r| r.trim().parse().ok())
            {
                last = rev;
            }
        }
        last
    });
    std::thread::sleep(for_how_long);
    process.kill().unwrap(); // SIGKILL on Unix
    process.wait().unwrap();
    reader.join().unwrap()
}
