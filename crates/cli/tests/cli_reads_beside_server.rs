//! Reading commands open the store read-only: they run beside a
//! `datarepo serve` on the same store, see its durable commits, and leave
//! it able to write (a second writer would fence it). On a store nothing
//! has been written to they say so, and create nothing.

use crate::common;

const TOKEN: &str = "reads-token";
const DID: &str = "did:web:example.com";
const POST: &str = "app.bsky.feed.post";

/// Creates a record through the server; its rkey.
fn create(port: u16, text: &str) -> String {
    let body = serde_json::json!({"repo": DID, "collection": POST, "record": {"text": text}});
    common::create_record(port, TOKEN, &body)
}

#[test]
fn reading_commands_leave_a_running_server_writing() {
    let tmp = testkit::tempdir("reads-beside");
    let store = tmp.path().join("data");
    let store = store.to_str().unwrap();
    let (mut server, port) = common::start_server(store, TOKEN);

    let first = create(port, "first");
    assert_eq!(
        common::listed_rkeys(store, DID, POST),
        std::slice::from_ref(&first)
    );
    let car = tmp.path().join("repo.car");
    for args in [
        vec!["get", POST, first.as_str()],
        vec!["stats"],
        vec!["log"],
        vec!["collection", "list"],
        vec!["export", car.to_str().unwrap()],
    ] {
        let mut all = vec!["--store", store, "--repo", DID];
        all.extend(args.iter().copied());
        let out = common::datarepo(&all, "");
        assert!(out.status.success(), "{args:?}: {out:?}");
    }

    // The server was not fenced: it still writes, and readers see it.
    let second = create(port, "second");
    let mut expected = vec![first, second];
    expected.sort();
    assert_eq!(common::listed_rkeys(store, DID, POST), expected);
    assert!(server.terminate(), "the server did not stop cleanly");
}

#[test]
fn reading_an_empty_location_says_so_and_creates_nothing() {
    let tmp = testkit::tempdir("reads-empty");
    let store = tmp.path().join("nothing-here");
    let store = store.to_str().unwrap();
    let out = common::datarepo(&["--store", store, "--repo", DID, "ls", POST], "");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no store here"), "{stderr}");
    assert!(!tmp.path().join("nothing-here").exists());
}
