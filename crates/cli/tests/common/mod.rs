//! Helpers shared by the CLI tests.
#![allow(dead_code, unreachable_pub)]

use std::{
    io::Write,
    process::{Command, Output, Stdio},
};

use serde_json::Value;

/// Runs `datarepo` with `args`, `stdin` on its standard input.
pub fn datarepo(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_datarepo"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// The JSON object on each line of `out`'s standard output.
pub fn json_lines(out: &Output) -> Vec<Value> {
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
