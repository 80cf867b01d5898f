//! `datarepo lexicon add|list|show|rm|validate` and validated writes:
//! Lexicons that refer to each other, existing records reported when a
//! Lexicon arrives, `put --validate` / `--no-validate`, and `check`'s
//! warnings.

use crate::common;

use common::datarepo;
use serde_json::{Value, json};

const NOTE: &str = "com.example.note";

/// `datarepo --store STORE --repo did:web:a.example ARGS…`.
fn in_store(store: &str, args: &[&str], stdin: &str) -> std::process::Output {
    let mut all = vec!["--store", store, "--repo", "did:web:a.example"];
    all.extend_from_slice(args);
    datarepo(&all, stdin)
}

/// [`in_store`] with `--json`: exit status, first stdout line, stderr.
fn run(store: &str, args: &[&str], stdin: &str) -> (i32, Value, String) {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = in_store(store, &all, stdin);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let value = stdout
        .lines()
        .next()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or(Value::Null);
    (
        out.status.code().unwrap_or(-1),
        value,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn lexicons_validate_what_is_written() {
    let tmp = testkit::tempdir("cli-lexicons");
    let store = tmp.path().join("data");
    let store = store.to_str().unwrap();
    let note = tmp.path().join("note.json");
    let defs_dir = tmp.path().join("defs");
    std::fs::create_dir(&defs_dir).unwrap();
    let defs = defs_dir.join("defs.json");
    std::fs::write(
        &note,
        json!({"lexicon": 1, "id": NOTE, "defs": {"main": {"type": "record", "key": "tid",
            "record": {"type": "object", "required": ["text"], "properties": {
                "text": {"type": "string", "maxGraphemes": 5},
                "link": {"type": "ref", "ref": "com.example.defs#link"}}}}}})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        &defs,
        json!({"lexicon": 1, "id": "com.example.defs", "defs": {
            "link": {"type": "object", "required": ["uri"], "properties": {
                "uri": {"type": "string", "format": "uri"}}}}})
        .to_string(),
    )
    .unwrap();
    let (note, defs) = (note.to_str().unwrap(), defs.to_str().unwrap());

    let (code, _, err) = run(store, &["init"], "");
    assert_eq!(code, 0, "{err}");
    // Written before any Lexicon: stored, unvalidated.
    let (code, put, _) = run(store, &["put", NOTE], r#"{"text": "much too long"}"#);
    assert_eq!((code, &put["validationStatus"]), (0, &json!("unknown")));

    // The record Lexicon alone: its missing reference is named, and the
    // existing record that breaks it is reported, not removed.
    let (code, added, err) = run(store, &["lexicon", "add", note], "");
    assert_eq!(code, 0, "{err}");
    assert_eq!(added["collection"], NOTE);
    assert_eq!(added["key"], "tid");
    assert_eq!(added["missingRefs"], json!(["lex:com.example.defs#link"]));
    let entry = &added["lexicons"][0];
    assert_eq!(
        (entry["checked"].as_u64(), entry["invalid"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(
        entry["failures"][0]["error"],
        "Record/text must not be longer than 5 graphemes"
    );
    // A record reaching the missing definition fails, naming it.
    let (code, _, err) = run(
        store,
        &["put", NOTE],
        r#"{"text": "ok", "link": {"uri": "https://a.example"}}"#,
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("Lexicon not found: lex:com.example.defs#link"),
        "{err}"
    );

    // Both documents at once (the record one replaced), from a directory.
    let (code, added, err) = run(store, &["lexicon", "add", note, defs], "");
    assert_eq!(code, 0, "{err}");
    assert_eq!(added["missingRefs"], json!([]));
    assert_eq!(added["lexicons"][0]["replaced"], true);
    let (code, put, err) = run(
        store,
        &["put", NOTE],
        r#"{"text": "ok", "link": {"uri": "https://a.example"}}"#,
    );
    assert_eq!(
        (code, &put["validationStatus"]),
        (0, &json!("valid")),
        "{err}"
    );
    let (code, _, err) = run(
        store,
        &["put", NOTE],
        r#"{"text": "ok", "link": {"uri": "no scheme"}}"#,
    );
    assert_eq!(code, 1);
    assert!(err.contains("Record/link/uri must be a uri"), "{err}");
    let (code, put, _) = run(
        store,
        &["put", NOTE, "--no-validate"],
        r#"{"text": "ok", "link": {"uri": "no scheme"}}"#,
    );
    assert_eq!((code, &put["validationStatus"]), (0, &json!("unknown")));
    // --validate on a collection without a Lexicon fails.
    let (code, _, err) = run(
        store,
        &["put", "com.example.other", "--validate"],
        r#"{"a": 1}"#,
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("Lexicon not found: lex:com.example.other"),
        "{err}"
    );
    // An invalid document is refused whole, naming the file and the field.
    let bad = tmp.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"{"lexicon": 1, "id": "com.example.bad", "defs": {"main": {"type": "strnig"}}}"#,
    )
    .unwrap();
    let (code, _, err) = run(store, &["lexicon", "add", defs, bad.to_str().unwrap()], "");
    assert_eq!(code, 1);
    assert!(
        err.contains("com.example.bad") && err.contains("defs.main.type"),
        "{err}"
    );

    // All or none: a record Lexicon whose key type the collection's records
    // do not fit fails the add, and the other document is not stored.
    let (code, _, _) = run(store, &["put", "com.example.keyed"], r#"{"a": 1}"#);
    assert_eq!(code, 0);
    let keyed = tmp.path().join("keyed.json");
    let more = tmp.path().join("more.json");
    std::fs::write(
        &keyed,
        json!({"lexicon": 1, "id": "com.example.keyed", "defs": {"main": {"type": "record",
            "key": "literal:self", "record": {"type": "object", "properties": {}}}}})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        &more,
        json!({"lexicon": 1, "id": "com.example.more", "defs": {"x": {"type": "token"}}})
            .to_string(),
    )
    .unwrap();
    let (code, _, err) = run(
        store,
        &[
            "lexicon",
            "add",
            more.to_str().unwrap(),
            keyed.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(code, 1);
    assert!(err.contains("does not fit"), "{err}");
    let (code, _, _) = run(store, &["lexicon", "show", "com.example.more"], "");
    assert_eq!(code, 1, "nothing was added");

    let (_, list, _) = run(store, &["lexicon", "list"], "");
    assert_eq!(
        list,
        json!({"lexicons": [
            {"nsid": "com.example.defs", "type": null, "collection": false},
            {"nsid": NOTE, "type": "record", "collection": true}]})
    );
    let (_, shown, _) = run(store, &["lexicon", "show", "com.example.defs"], "");
    assert_eq!(shown["id"], "com.example.defs");

    // `lexicon validate`: the repository's Lexicons, or files; one answer
    // per line, exit 0 whatever the verdicts.
    let lines = [
        json!({"collection": NOTE, "record": {"text": "fine"}}).to_string(),
        json!({"collection": NOTE, "record": {"text": "toolongtext"}}).to_string(),
        json!({"collection": "com.example.nope", "record": {}}).to_string(),
    ]
    .join("\n");
    let out = in_store(store, &["lexicon", "validate", "--json-lines"], &lines);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        common::json_lines(&out),
        vec![
            json!({"valid": true}),
            json!({"valid": false, "error": "Record/text must not be longer than 5 graphemes"}),
            json!({"valid": false, "error": "Lexicon not found: lex:com.example.nope"}),
        ]
    );
    // Lines that are records naming their collection by `$type`, as one
    // record on standard input is: the same verdicts as that mode's.
    let typed = [
        json!({"$type": NOTE, "text": "fine"}),
        json!({"$type": NOTE, "text": "toolongtext"}),
    ];
    let lines_typed = typed
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    let out = in_store(
        store,
        &["lexicon", "validate", "--json-lines"],
        &lines_typed,
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let single: Vec<Value> = typed
        .iter()
        .map(|r| {
            common::json_lines(&in_store(store, &["lexicon", "validate"], &r.to_string()))[0]
                .clone()
        })
        .collect();
    assert_eq!(common::json_lines(&out), single);
    assert_eq!(single[1]["valid"], false);
    let out = datarepo(
        &[
            "lexicon",
            "validate",
            "--json-lines",
            "--lexicons",
            note,
            defs_dir.to_str().unwrap(),
        ],
        &format!("{lines}\nnot json\n"),
    );
    assert_eq!(out.status.code(), Some(2), "an unreadable line");
    let answers = common::json_lines(&out);
    assert_eq!(answers.len(), 4);
    assert_eq!(answers[0], json!({"valid": true}));
    assert!(
        answers[3]["error"]
            .as_str()
            .unwrap()
            .starts_with("line 4: ")
    );

    // `put --batch` validates each write; a bad one fails its commit.
    let batch = [
        json!({"$type": "com.atproto.repo.applyWrites#create", "collection": NOTE, "value": {"text": "ok"}}),
        json!({"$type": "com.atproto.repo.applyWrites#create", "collection": NOTE, "value": {"text": "toolongtext"}}),
    ]
    .map(|w| w.to_string())
    .join("\n");
    let out = in_store(store, &["put", "--batch"], &batch);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Record/text must not be longer than 5 graphemes"),
        "{err}"
    );

    // check: records that do not validate are warnings, not damage.
    let (code, checked, _) = run(store, &["check"], "");
    assert_eq!(code, 0);
    let report = &checked["repos"][0];
    assert_eq!(report["intact"], true);
    assert_eq!(report["invalidRecords"], 2);
    assert!(
        report["warnings"][0]
            .as_str()
            .unwrap()
            .contains("does not validate against its Lexicon"),
        "{report}"
    );

    // Removing the record Lexicon keeps the collection and its key type.
    let (code, _, _) = run(store, &["lexicon", "rm", NOTE], "");
    assert_eq!(code, 0);
    let (code, put, _) = run(store, &["put", NOTE], r#"{"text": "no longer validated"}"#);
    assert_eq!((code, &put["validationStatus"]), (0, &json!("unknown")));
    let (code, _, err) = run(store, &["put", NOTE, "not-a-tid"], r#"{"text": "x"}"#);
    assert_eq!(code, 1, "still keyed by TIDs: {err}");
    let (code, _, err) = run(store, &["lexicon", "rm", NOTE], "");
    assert_eq!(code, 1);
    assert!(err.contains("no Lexicon com.example.note"), "{err}");
}
