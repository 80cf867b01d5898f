//! `get` and `rm` take a record's AT URI in place of `COLLECTION RKEY`
//! (the URI names the repository too), or its path `COLLECTION/RKEY` (as
//! `log --record` takes it).

use crate::common;

use common::datarepo;
use serde_json::Value;

const DID: &str = "did:web:uris.example";
const POST: &str = "app.bsky.feed.post";

#[test]
fn get_and_rm_take_an_at_uri() {
    let tmp = testkit::tempdir("cli-at-uris");
    let store = tmp.path().join("data");
    let store = store.to_str().unwrap();
    let out = datarepo(
        &["--store", store, "--repo", DID, "put", POST, "a", "--json"],
        r#"{"text": "by uri"}"#,
    );
    assert!(out.status.success(), "{out:?}");
    let uri = serde_json::from_slice::<Value>(&out.stdout).unwrap()["uri"]
        .as_str()
        .unwrap()
        .to_owned();
    let by_name = datarepo(
        &["--store", store, "--repo", DID, "get", POST, "a", "--json"],
        "",
    );
    // No --repo needed: the URI names it.
    let by_uri = datarepo(&["--store", store, "get", &uri, "--json"], "");
    assert!(by_uri.status.success(), "{by_uri:?}");
    assert_eq!(by_uri.stdout, by_name.stdout);
    // A --repo that disagrees with the URI, and a key after a URI: errors.
    for args in [
        &["--repo", "did:web:other.example", "get", &uri][..],
        &["get", &uri, "a"],
        &["get", "at://did:web:uris.example/only-two"],
    ] {
        let mut all = vec!["--store", store];
        all.extend_from_slice(args);
        let out = datarepo(&all, "");
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
    }
    let out = datarepo(&["--store", store, "rm", &uri], "");
    assert!(out.status.success(), "{out:?}");
    let gone = datarepo(&["--store", store, "get", &uri], "");
    assert_eq!(gone.status.code(), Some(1), "{gone:?}");
}

#[test]
fn get_and_rm_take_a_collection_slash_rkey() {
    let tmp = testkit::tempdir("cli-record-paths");
    let store = tmp.path().join("data");
    let store = store.to_str().unwrap();
    let at = |args: &[&str], stdin: &str| {
        let mut all = vec!["--store", store, "--repo", DID];
        all.extend_from_slice(args);
        datarepo(&all, stdin)
    };
    let path = format!("{POST}/b");
    assert!(
        at(&["put", POST, "b"], r#"{"text": "by path"}"#)
            .status
            .success()
    );
    let by_name = at(&["get", POST, "b", "--json"], "");
    let by_path = at(&["get", &path, "--json"], "");
    assert!(by_path.status.success(), "{by_path:?}");
    assert_eq!(by_path.stdout, by_name.stdout);
    // A key after a path is refused, naming what was given; so is a
    // collection without a key.
    let both = at(&["get", &path, "b"], "");
    assert_eq!(both.status.code(), Some(1), "{both:?}");
    assert!(
        String::from_utf8_lossy(&both.stderr).contains(&path),
        "{both:?}"
    );
    let bare = at(&["get", POST], "");
    assert_eq!(bare.status.code(), Some(1), "{bare:?}");
    assert!(
        String::from_utf8_lossy(&bare.stderr).contains("COLLECTION/RKEY"),
        "{bare:?}"
    );
    assert!(at(&["rm", &path], "").status.success());
    let gone = at(&["get", POST, "b"], "");
    assert_eq!(gone.status.code(), Some(1), "{gone:?}");
}
