//! Trains the zstd dictionary the Jetstream-compatible stream compresses
//! its events with (`crates/repo/src/stream.zdict`), on events shaped as
//! datarepo makes them for a microblog's records (posts with text, langs,
//! facets, replies and images; likes, reposts, follows; updates and
//! deletes), from a seeded generator, and reports what it gains: average
//! bytes per event plain, with zstd alone and with the dictionary, on
//! events it was not trained on.
//!
//! ```sh
//! cargo run --release -p datarepo-bench --bin stream-dictionary -- [--write]
//! ```
//!
//! With `--write` the dictionary replaces `crates/repo/src/stream.zdict`
//! (then bump `STREAM_DICTIONARY_VERSION` in `crates/repo/src/stream.rs`).

use serde_json::{Value, json};
use testkit::Rng;

const WORDS: &[&str] = &[
    "the",
    "a",
    "rust",
    "today",
    "storage",
    "post",
    "great",
    "new",
    "just",
    "love",
    "this",
    "is",
    "what",
    "with",
    "for",
    "and",
    "of",
    "to",
    "in",
    "my",
    "on",
    "at",
    "you",
    "we",
    "data",
    "репозиторий",
    "データ",
    "日本語",
    "bonjour",
    "hola",
    "🙂",
    "🚀",
];
const LANGS: &[&str] = &["en", "ja", "de", "fr", "es", "pt", "ko"];
const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz234567";

fn tid(rng: &mut Rng) -> String {
    let mut s = String::from("3m");
    for _ in 0..11 {
        s.push(char::from(ALPHABET[rng.below(32) as usize]));
    }
    s
}

fn did(rng: &mut Rng) -> String {
    match rng.below(3) {
        0 => format!("did:web:user{}.example.com", rng.below(5000)),
        _ => {
            let mut s = String::from("did:plc:");
            for _ in 0..24 {
                s.push(char::from(ALPHABET[rng.below(32) as usize]));
            }
            s
        }
    }
}

fn cid(rng: &mut Rng, raw: bool) -> String {
    let mut s = String::from(if raw { "bafkrei" } else { "bafyrei" });
    for _ in 0..52 {
        s.push(char::from(ALPHABET[rng.below(32) as usize]));
    }
    s
}

fn created_at(rng: &mut Rng) -> String {
    format!(
        "2026-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        1 + rng.below(12),
        1 + rng.below(28),
        rng.below(24),
        rng.below(60),
        rng.below(60),
        rng.below(1000)
    )
}

fn strong_ref(rng: &mut Rng, collection: &str) -> Value {
    json!({"uri": format!("at://{}/{collection}/{}", did(rng), tid(rng)), "cid": cid(rng, false)})
}

fn record(rng: &mut Rng, collection: &str) -> Value {
    match collection {
        "app.bsky.feed.post" => {
            let words = 3 + rng.below(30) as usize;
            let text: Vec<&str> = (0..words)
                .map(|_| WORDS[rng.below(WORDS.len() as u64) as usize])
                .collect();
            let mut post = json!({"$type": collection, "text": text.join(" "),
                                  "langs": [LANGS[rng.below(LANGS.len() as u64) as usize]],
                                  "createdAt": created_at(rng)});
            if rng.below(4) == 0 {
                let root = strong_ref(rng, collection);
                post["reply"] = json!({"root": root.clone(), "parent": if rng.below(2) == 0 { root } else { strong_ref(rng, collection) }});
            }
            if rng.below(5) == 0 {
                post["embed"] = json!({"$type": "app.bsky.embed.images", "images": [{"alt": "", "image":
                    {"$type": "blob", "ref": {"$link": cid(rng, true)}, "mimeType": "image/jpeg", "size": 100_000 + rng.below(900_000)},
                    "aspectRatio": {"width": 1000 + rng.below(1000), "height": 1000 + rng.below(1000)}}]});
            }
            if rng.below(6) == 0 {
                post["facets"] = json!([{"index": {"byteStart": 0, "byteEnd": 5 + rng.below(20)},
                    "features": [{"$type": "app.bsky.richtext.facet#link", "uri": format!("https://example.com/{}", tid(rng))}]}]);
            }
            post
        }
        "app.bsky.feed.like" | "app.bsky.feed.repost" => {
            json!({"$type": collection, "subject": strong_ref(rng, "app.bsky.feed.post"), "createdAt": created_at(rng)})
        }
        _ => json!({"$type": collection, "subject": did(rng), "createdAt": created_at(rng)}),
    }
}

/// One event, as `repo::stream` writes it (field order included).
fn event(rng: &mut Rng, time: u64) -> Vec<u8> {
    let collection = match rng.below(10) {
        0..=3 => "app.bsky.feed.like",
        4..=6 => "app.bsky.feed.post",
        7 => "app.bsky.feed.repost",
        _ => "app.bsky.graph.follow",
    };
    let operation = match rng.below(20) {
        0 => "delete",
        1 => "update",
        _ => "create",
    };
    let mut commit = format!(
        "{{\"rev\":\"{}\",\"operation\":\"{operation}\",\"collection\":\"{collection}\",\"rkey\":\"{}\"",
        tid(rng),
        tid(rng)
    );
    if operation != "delete" {
        commit += &format!(
            ",\"record\":{},\"cid\":\"{}\"",
            record(rng, collection),
            cid(rng, false)
        );
    }
    commit.push('}');
    format!(
        "{{\"did\":{},\"time_us\":{time},\"kind\":\"commit\",\"commit\":{commit}}}",
        serde_json::to_string(&did(rng)).unwrap_or_default()
    )
    .into_bytes()
}

fn main() {
    let write = std::env::args().any(|a| a == "--write");
    let mut rng = Rng(0x5eed_d1c7);
    let mut time = 1_764_201_600_000_000u64;
    let mut next = |rng: &mut Rng| {
        time += 1 + rng.below(5000);
        event(rng, time)
    };
    let training: Vec<Vec<u8>> = (0..20_000).map(|_| next(&mut rng)).collect();
    let dictionary = zstd::dict::from_samples(&training, 32 * 1024).expect("a dictionary");
    let held_out: Vec<Vec<u8>> = (0..5_000).map(|_| next(&mut rng)).collect();
    let plain: usize = held_out.iter().map(Vec::len).sum();
    let alone: usize = held_out
        .iter()
        .map(|e| zstd::bulk::compress(e, 3).expect("compressed").len())
        .sum();
    let mut with = zstd::bulk::Compressor::with_dictionary(3, &dictionary).expect("a compressor");
    let dict: usize = held_out
        .iter()
        .map(|e| with.compress(e).expect("compressed").len())
        .sum();
    let n = held_out.len() as f64;
    println!(
        "dictionary {} bytes; per event on {} held-out events: plain {:.0} B, zstd {:.0} B, zstd + dictionary {:.0} B",
        dictionary.len(),
        held_out.len(),
        plain as f64 / n,
        alone as f64 / n,
        dict as f64 / n
    );
    if write {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../repo/src/stream.zdict");
        std::fs::write(&path, &dictionary).expect("the dictionary written");
        println!("wrote {}", path.display());
    }
}
