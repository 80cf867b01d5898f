//! `ls` and `query` with `--format csv|jsonl|table`: CSV read back by
//! Python's `csv` module (an independent RFC 4180 reader) gives each
//! record's key and fields, whatever their text holds (commas, quotes,
//! newlines, non-ASCII); JSON Lines gives the records `--json` gives, one
//! per line; a table aligns its columns; the next page's cursor goes to
//! stderr.

use crate::common;

use std::io::Write as _;

use common::datarepo;
use serde_json::{Value, json};

const DID: &str = "did:web:formats.example";
const POST: &str = "app.bsky.feed.post";

fn run(store: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec!["--store", store, "--repo", DID];
    all.extend_from_slice(args);
    let out = datarepo(&all, "");
    assert!(out.status.success(), "{args:?}: {out:?}");
    out
}

#[test]
fn records_print_as_csv_jsonl_and_tables() {
    let tmp = testkit::tempdir("cli-formats");
    let store = tmp.path().join("s");
    let store = store.to_str().unwrap();
    let texts = [
        "plain",
        "a, comma",
        "a \"quote\" or two \"\"",
        "two\nlines\r\nand CRLF",
        "ünïcödé 日本語 🦀",
        "",
    ];
    for (i, text) in texts.iter().enumerate() {
        let record = json!({"$type": POST, "text": text, "n": i, "tags": ["x", text]});
        common::put_record(store, DID, POST, &format!("p{i}"), &record);
    }

    // CSV, read by Python.
    let out = run(
        store,
        &["ls", POST, "--format", "csv", "--fields", "text,n,tags"],
    );
    let script =
        "import csv, json, sys\nprint(json.dumps(list(csv.reader(sys.stdin, strict=True))))";
    let mut python = std::process::Command::new(testkit::python_sdk())
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    python.stdin.take().unwrap().write_all(&out.stdout).unwrap();
    let parsed = python.wait_with_output().unwrap();
    assert!(parsed.status.success(), "{parsed:?}");
    let rows: Vec<Vec<String>> = serde_json::from_slice(&parsed.stdout).unwrap();
    let mut want = vec![vec![
        "rkey".to_owned(),
        "text".into(),
        "n".into(),
        "tags".into(),
    ]];
    for (i, text) in texts.iter().enumerate() {
        want.push(vec![
            format!("p{i}"),
            (*text).to_owned(),
            i.to_string(),
            json!(["x", text]).to_string(),
        ]);
    }
    assert_eq!(rows, want);

    // JSON Lines: the records --json gives, one per line.
    let page: Value =
        serde_json::from_slice(&run(store, &["--json", "ls", POST, "--limit", "4"]).stdout)
            .unwrap();
    let out = run(store, &["ls", POST, "--limit", "4", "--format", "jsonl"]);
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(&lines, page["records"].as_array().unwrap());
    let cursor = page["cursor"].as_str().unwrap();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!("--cursor {cursor}")),
        "{out:?}"
    );

    // A table: a header, then a line per record, columns aligned.
    let out = run(
        store,
        &["query", POST, "--format", "table", "--fields", "n,text"],
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1 + texts.len(), "{text}");
    let header_n = lines[0].find('n').unwrap();
    assert!(lines[0].starts_with("rkey"), "{text}");
    for (i, line) in lines[1..].iter().enumerate() {
        assert!(line.starts_with(&format!("p{i} ")), "{text}");
        let n = i.to_string();
        assert_eq!(
            line.chars()
                .skip(header_n)
                .take(n.len())
                .collect::<String>(),
            n,
            "{text}"
        );
    }
}
