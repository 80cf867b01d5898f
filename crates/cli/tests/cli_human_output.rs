//! What people read: `ls` and `query` show something of each record, `diff`
//! names the fields an update changed (and `--json` lists them), counts
//! agree in number with their nouns, and kinds take the right article.

use crate::common;

use common::{datarepo, json_lines};
use serde_json::json;

const DID: &str = "did:web:human.example";
const POST: &str = "app.test.post";

#[test]
fn people_read_records_fields_and_counts() {
    let tmp = testkit::tempdir("cli-human-output");
    let store = tmp.path().join("data");
    let store = store.to_str().unwrap();
    let run = |args: &[&str], stdin: &str| {
        let mut all = vec!["--store", store, "--repo", DID];
        all.extend_from_slice(args);
        let out = datarepo(&all, stdin);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            out,
        )
    };
    assert_eq!(run(&["init"], "").0, Some(0));
    let first = json!({"text": "hello world", "likes": 3, "tags": ["a", "b"]});
    assert_eq!(run(&["put", POST, "one"], &first.to_string()).0, Some(0));
    let before = json_lines(&run(&["log", "--json"], "").3)[0]["commits"][0]["rev"]
        .as_str()
        .unwrap()
        .to_owned();

    // ls: the record's fields, not only its key and CID.
    let (_, ls, _, _) = run(&["ls", POST], "");
    assert!(ls.starts_with("one  "), "{ls}");
    assert!(
        ls.contains(r#"text="hello world""#) && ls.contains("likes=3"),
        "{ls}"
    );
    assert!(ls.contains(r#"tags=["a","b"]"#), "{ls}");

    // One record: singular.
    let (_, collections, _, _) = run(&["collection", "list"], "");
    assert!(
        collections.contains("1 record") && !collections.contains("1 records"),
        "{collections}"
    );

    // An update that changes `text` and adds `langs`; `likes` and `tags` stay.
    let second = json!({"text": "hello again", "likes": 3, "tags": ["a", "b"], "langs": ["en"]});
    assert_eq!(run(&["put", POST, "one"], &second.to_string()).0, Some(0));
    let after = json_lines(&run(&["log", "--json"], "").3)[0]["commits"][0]["rev"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, diff, _, _) = run(&["diff", &before, &after], "");
    assert!(
        diff.contains("~ at://did:web:human.example/app.test.post/one  (langs, text)"),
        "{diff}"
    );
    let diff = json_lines(&run(&["diff", &before, &after, "--json"], "").3);
    assert_eq!(diff[0]["updated"][0]["fields"], json!(["langs", "text"]));

    // "an integer index".
    assert_eq!(
        run(&["index", "add", POST, "likes", "--kind", "integer"], "").0,
        Some(0)
    );
    let (code, _, err, _) = run(&["query", POST, "--where", r#"likes = "x""#], "");
    assert_eq!(code, Some(1));
    assert!(err.contains("has an integer index"), "{err}");
    let (_, indexed, _, _) = run(&["index", "add", POST, "text", "--kind", "keyword"], "");
    assert!(
        indexed.contains(": 1 record") && !indexed.contains("1 records"),
        "{indexed}"
    );
}
