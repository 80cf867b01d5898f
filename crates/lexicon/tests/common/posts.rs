//! Bluesky-style posts (`app.bsky.feed.post`) for tests and benchmarks:
//! text with facets (mentions, links, tags), embeds (images, external
//! links, quoted records), replies, langs and self-labels.

use serde_json::{Value, json};
use testkit::Rng;

pub const CID: &str = "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm";
pub const IMAGE_CID: &str = "bafkreibme22gw2h7y2h7tg2fhqotaqjucnbc24deqo72b6mkl2egezxhvy";

const WORDS: &[&str] = &[
    "the",
    "storage",
    "engine",
    "writes",
    "records",
    "👍",
    "café",
    "naïve",
    "数据",
    "über",
    "content-addressed",
    "repository",
    "🇫🇷",
    "e\u{301}clair",
    "shard",
];

fn strong_ref(rng: &mut Rng) -> Value {
    json!({
        "uri": format!("at://did:plc:ewvi7nxzyoun6zhxrhs64oiz/app.bsky.feed.post/3k{}", rng.string(&['a', 'b', 'c', '2', '3', '4'], 11)),
        "cid": CID,
    })
}

/// A valid post.
pub fn post(rng: &mut Rng) -> Value {
    let words = 5 + rng.below(30) as usize;
    let mut text: String = (0..words)
        .map(|_| rng.pick(WORDS))
        .collect::<Vec<_>>()
        .join(" ");
    let mut facets = Vec::new();
    if rng.below(2) == 0 {
        let start = text.len();
        text.push_str(" @alice.example.com");
        facets.push(json!({
            "index": {"byteStart": start + 1, "byteEnd": text.len()},
            "features": [{"$type": "app.bsky.richtext.facet#mention", "did": "did:plc:z72i7hdynmk6r22z27h6tvur"}]
        }));
    }
    if rng.below(3) == 0 {
        let start = text.len();
        text.push_str(" example.com/x");
        facets.push(json!({
            "index": {"byteStart": start + 1, "byteEnd": text.len()},
            "features": [{"$type": "app.bsky.richtext.facet#link", "uri": "https://example.com/x"}]
        }));
    }
    if rng.below(4) == 0 {
        let start = text.len();
        text.push_str(" #rust");
        facets.push(json!({
            "index": {"byteStart": start + 1, "byteEnd": text.len()},
            "features": [{"$type": "app.bsky.richtext.facet#tag", "tag": "rust"}]
        }));
    }
    let mut post = json!({
        "$type": "app.bsky.feed.post",
        "text": text,
        "createdAt": format!("2024-0{}-1{}T1{}:2{}:3{}.{:03}Z", 1 + rng.below(9), rng.below(10), rng.below(10), rng.below(10), rng.below(10), rng.below(1000)),
        "langs": [rng.pick(&["en", "fr", "ja", "pt-BR", "de"])],
    });
    if !facets.is_empty() {
        post["facets"] = Value::Array(facets);
    }
    match rng.below(4) {
        0 => {
            let images: Vec<Value> = (0..1 + rng.below(4))
                .map(|i| json!({
                    "alt": format!("picture {i}"),
                    "image": {"$type": "blob", "ref": {"$link": IMAGE_CID}, "mimeType": "image/jpeg", "size": 100_000 + rng.below(800_000)},
                    "aspectRatio": {"width": 1200, "height": 800},
                }))
                .collect();
            post["embed"] = json!({"$type": "app.bsky.embed.images", "images": images});
        }
        1 => {
            post["embed"] = json!({"$type": "app.bsky.embed.external", "external": {
                "uri": "https://example.com/article", "title": "An article", "description": "What it says"}});
        }
        2 => {
            post["embed"] = json!({"$type": "app.bsky.embed.record", "record": strong_ref(rng)});
        }
        _ => {}
    }
    if rng.below(3) == 0 {
        post["reply"] = json!({"root": strong_ref(rng), "parent": strong_ref(rng)});
    }
    if rng.below(10) == 0 {
        post["labels"] =
            json!({"$type": "com.atproto.label.defs#selfLabels", "values": [{"val": "nudity"}]});
    }
    if rng.below(10) == 0 {
        post["tags"] = json!(["datarepo", "storage"]);
    }
    post
}

/// A post broken in one of the ways clients break them (or, for a few,
/// changed in a way that stays valid: an open union's unknown `$type`).
pub fn mutated(rng: &mut Rng) -> Value {
    let mut p = post(rng);
    match rng.below(12) {
        0 => p["text"] = json!("é".repeat(301)),
        1 => p["text"] = json!("a".repeat(3001)),
        2 => p["langs"] = json!(["not a language!"]),
        3 => {
            p.as_object_mut().map(|m| m.remove("createdAt"));
        }
        4 => p["createdAt"] = json!("yesterday"),
        5 => p["embed"] = json!({"$type": "app.bsky.embed.images", "images": []}),
        6 => p["embed"] = json!({"$type": "com.example.custom#embed", "anything": 1}),
        7 => p["reply"] = json!({"root": strong_ref(rng)}),
        8 => p["facets"] = json!([{"index": {"byteStart": -1, "byteEnd": 3}, "features": []}]),
        9 => {
            p["embed"] = json!({"$type": "app.bsky.embed.images", "images": [{"image": {"$type": "blob", "ref": {"$link": IMAGE_CID}, "mimeType": "image/png", "size": 10}}]})
        }
        10 => p["langs"] = json!(["en", "fr", "de", "ja"]),
        _ => p["tags"] = json!(["x".repeat(700)]),
    }
    p
}
