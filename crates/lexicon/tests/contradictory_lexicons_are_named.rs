//! `Document::contradictions` names what no record could satisfy (no
//! definitions, negative lengths and sizes, a lower bound above its upper
//! bound, a default outside its bounds), field by field; none of the real
//! Lexicons `@atproto/api` is built from has any.

use lexicon::Document;
use serde_json::{Value, json};

fn contradictions(doc: Value) -> Vec<String> {
    Document::parse(doc)
        .expect("the reference's schema accepts it")
        .contradictions()
}

#[test]
fn nonsense_is_named_by_its_field() {
    assert_eq!(
        contradictions(json!({"lexicon": 1, "id": "app.test.empty", "defs": {}})),
        ["defs is empty: the document defines nothing"]
    );
    let doc = json!({
        "lexicon": 1,
        "id": "app.test.nonsense",
        "defs": {
            "main": {
                "type": "record",
                "key": "tid",
                "record": {
                    "type": "object",
                    "properties": {
                        "text": {"type": "string", "maxLength": -1},
                        "name": {"type": "string", "minGraphemes": 5, "maxGraphemes": 2},
                        "n": {"type": "integer", "minimum": 10, "maximum": 1},
                        "k": {"type": "integer", "minimum": 0, "maximum": 9, "default": 12},
                        "tags": {"type": "array", "items": {"type": "string", "minLength": -3},
                                 "maxLength": 2, "minLength": 4},
                        "pic": {"type": "blob", "maxSize": -5},
                        "fine": {"type": "string", "minLength": 1, "maxLength": 10}
                    }
                }
            }
        }
    });
    let mut got = contradictions(doc);
    got.sort();
    let at = "defs.main.record.properties";
    let mut want = vec![
        format!("{at}.text.maxLength is -1, below 0"),
        format!("{at}.name.minGraphemes is 5, above maxGraphemes 2: no value fits"),
        format!("{at}.n.minimum is 10, above maximum 1: no value fits"),
        format!("{at}.k.default is 12, outside minimum and maximum"),
        format!("{at}.tags.minLength is 4, above maxLength 2: no value fits"),
        format!("{at}.tags.items.minLength is -3, below 0"),
        format!("{at}.pic.maxSize is -5, below 0"),
    ];
    want.sort();
    assert_eq!(got, want);
}

#[test]
fn the_real_lexicons_have_none() {
    let docs = testkit::run_node("atproto-lexicons.mjs", "");
    assert!(docs.len() > 300, "only {} documents", docs.len());
    for line in docs {
        let doc: Value = serde_json::from_str(&line).unwrap();
        let id = doc["id"].as_str().unwrap_or("?").to_owned();
        assert_eq!(contradictions(doc), Vec::<String>::new(), "{id}");
    }
}
