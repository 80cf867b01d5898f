//! What a stream consumer or a query's caller sends, as any strings: a
//! `where` expression evaluated on a record (`RecordCondition`), a
//! `fields` list selecting from it (`RecordFields`), a histogram interval
//! and bound of every index kind, a groups cursor, and text as a text
//! index and a `matches` query cut it into words. Never a panic; a
//! selection is an object; words are never empty and are their own words.
#![no_main]

use index::{IndexKind, Interval, RecordCondition, RecordFields, groups_page, parse_bound};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut parts = text.splitn(3, '\n');
    let (expr, fields, record) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    let record: serde_json::Value = serde_json::from_str(record).unwrap_or_else(|_| {
        serde_json::json!({"a": [1, {"b": "x"}, [true]], "t": "2024-01-01T00:00:00Z",
                           "n": -9223372036854775808_i64, "o": {"b": null}})
    });
    if let Ok(condition) = RecordCondition::parse(expr) {
        let _ = condition.matches(&record);
    }
    if let Ok(fields) = RecordFields::parse(fields) {
        let selected = fields.select(&record);
        assert!(selected.is_object());
    }
    for kind in [
        IndexKind::Integer,
        IndexKind::Datetime,
        IndexKind::Keyword,
        IndexKind::Text,
    ] {
        let _ = Interval::parse(kind, expr);
        let _ = parse_bound(kind, "--from", fields);
    }
    let _ = groups_page(&[], Some(expr), 10);
    for word in index::words(text) {
        assert!(!word.is_empty());
        assert_eq!(
            index::words(&word),
            std::slice::from_ref(&word),
            "a word is one word"
        );
    }
    let _ = index::query_words(expr);
});
