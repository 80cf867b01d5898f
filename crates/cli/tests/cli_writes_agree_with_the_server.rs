//! The CLI's writes behave as the server's: `put` to a repository that does
//! not exist creates it (as the first createRecord does), and `rm` of an
//! absent record is the same no-op as deleteRecord (no commit, `{}`).

use crate::common;

use common::datarepo;
use serde_json::{Value, json};

const DID: &str = "did:web:agree.example";
const POST: &str = "app.bsky.feed.post";

fn log_len(store: &str) -> usize {
    let out = datarepo(&["--store", store, "--repo", DID, "log", "--json"], "");
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["commits"].as_array().unwrap().len()
}

#[test]
fn put_creates_the_repository_and_rm_of_an_absent_record_is_a_no_op() {
    let tmp = testkit::tempdir("cli-agree");
    let store = tmp.path().join("data");
    let store = store.to_str().unwrap();
    let out = datarepo(
        &["--store", store, "--repo", DID, "put", POST, "a"],
        r#"{"text": "first"}"#,
    );
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("created repository"));
    let out = datarepo(
        &["--store", store, "--repo", DID, "get", POST, "a", "--json"],
        "",
    );
    assert!(out.status.success(), "{out:?}");
    let put: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(put["uri"], json!(format!("at://{DID}/{POST}/a")), "{put}");
    let commits = log_len(store);

    let out = datarepo(
        &[
            "--store", store, "--repo", DID, "rm", POST, "absent", "--json",
        ],
        "",
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap(),
        json!({})
    );
    assert_eq!(log_len(store), commits, "no commit for a no-op");
    // With a swap, an absent record is an error, as deleteRecord's.
    let out = datarepo(
        &[
            "--store",
            store,
            "--repo",
            DID,
            "rm",
            POST,
            "absent",
            "--swap-record",
            "bafyreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
}
