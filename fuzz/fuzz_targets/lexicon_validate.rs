//! Any bytes as a Lexicon document and a record: `Document::parse` either
//! rejects the document or yields one that validates any record without
//! panicking; records are also validated against a fixed schema that
//! reaches every type (refs, unions, blobs, formats, graphemes).
#![no_main]

use std::sync::OnceLock;

use lexicon::{Document, Lexicons};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

fn fixed() -> &'static Lexicons {
    static FIXED: OnceLock<Lexicons> = OnceLock::new();
    FIXED.get_or_init(|| {
        let mut l = Lexicons::new();
        let formats = ["at-identifier", "at-uri", "cid", "datetime", "did", "handle",
            "language", "nsid", "record-key", "tid", "uri"];
        let mut props = serde_json::Map::new();
        for f in formats {
            props.insert(f.to_owned(), json!({"type": "string", "format": f}));
        }
        props.insert("text".into(), json!({"type": "string", "minGraphemes": 1, "maxGraphemes": 5, "maxLength": 40}));
        props.insert("n".into(), json!({"type": "integer", "minimum": -3, "maximum": 9, "enum": [1, 2, 3]}));
        props.insert("b".into(), json!({"type": "bytes", "maxLength": 4}));
        props.insert("l".into(), json!({"type": "cid-link"}));
        props.insert("blob".into(), json!({"type": "blob", "accept": ["image/*"], "maxSize": 100}));
        props.insert("u".into(), json!({"type": "unknown"}));
        props.insert("list".into(), json!({"type": "array", "maxLength": 3, "items": {"type": "union", "refs": ["#a", "com.example.other#b"]}}));
        props.insert("r".into(), json!({"type": "ref", "ref": "#a"}));
        props.insert("missing".into(), json!({"type": "ref", "ref": "com.example.nothing"}));
        let doc = json!({"lexicon": 1, "id": "com.example.fuzz", "defs": {
            "main": {"type": "record", "key": "any", "record": {"type": "object",
                "required": ["text"], "nullable": ["n"], "properties": props}},
            "a": {"type": "object", "properties": {"x": {"type": "boolean", "const": true}, "self": {"type": "ref", "ref": "#a"}}}}});
        l.insert(Document::parse(doc).unwrap());
        l.insert(Document::parse(json!({"lexicon": 1, "id": "com.example.other", "defs": {
            "b": {"type": "object", "required": ["y"], "properties": {"y": {"type": "string", "enum": ["p", "q"]}}}}})).unwrap());
        l
    })
}

fuzz_target!(|data: &[u8]| {
    let split = data.iter().position(|&b| b == 0xff).unwrap_or(data.len());
    let (doc, record) = (&data[..split], data.get(split + 1..).unwrap_or_default());
    let record: Option<Value> = serde_json::from_slice(record).ok();
    if let Some(record) = &record {
        let _ = fixed().validate_record("com.example.fuzz", record);
        let _ = fixed().validate_write("com.example.fuzz", record);
    }
    let Ok(doc) = serde_json::from_slice::<Value>(doc) else {
        return;
    };
    let Ok(doc) = Document::parse(doc) else {
        return;
    };
    let id = doc.id().to_owned();
    let mut lexicons = fixed().clone();
    lexicons.insert(doc);
    let _ = lexicons.missing_refs();
    if let Some(record) = &record {
        let _ = lexicons.validate_record(&id, record);
        let _ = lexicons.validate_write(&id, record);
        let _ = lexicons.validate_record("com.example.fuzz", record);
    }
});
