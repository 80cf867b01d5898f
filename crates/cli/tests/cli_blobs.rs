//! `datarepo blob put|get|ls`: a file stored as a blob of the repository
//! (on the store, or through a running server with --server), a record
//! referring to it, the bytes read back, the list saying which blobs
//! records refer to; an unknown CID is refused by name.

use crate::common;

use std::{path::Path, process::Command};

use common::{datarepo, datarepo_with, json_lines, start_server};
use serde_json::{Value, json};

const DID: &str = "did:web:blobs.test";

fn ok(store: &Path, args: &[&str], stdin: &str) -> Value {
    let mut all = vec!["--store", store.to_str().unwrap(), "--repo", DID, "--json"];
    all.extend_from_slice(args);
    let out = datarepo(&all, stdin);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    json_lines(&out).pop().unwrap_or(Value::Null)
}

fn post_with(blob: &Value) -> String {
    json!({"text": "a picture", "createdAt": "2026-11-27T00:00:00Z",
           "embed": {"$type": "app.bsky.embed.images", "images": [{"alt": "", "image": blob}]}})
    .to_string()
}

#[test]
fn blobs_are_put_referred_to_and_read_back() {
    let dir = testkit::tempdir("cli-blobs");
    let store = dir.path().join("store");
    let png = dir.path().join("picture.png");
    let mut bytes = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    bytes.extend((0..100_000u32).map(|i| (i % 253) as u8));
    std::fs::write(&png, &bytes).unwrap();

    let blob = ok(&store, &["blob", "put", png.to_str().unwrap()], "")["blob"].clone();
    let cid = blob["ref"]["$link"].as_str().unwrap().to_owned();
    assert_eq!(cid, store::blob_cid(&bytes).to_string());
    assert_eq!(blob["mimeType"], "image/png");
    assert_eq!(blob["size"], bytes.len());
    let listed = ok(&store, &["blob", "ls"], "");
    assert_eq!(listed["blobs"][0]["state"], "temporary", "{listed}");
    ok(
        &store,
        &["put", "app.bsky.feed.post", "3kaaaaaaaaa22"],
        &post_with(&blob),
    );
    let listed = ok(&store, &["blob", "ls"], "");
    assert_eq!(listed["blobs"][0]["state"], "referenced", "{listed}");
    assert_eq!(listed["blobs"][0]["refs"], 1);
    // `list`, as the other listing subcommands are named, says the same.
    assert_eq!(ok(&store, &["blob", "list"], ""), listed);

    let back = dir.path().join("back.png");
    ok(
        &store,
        &["blob", "get", &cid, "-o", back.to_str().unwrap()],
        "",
    );
    assert_eq!(std::fs::read(&back).unwrap(), bytes);
    let unknown = store::blob_cid(b"never").to_string();
    let out = datarepo(
        &[
            "--store",
            store.to_str().unwrap(),
            "--repo",
            DID,
            "blob",
            "get",
            &unknown,
        ],
        "",
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains(&unknown));
    // A record naming a blob the repository does not hold: refused.
    let fake =
        json!({"$type": "blob", "ref": {"$link": unknown}, "mimeType": "image/png", "size": 5});
    let out = datarepo(
        &[
            "--store",
            store.to_str().unwrap(),
            "--repo",
            DID,
            "put",
            "app.bsky.feed.post",
            "3kaaaaaaaaa23",
        ],
        &post_with(&fake),
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Could not find blob"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Through a running server.
    let (_server, port) = start_server(store.to_str().unwrap(), "blob-token");
    let url = format!("http://127.0.0.1:{port}");
    let txt = dir.path().join("notes.txt");
    std::fs::write(&txt, "plain words").unwrap();
    let out = datarepo_with(
        Command::new(env!("CARGO_BIN_EXE_datarepo"))
            .args(["--server", &url, "--repo", DID, "--json", "blob", "put"])
            .arg(&txt)
            .args(["--mime", "text/plain"])
            .env("DATAREPO_TOKEN", "blob-token"),
        "",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let remote = json_lines(&out).pop().unwrap();
    assert_eq!(remote["blob"]["mimeType"], "text/plain");
    assert_eq!(
        remote["blob"]["ref"]["$link"],
        store::blob_cid(b"plain words").to_string()
    );
}
