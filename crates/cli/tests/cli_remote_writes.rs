//! `--server URL`: the writing commands go through a running server's API
//! (the store is the server's), with the token in DATAREPO_TOKEN; commands
//! that need the store itself say so.

use crate::common;

use std::process::{Command, Output};

use common::{http, start_server};
use serde_json::{Value, json};

const TOKEN: &str = "remote-token";
const DID: &str = "did:web:remote.example";
const POST: &str = "app.bsky.feed.post";

fn remote(port: u16, token: &str, args: &[&str], stdin: &str) -> Output {
    common::datarepo_with(
        Command::new(env!("CARGO_BIN_EXE_datarepo"))
            .args([
                "--server",
                &format!("http://127.0.0.1:{port}"),
                "--repo",
                DID,
            ])
            .args(args)
            .env("DATAREPO_TOKEN", token)
            .env("DATAREPO_STORE", "/nonexistent/not-used"),
        stdin,
    )
}

fn get_record(port: u16, rkey: &str) -> Option<Value> {
    let (status, body) = http(
        port,
        "GET",
        &format!("/xrpc/com.atproto.repo.getRecord?repo={DID}&collection={POST}&rkey={rkey}"),
        TOKEN,
        "",
    )?;
    (status == 200).then(|| serde_json::from_str(&body).unwrap())
}

#[test]
fn writing_commands_go_through_the_server() {
    let tmp = testkit::tempdir("cli-remote");
    let store = tmp.path().join("data");
    let (_server, port) = start_server(store.to_str().unwrap(), TOKEN);

    let out = remote(
        port,
        TOKEN,
        &["put", POST, "a", "--json"],
        r#"{"text": "remote"}"#,
    );
    assert!(out.status.success(), "{out:?}");
    let put: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(put["uri"], json!(format!("at://{DID}/{POST}/a")));
    assert_eq!(get_record(port, "a").unwrap()["value"]["text"], "remote");

    let batch: String = (0..5)
        .map(|i| {
            json!({"$type": "com.atproto.repo.applyWrites#create", "collection": POST,
                   "rkey": format!("b{i}"), "value": {"n": i}})
            .to_string()
                + "\n"
        })
        .collect();
    let out = remote(
        port,
        TOKEN,
        &["put", "--batch", "--commit-every", "2", "--json"],
        &batch,
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(common::json_lines(&out).len(), 3);
    assert!(get_record(port, "b4").is_some());

    let out = remote(
        port,
        TOKEN,
        &["index", "add", POST, "n", "--kind", "integer", "--json"],
        "",
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["records"],
        6
    );

    let out = remote(port, TOKEN, &["rm", POST, "a"], "");
    assert!(out.status.success(), "{out:?}");
    assert!(get_record(port, "a").is_none());

    // A wrong token: the server's refusal, as an error.
    let out = remote(port, "wrong", &["put", POST, "c"], "{}");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("401"),
        "{out:?}"
    );
    // A command that needs the store itself.
    let out = remote(port, TOKEN, &["init"], "");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("needs the store"),
        "{out:?}"
    );
}

/// The setup commands (`lexicon add|rm`, `collection define`, `index
/// rebuild`) through a server print exactly what they print on a store of
/// their own holding the same records.
#[test]
fn setup_commands_through_the_server_print_what_they_print_locally() {
    let tmp = testkit::tempdir("cli-remote-setup");
    let served = tmp.path().join("served");
    let own = tmp.path().join("own");
    let (_server, port) = start_server(served.to_str().unwrap(), TOKEN);
    let local = |args: &[&str], stdin: &str| {
        common::datarepo_with(
            Command::new(env!("CARGO_BIN_EXE_datarepo"))
                .args(["--store", own.to_str().unwrap(), "--repo", DID])
                .args(args),
            stdin,
        )
    };
    let both = |args: &[&str], stdin: &str| -> (Value, Value) {
        let (r, l) = (remote(port, TOKEN, args, stdin), local(args, stdin));
        assert!(r.status.success(), "remote {args:?}: {r:?}");
        assert!(l.status.success(), "local {args:?}: {l:?}");
        (
            serde_json::from_slice(&r.stdout).unwrap(),
            serde_json::from_slice(&l.stdout).unwrap(),
        )
    };
    let note = "com.example.note";
    let (r, l) = both(
        &["put", note, "3kaaaaaaaaaa2", "--json"],
        r#"{"text": "longer than four"}"#,
    );
    assert_eq!(r["cid"], l["cid"]);

    let lexicon = tmp.path().join("note.json");
    std::fs::write(
        &lexicon,
        json!({"lexicon": 1, "id": note, "defs": {"main": {"type": "record", "key": "tid",
            "record": {"type": "object", "properties": {
                "text": {"type": "string", "maxGraphemes": 4}}}}}})
        .to_string(),
    )
    .unwrap();
    let lexicon = lexicon.to_str().unwrap();
    let (r, l) = both(&["lexicon", "add", lexicon, "--json"], "");
    assert_eq!(r, l);
    assert_eq!(r["lexicons"][0]["invalid"], 1, "{r}");
    let human = remote(port, TOKEN, &["lexicon", "rm", note], "");
    assert!(human.status.success(), "{human:?}");
    let human = remote(port, TOKEN, &["lexicon", "add", lexicon], "");
    assert!(
        String::from_utf8_lossy(&human.stdout).contains("1 of 1 existing records do not validate"),
        "{human:?}"
    );

    let settings = [
        "collection",
        "define",
        "com.example.settings",
        "--key",
        "literal:self",
    ];
    let (r, l) = both(&[&settings[..], &["--json"]].concat(), "");
    assert_eq!(
        (&r, &l),
        (
            &json!({"collection": "com.example.settings", "key": "literal:self",
                    "keyType": "literal:self"}),
            &r
        )
    );

    both(
        &["index", "add", note, "text", "--kind", "keyword", "--json"],
        "",
    );
    let (r, l) = both(&["index", "rebuild", "--json"], "");
    assert_eq!((&r, &l), (&json!({"rebuilt": true, "records": 1}), &r));

    let (r, l) = both(&["lexicon", "rm", note, "--json"], "");
    assert_eq!((&r, &l), (&json!({"removed": note}), &r));
    let again = remote(port, TOKEN, &["lexicon", "rm", note], "");
    assert_eq!(again.status.code(), Some(1), "{again:?}");
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("LexiconNotFound"),
        "{again:?}"
    );
}
