//! The Python AT Protocol SDK (pinned in `tests/python`, with Pillow to
//! make real images) posts images to `datarepo serve`: `send_image` and
//! `send_images` upload a PNG and a JPEG, the posts refer to them, and
//! `get_blob` returns the bytes uploaded; the CIDs are those of the bytes
//! (sha2-256, raw) and `list_blobs` lists them.

use crate::common;

use std::process::Command;

use common::{http, start_server};
use serde_json::{Value, json};

const TOKEN: &str = "sdk-images-token";

#[test]
fn the_python_sdk_posts_images() {
    let dir = testkit::tempdir("cli-python-images");
    let store = dir.path().join("store");
    let (_server, port) = start_server(store.to_str().unwrap(), TOKEN);
    let (status, body) = http(
        port,
        "POST",
        "/xrpc/com.atproto.server.createAccount",
        TOKEN,
        &json!({"handle": "pics.test", "password": "pics password"}).to_string(),
    )
    .unwrap();
    assert_eq!(status, 200, "{body}");
    // The SDK asks for validation: the account's repository gets the real
    // Bluesky Lexicons (those @atproto/api is built from), so the images'
    // `accept` and `maxSize` are checked against the stored blobs.
    let lexicons: Vec<Value> = testkit::run_node("atproto-lexicons.mjs", "")
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (status, body) = http(
        port,
        "POST",
        "/xrpc/dev.datarepo.putLexicons",
        TOKEN,
        &json!({"repo": "did:web:pics.test", "lexicons": lexicons}).to_string(),
    )
    .unwrap();
    assert_eq!(status, 200, "{body}");
    let out = Command::new(testkit::python_sdk())
        .arg(testkit::python_dir().join("send_images.py"))
        .arg(format!("http://127.0.0.1:{port}"))
        .args(["pics.test", "pics password"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    let images = seen["images"].as_array().unwrap();
    assert_eq!(images.len(), 3, "{seen}");
    let types: Vec<&str> = images
        .iter()
        .map(|i| i["mimeType"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["image/png", "image/png", "image/jpeg"]);
    for image in images {
        assert_eq!(
            image["same"], true,
            "get_blob returned other bytes: {image}"
        );
        assert!(
            image["cid"].as_str().unwrap().starts_with("bafkrei"),
            "{image}"
        );
    }
    // The same PNG twice is one blob; two blobs in all, both listed.
    assert_eq!(images[0]["cid"], images[1]["cid"]);
    let mut cids = vec![
        images[0]["cid"].as_str().unwrap().to_owned(),
        images[2]["cid"].as_str().unwrap().to_owned(),
    ];
    cids.sort();
    assert_eq!(seen["listed"], json!(cids));
}
