//! Where datarepo follows the Lexicon specification rather than the
//! reference validator (`@atproto/lexicon`): each case runs through the
//! reference too, so the test fails if the reference changes its answer
//! (and the divergence, and `docs/repo.md`, should be revisited).

use crate::common;
use lexicon::{Document, Lexicons};
use serde_json::{Value, json};

const CID: &str = "bafkreibme22gw2h7y2h7tg2fhqotaqjucnbc24deqo72b6mkl2egezxhvy";

struct Case {
    why: &'static str,
    properties: Value,
    record: Value,
    /// Our message; the reference accepts the record.
    ours: &'static str,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            why: "an object must be a map: the reference takes any JavaScript object, arrays included",
            properties: json!({"o": {"type": "ref", "ref": "#obj"}}),
            record: json!({"o": []}),
            ours: "Record/o must be an object",
        },
        Case {
            why: "a link is not an object",
            properties: json!({"o": {"type": "ref", "ref": "#obj"}}),
            record: json!({"o": {"$link": CID}}),
            ours: "Record/o must be an object",
        },
        Case {
            why: "`unknown` data must be a map, not an array",
            properties: json!({"u": {"type": "unknown"}}),
            record: json!({"u": [1, 2]}),
            ours: "Record/u must be an object",
        },
        Case {
            why: "`unknown` data must be a map, not a byte string",
            properties: json!({"u": {"type": "unknown"}}),
            record: json!({"u": {"$bytes": "AAE"}}),
            ours: "Record/u must be an object",
        },
        Case {
            why: "a blob's mimeType must match `accept` (the reference leaves it to blob upload)",
            properties: json!({"b": {"type": "blob", "accept": ["image/*"]}}),
            record: json!({"b": {"$type": "blob", "ref": {"$link": CID}, "mimeType": "text/plain", "size": 10}}),
            ours: "Record/b has mimeType text/plain, which is not one of image/*",
        },
        Case {
            why: "a blob's size must be within `maxSize`",
            properties: json!({"b": {"type": "blob", "maxSize": 1000}}),
            record: json!({"b": {"$type": "blob", "ref": {"$link": CID}, "mimeType": "image/png", "size": 1001}}),
            ours: "Record/b must not be larger than 1000 bytes",
        },
        Case {
            why: "a `$type` is an NSID, not a `lex:` URI",
            properties: json!({}),
            record: json!({"$type": "lex:com.example.divergence"}),
            ours: "Invalid $type: must be lex:com.example.divergence, got lex:com.example.divergence",
        },
    ]
}

#[test]
fn each_divergence_holds_on_both_sides() {
    let collection = "com.example.divergence";
    let mut input = String::new();
    let mut ours = Vec::new();
    for case in cases() {
        let doc = json!({
            "lexicon": 1, "id": collection,
            "defs": {
                "main": {"type": "record", "key": "any",
                         "record": {"type": "object", "properties": case.properties}},
                "obj": {"type": "object", "properties": {"x": {"type": "integer"}}}
            }
        });
        let mut lexicons = Lexicons::new();
        lexicons.insert(Document::parse(doc.clone()).unwrap());
        let mut record = case.record.clone();
        if record.get("$type").is_none() {
            record["$type"] = json!(collection);
        }
        let verdict = lexicons.validate_record(collection, &record);
        assert_eq!(
            verdict.map_err(|e| e.to_string()),
            Err(case.ours.to_owned()),
            "ours, for: {}",
            case.why
        );
        input.push_str(&json!({"docs": [doc]}).to_string());
        input.push('\n');
        input.push_str(&json!({"collection": collection, "record": record}).to_string());
        input.push('\n');
        ours.push(case);
    }
    let answers = common::reference_verdicts(&input);
    assert_eq!(answers.len(), ours.len());
    for (case, answer) in ours.iter().zip(answers) {
        assert_eq!(
            answer,
            json!({"valid": true}),
            "the reference no longer accepts this: {}",
            case.why
        );
    }
}
