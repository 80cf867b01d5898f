//! `follow --jetstream` reads the server's Jetstream-compatible stream:
//! `--collection` (a prefix too) and `--repo` filter on the server,
//! `--cursor 0` replays what the server keeps, `--json` prints each event
//! as sent and the human form names the operation, path and record;
//! `--where` and `--fields` filter and cut records on the server (a bad
//! expression is refused before connecting); the expected events are
//! derived from the writes made.

use crate::common;

use common::{datarepo, json_lines, start_server};
use serde_json::{Value, json};

const TOKEN: &str = "follow-jetstream-token";

fn create(port: u16, repo: &str, collection: &str, rkey: &str) {
    let body = json!({"repo": repo, "collection": collection, "rkey": rkey,
                      "record": {"text": format!("{collection} {rkey}")}})
    .to_string();
    let (status, answer) = common::http(
        port,
        "POST",
        "/xrpc/com.atproto.repo.createRecord",
        TOKEN,
        &body,
    )
    .unwrap();
    assert_eq!(status, 200, "{answer}");
}

#[test]
fn follow_reads_the_jetstream_compatible_stream() {
    let tmp = testkit::tempdir("cli-follow-jetstream");
    let store = tmp.path().join("data");
    let (_server, port) = start_server(store.to_str().unwrap(), TOKEN);
    let writes = [
        ("did:web:a", "app.x.post", "p1"),
        ("did:web:b", "app.x.post", "p1"),
        ("did:web:a", "app.x.like", "l1"),
        ("did:web:a", "app.y.note", "n1"),
        ("did:web:a", "app.x.post", "p2"),
    ];
    for (repo, collection, rkey) in writes {
        create(port, repo, collection, rkey);
    }
    let url = format!("http://127.0.0.1:{port}");
    let expected: Vec<_> = writes
        .iter()
        .filter(|(repo, collection, _)| *repo == "did:web:a" && collection.starts_with("app.x."))
        .collect();
    let out = datarepo(
        &[
            "--repo",
            "did:web:a",
            "--json",
            "follow",
            &url,
            "--jetstream",
            "--collection",
            "app.x.*",
            "--cursor",
            "0",
            "--limit",
            &expected.len().to_string(),
        ],
        "",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = json_lines(&out);
    assert_eq!(events.len(), expected.len(), "{events:?}");
    for (event, (repo, collection, rkey)) in events.iter().zip(&expected) {
        assert_eq!(event["did"], *repo);
        assert_eq!(event["commit"]["operation"], "create");
        assert_eq!(event["commit"]["collection"], *collection);
        assert_eq!(event["commit"]["rkey"], *rkey);
        assert_eq!(
            event["commit"]["record"]["text"],
            Value::from(format!("{collection} {rkey}"))
        );
    }
    // The human form: one line per operation with its record.
    let out = datarepo(
        &[
            "follow",
            &url,
            "--jetstream",
            "--collection",
            "app.y.note",
            "--cursor",
            "0",
            "--limit",
            "1",
        ],
        "",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8(out.stdout).unwrap();
    assert!(
        line.contains("did:web:a create app.y.note/n1") && line.contains("\"app.y.note n1\""),
        "{line}"
    );

    // --where and --fields: "app.x.post p2" is the only text above "app.x.post p1".
    let out = datarepo(
        &[
            "--json",
            "follow",
            &url,
            "--jetstream",
            "--where",
            r#"text in ["app.x.post p2", "app.y.note n1"]"#,
            "--fields",
            "text",
            "--cursor",
            "0",
            "--limit",
            "2",
        ],
        "",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = json_lines(&out);
    let got: Vec<(&str, &Value)> = events
        .iter()
        .map(|e| {
            (
                e["commit"]["rkey"].as_str().unwrap(),
                &e["commit"]["record"],
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("n1", &json!({"text": "app.y.note n1"})),
            ("p2", &json!({"text": "app.x.post p2"}))
        ]
    );
    let out = datarepo(&["follow", &url, "--jetstream", "--where", "text >"], "");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--where: at position"));
}
