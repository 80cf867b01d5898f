//! The repository the web interface tests browse, and the API calls that
//! check what the pages show.

use serde_json::{Value, json};

use crate::common::http;

pub const TOKEN: &str = "web-test-token";

pub const REPO: &str = "did:web:web.example";

pub const POSTS: &str = "app.bsky.feed.post";

pub const NOTES: &str = "dev.example.note";

/// Enough posts for the Pail's root shard (512 KiB) to split into children.
pub const POST_COUNT: usize = 9000;

pub const PAGE: usize = 25;

pub fn langs(i: usize) -> Value {
    match i % 3 {
        0 => json!(["en"]),
        1 => json!(["ja"]),
        _ => json!(["de", "en"]),
    }
}

pub fn post(i: usize) -> Value {
    let mut p = json!({
        "$type": POSTS,
        "text": format!("post number {i}"),
        "langs": langs(i),
        "createdAt": format!("2026-11-{:02}T{:02}:00:00Z", 1 + i % 28, i % 24),
    });
    if i == 3 {
        p["reply"] = json!({"parent": {"uri": format!("at://{REPO}/{POSTS}/p00001"), "cid": "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm"}});
    }
    p
}

pub fn note_lexicon() -> Value {
    json!({"lexicon": 1, "id": NOTES, "defs": {"main": {
        "type": "record", "key": "any", "description": "A short note.",
        "record": {"type": "object", "required": ["body"], "properties": {
            "body": {"type": "string", "maxLength": 3000}}}}}})
}

pub fn rkey(i: usize) -> String {
    format!("p{i:05}")
}

/// The API's answer to GET `path` (a 200, parsed).
pub fn api(port: u16, path: &str) -> Value {
    let (status, body) = http(port, "GET", path, TOKEN, "").expect("the server answers");
    assert_eq!(status, 200, "GET {path}: {body}");
    serde_json::from_str(&body).unwrap()
}

pub fn api_post(port: u16, method: &str, body: &Value) -> (u16, Value) {
    let (status, text) = http(
        port,
        "POST",
        &format!("/xrpc/{method}"),
        TOKEN,
        &body.to_string(),
    )
    .expect("the server answers");
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// The repository the tests browse: posts with two indexes, a few notes,
/// one post updated twice and one deleted (for history and commit views).
pub fn load(port: u16) {
    for batch in (0..POST_COUNT).collect::<Vec<_>>().chunks(200) {
        let writes: Vec<Value> = batch
            .iter()
            .map(|&i| json!({"$type": "com.atproto.repo.applyWrites#create", "collection": POSTS, "rkey": rkey(i), "value": post(i)}))
            .collect();
        let (s, b) = api_post(
            port,
            "com.atproto.repo.applyWrites",
            &json!({"repo": REPO, "writes": writes}),
        );
        assert_eq!(s, 200, "{b}");
    }
    for (path, kind) in [("langs", "keyword"), ("createdAt", "datetime")] {
        let (s, b) = api_post(
            port,
            "dev.datarepo.addIndex",
            &json!({"repo": REPO, "collection": POSTS, "path": path, "kind": kind}),
        );
        assert_eq!(s, 200, "{b}");
    }
    for i in 0..3 {
        let (s, b) = api_post(
            port,
            "com.atproto.repo.createRecord",
            &json!({"repo": REPO, "collection": NOTES, "rkey": format!("n{i}"), "record": {"body": format!("note {i}")}}),
        );
        assert_eq!(s, 200, "{b}");
    }
    let long = "a long note ".repeat(200);
    let (s, b) = api_post(
        port,
        "com.atproto.repo.createRecord",
        &json!({"repo": REPO, "collection": NOTES, "rkey": "long", "record": {"body": long}}),
    );
    assert_eq!(s, 200, "{b}");
    // A note that links to the long one's block.
    let (s, b) = api_post(
        port,
        "com.atproto.repo.createRecord",
        &json!({"repo": REPO, "collection": NOTES, "rkey": "linked",
                "record": {"body": "see the long note", "about": {"$link": b["cid"]}}}),
    );
    assert_eq!(s, 200, "{b}");
    for text in ["post five, edited", "post five, edited again"] {
        let mut v = post(5);
        v["text"] = json!(text);
        let (s, b) = api_post(
            port,
            "com.atproto.repo.putRecord",
            &json!({"repo": REPO, "collection": POSTS, "rkey": rkey(5), "record": v}),
        );
        assert_eq!(s, 200, "{b}");
    }
    let (s, b) = api_post(
        port,
        "com.atproto.repo.deleteRecord",
        &json!({"repo": REPO, "collection": POSTS, "rkey": rkey(7)}),
    );
    assert_eq!(s, 200, "{b}");
}
