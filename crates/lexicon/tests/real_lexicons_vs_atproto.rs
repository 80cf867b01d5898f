//! The real Lexicons: every document `@atproto/api` is built from parses,
//! and Bluesky-style posts (valid, and broken the ways clients break them)
//! get the reference's verdict and message against them.

use crate::common;

use common::posts;

use lexicon::{Document, Lexicons};
use serde_json::{Value, json};
use testkit::Rng;

fn real_lexicons() -> (Vec<Value>, Lexicons) {
    let docs: Vec<Value> = testkit::run_node("atproto-lexicons.mjs", "")
        .iter()
        .map(|l| serde_json::from_str(l).expect("a JSON document"))
        .collect();
    let mut lexicons = Lexicons::new();
    for doc in &docs {
        let id = doc["id"].as_str().unwrap_or("?").to_owned();
        let parsed =
            Document::parse(doc.clone()).unwrap_or_else(|e| panic!("{id} must parse: {e}"));
        assert!(lexicons.insert(parsed).is_none(), "{id} twice");
    }
    (docs, lexicons)
}

#[test]
fn every_real_lexicon_parses_and_posts_match_the_reference() {
    let (docs, lexicons) = real_lexicons();
    assert!(docs.len() > 300, "only {} documents", docs.len());
    assert!(lexicons.has_record("app.bsky.feed.post"));
    let mut rng = Rng(0xb5c7);
    let records: Vec<Value> = (0..600)
        .map(|i| {
            if i % 2 == 0 {
                posts::post(&mut rng)
            } else {
                posts::mutated(&mut rng)
            }
        })
        .collect();
    let mut input = json!({ "docs": docs }).to_string();
    input.push('\n');
    for r in &records {
        input.push_str(&json!({"collection": "app.bsky.feed.post", "record": r}).to_string());
        input.push('\n');
    }
    let answers = common::reference_verdicts(&input);
    assert_eq!(answers.len(), records.len());
    let mut invalid = 0;
    for (record, answer) in records.iter().zip(answers) {
        let ours = match lexicons.validate_record("app.bsky.feed.post", record) {
            Ok(()) => json!({"valid": true}),
            Err(e) => {
                invalid += 1;
                json!({"valid": false, "error": e.to_string()})
            }
        };
        assert_eq!(ours, answer, "for {record}");
    }
    assert!(
        invalid > 200 && invalid < 300,
        "{invalid} of 600 invalid: the mutations should break nearly half"
    );
}
