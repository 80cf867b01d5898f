//! `dev.datarepo.exportRecords`: every record a query matches, streamed
//! page by page as CSV (read back by Python's `csv` module: commas,
//! quotes, line breaks and non-ASCII text survive) or JSON Lines, in the
//! order `queryRecords` pages them, across several of the export's pages;
//! a bad query is a 400 before anything is sent.

use crate::common;

use std::io::Write;

use common::TestServer;
use serde_json::{Value, json};

const DID: &str = "did:web:export.example";
const POST: &str = "app.bsky.feed.post";
/// More than two of the export's 500-record pages.
const RECORDS: usize = 1203;

fn text(i: usize) -> String {
    match i % 5 {
        0 => format!("plain {i}"),
        1 => format!("a, comma {i}"),
        2 => format!("a \"quote\" {i}"),
        3 => format!("two\r\nlines {i}"),
        _ => format!("日本語 ✓ {i}"),
    }
}

fn python_csv(bytes: &[u8]) -> Vec<Vec<String>> {
    let script = "import csv, json, sys, io\nprint(json.dumps(list(csv.reader(io.TextIOWrapper(sys.stdin.buffer, encoding='utf-8', newline=''), strict=True))))";
    let mut python = std::process::Command::new(testkit::python_sdk())
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    python.stdin.take().unwrap().write_all(bytes).unwrap();
    let parsed = python.wait_with_output().unwrap();
    assert!(parsed.status.success(), "{parsed:?}");
    serde_json::from_slice(&parsed.stdout).unwrap()
}

#[tokio::test]
async fn exports_stream_every_matching_record() {
    let s = TestServer::memory().await;
    for chunk in (0..RECORDS).collect::<Vec<_>>().chunks(200) {
        let writes: Vec<Value> = chunk
            .iter()
            .map(|&i| {
                json!({"$type": "com.atproto.repo.applyWrites#create", "collection": POST,
                             "rkey": format!("p{i:05}"),
                             "value": {"$type": POST, "text": text(i), "n": (i * 7) % 100}})
            })
            .collect();
        let (status, out) = s
            .post(
                "com.atproto.repo.applyWrites",
                &json!({"repo": DID, "writes": writes}),
            )
            .await;
        assert_eq!(status, 200, "{out}");
    }
    let (status, out) = s
        .post(
            "dev.datarepo.addIndex",
            &json!({"repo": DID, "collection": POST, "path": "n", "kind": "integer"}),
        )
        .await;
    assert_eq!(status, 200, "{out}");

    // CSV of the records with n >= 10, sorted by n descending, two columns.
    let (status, body) = s
        .get_bytes(
            "dev.datarepo.exportRecords",
            &[
                ("repo", DID),
                ("collection", POST),
                ("where", "n >= 10"),
                ("fields", "text,n"),
                ("sort", "n"),
                ("order", "desc"),
                ("format", "csv"),
            ],
        )
        .await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let rows = python_csv(&body);
    let mut want: Vec<(usize, usize)> = (0..RECORDS)
        .map(|i| ((i * 7) % 100, i))
        .filter(|(n, _)| *n >= 10)
        .collect();
    // n descending, ties by record key.
    want.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    assert!(want.len() > 1000);
    assert_eq!(rows[0], ["uri", "cid", "text", "n"]);
    assert_eq!(rows.len(), want.len() + 1);
    for (row, (n, i)) in rows[1..].iter().zip(&want) {
        assert_eq!(row[0], format!("at://{DID}/{POST}/p{i:05}"));
        assert_eq!(row[2], text(*i));
        assert_eq!(row[3], n.to_string());
    }

    // JSON Lines of everything: as queryRecords pages it, record for record.
    let (status, body) = s
        .get_bytes(
            "dev.datarepo.exportRecords",
            &[("repo", DID), ("collection", POST), ("format", "jsonl")],
        )
        .await;
    assert_eq!(status, 200);
    let lines: Vec<Value> = String::from_utf8(body)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut paged = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut query = vec![("repo", DID), ("collection", POST), ("limit", "100")];
        if let Some(c) = &cursor {
            query.push(("cursor", c.as_str()));
        }
        let (status, page) = s.get("dev.datarepo.queryRecords", &query).await;
        assert_eq!(status, 200, "{page}");
        paged.extend(page["records"].as_array().unwrap().iter().cloned());
        match page["cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(lines.len(), RECORDS);
    assert_eq!(lines, paged);

    // A bad query or format is refused before the file starts.
    for (key, value) in [("where", "n <"), ("format", "xml"), ("sort", "text")] {
        let (status, body) = s
            .get_bytes(
                "dev.datarepo.exportRecords",
                &[("repo", DID), ("collection", POST), (key, value)],
            )
            .await;
        assert_eq!(
            status,
            400,
            "{key}={value}: {}",
            String::from_utf8_lossy(&body)
        );
    }
}
