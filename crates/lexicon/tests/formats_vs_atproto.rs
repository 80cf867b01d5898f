//! String formats against `@atproto/lexicon` (and through it
//! `@atproto/syntax` and `multiformats`): a corpus of valid examples and
//! thousands of one-edit mutations of them, each validated as a record
//! field of every format, verdicts compared.
//!
//! `datetime` is compared one way only: what datarepo accepts the
//! reference must accept (the reference's lenient ISO 8601 parser takes
//! more than RFC 3339 allows; `tests/divergences.rs`).

use crate::common;
use lexicon::{Document, Lexicons};
use serde_json::{Value, json};
use testkit::Rng;

const FORMATS: &[&str] = &[
    "at-identifier",
    "at-uri",
    "cid",
    "datetime",
    "did",
    "handle",
    "language",
    "nsid",
    "record-key",
    "tid",
    "uri",
];

const SEEDS: &[&str] = &[
    "at://did:plc:z72i7hdynmk6r22z27h6tvur/app.bsky.feed.post/3jui7kd54zh2y",
    "at://alice.example.com/app.bsky.actor.profile/self",
    "at://did:web:a.example/com.example.x#/a/b%20c",
    "at://alice.example.com",
    "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm",
    "QmQg1v4o9xdT3Q14wh4S7dxZkDjyZ9ssFzFzyep1YrVJBY",
    "zb2rhe5P4gXftAwvA4eXQ5HJwsER2owDyS9sKaQRRVQPn93bA",
    "1985-04-12T23:20:50.123Z",
    "2024-02-29T00:00:00+05:30",
    "did:plc:z72i7hdynmk6r22z27h6tvur",
    "did:web:example.com%3A8080",
    "alice.example.com",
    "xn--ls8h.test",
    "en-US",
    "zh-Hant-TW",
    "x-private-use",
    "i-klingon",
    "de-CH-1996",
    "app.bsky.feed.post",
    "com.example.fooBar",
    "self",
    "3jui7kd54zh2y",
    "https://example.com/path?q=1#frag",
    "mailto:alice@example.com",
];

const INSERTS: &[char] = &[
    '/', '#', '?', ':', '%', ' ', '.', '-', '_', '~', '@', 'A', 'z', '0', '9', 'é', '\\', '[',
];

fn mutate(rng: &mut Rng, s: &str) -> String {
    let mut chars: Vec<char> = s.chars().collect();
    match rng.below(4) {
        0 if !chars.is_empty() => {
            chars.remove(rng.index(chars.len()));
        }
        1 => {
            let at = rng.index(chars.len() + 1);
            chars.insert(at, rng.pick(INSERTS));
        }
        2 if !chars.is_empty() => {
            let at = rng.index(chars.len());
            chars[at] = rng.pick(INSERTS);
        }
        _ => {
            let cut = rng.index(chars.len() + 1);
            chars.truncate(cut);
        }
    }
    chars.into_iter().collect()
}

#[test]
fn every_format_agrees_with_the_reference() {
    let properties: serde_json::Map<String, Value> = FORMATS
        .iter()
        .map(|f| ((*f).to_owned(), json!({"type": "string", "format": f})))
        .collect();
    let doc = json!({"lexicon": 1, "id": "com.example.formats", "defs": {"main": {
        "type": "record", "key": "any", "record": {"type": "object", "properties": properties}}}});
    let mut lexicons = Lexicons::new();
    lexicons.insert(Document::parse(doc.clone()).unwrap());

    let mut rng = Rng(0xf0_4a75);
    let mut corpus: Vec<String> = SEEDS.iter().map(|s| (*s).to_owned()).collect();
    for _ in 0..4000 {
        let seed = rng.pick(SEEDS);
        let mut s = mutate(&mut rng, seed);
        if rng.below(3) == 0 {
            s = mutate(&mut rng, &s);
        }
        corpus.push(s);
    }
    let mut input = json!({"docs": [doc]}).to_string();
    input.push('\n');
    let mut ours = Vec::new();
    for s in &corpus {
        for f in FORMATS {
            let record = json!({"$type": "com.example.formats", *f: s});
            input.push_str(
                &json!({"collection": "com.example.formats", "record": record}).to_string(),
            );
            input.push('\n');
            ours.push((
                *f,
                s,
                lexicons
                    .validate_record("com.example.formats", &record)
                    .is_ok(),
            ));
        }
    }
    let answers: Vec<bool> = common::reference_verdicts(&input)
        .iter()
        .map(|v| v["valid"] == json!(true))
        .collect();
    assert_eq!(answers.len(), ours.len());
    let mut differ = Vec::new();
    let mut accepted = 0;
    for ((format, s, ours), theirs) in ours.iter().zip(answers) {
        accepted += usize::from(*ours);
        let agree = if *format == "datetime" {
            !*ours || theirs
        } else {
            *ours == theirs
        };
        if !agree {
            differ.push(format!("{format} {s:?}: ours {ours}, reference {theirs}"));
        }
    }
    assert!(
        differ.is_empty(),
        "{} verdicts differ:\n{}",
        differ.len(),
        differ
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        accepted > 2000,
        "only {accepted} accepted: the corpus is too broken"
    );
}
