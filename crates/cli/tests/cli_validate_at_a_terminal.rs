//! `rkey validate` and `tid validate` print a line a person reads when
//! stdout is a terminal, and JSON lines otherwise or with `--json` (the
//! interface scripts were given). The terminal is a pseudo-terminal made
//! by util-linux's `script`.

use crate::common;

use std::process::Command;

use common::{datarepo, json_lines};

/// Runs `datarepo ARGS` with its stdout on a pseudo-terminal: the exit
/// code and what it printed, lines without their `\r`.
fn at_a_terminal(args: &str) -> (Option<i32>, Vec<String>) {
    let command = format!("{} {args}", env!("CARGO_BIN_EXE_datarepo"));
    let out = Command::new("script")
        .args(["--quiet", "--return", "--command", &command, "/dev/null"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("util-linux's script runs");
    let text = String::from_utf8(out.stdout).unwrap();
    let lines = text
        .lines()
        .map(|l| l.trim_end_matches('\r').to_owned())
        .filter(|l| !l.is_empty())
        .collect();
    (out.status.code(), lines)
}

#[test]
fn a_person_at_a_terminal_reads_verdicts() {
    let (code, lines) = at_a_terminal("rkey validate self a/b");
    assert_eq!(code, Some(1));
    assert_eq!(lines[0], "ok       self");
    assert!(
        lines[1].starts_with("invalid  a/b: ") && lines[1].contains("'/'"),
        "{lines:?}"
    );
    assert_eq!(lines.len(), 2, "{lines:?}");

    let (code, lines) = at_a_terminal("tid validate 3jzfcijpj2z2a");
    assert_eq!(code, Some(0));
    // The time and clock id `tid decode` gives for the same TID.
    let decoded = datarepo(&["--json", "tid", "decode", "3jzfcijpj2z2a"], "");
    let decoded = &json_lines(&decoded)[0];
    assert_eq!(
        lines,
        vec![format!(
            "ok       3jzfcijpj2z2a  {}  clock {}",
            decoded["time"].as_str().unwrap(),
            decoded["clockId"]
        )]
    );
}

#[test]
fn json_at_a_terminal_when_asked_and_through_a_pipe_always() {
    let (code, lines) = at_a_terminal("--json rkey validate self");
    assert_eq!(code, Some(0));
    let parsed: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(parsed, serde_json::json!({"input": "self", "valid": true}));

    let piped = datarepo(&["rkey", "validate", "self"], "");
    assert_eq!(
        json_lines(&piped),
        vec![serde_json::json!({"input": "self", "valid": true})]
    );
}
