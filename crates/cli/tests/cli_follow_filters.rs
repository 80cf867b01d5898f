//! `follow --repo` prints only that repository's commits and `--collection`
//! only the commits (and their operations) touching that collection; the
//! expected lines are derived from the writes made, and a later commit
//! shows that nothing matching was skipped before it.

use crate::common;

use common::{datarepo, json_lines, start_server};
use serde_json::{Value, json};

const TOKEN: &str = "follow-token";

fn apply(port: u16, repo: &str, writes: Value) {
    let body = json!({"repo": repo, "writes": writes}).to_string();
    let (status, answer) = common::http(
        port,
        "POST",
        "/xrpc/com.atproto.repo.applyWrites",
        TOKEN,
        &body,
    )
    .unwrap();
    assert_eq!(status, 200, "{answer}");
}

fn create(collection: &str, rkey: &str) -> Value {
    json!({"$type": "com.atproto.repo.applyWrites#create", "collection": collection,
           "rkey": rkey, "value": {"text": rkey}})
}

#[test]
fn follow_filters_by_repository_and_collection() {
    let tmp = testkit::tempdir("cli-follow-filters");
    let store = tmp.path().join("data");
    let (_server, port) = start_server(store.to_str().unwrap(), TOKEN);
    // (repo, writes): a's posts, b's posts, a's likes, a's mixed commit.
    let commits = [
        ("did:web:a", vec![create("app.x.post", "p1")]),
        ("did:web:b", vec![create("app.x.post", "p1")]),
        ("did:web:a", vec![create("app.x.like", "l1")]),
        (
            "did:web:a",
            vec![create("app.x.like", "l2"), create("app.x.post", "p2")],
        ),
        ("did:web:b", vec![create("app.x.like", "l1")]),
        ("did:web:a", vec![create("app.x.post", "p3")]),
    ];
    for (repo, writes) in &commits {
        apply(port, repo, json!(writes));
    }
    // Every commit the server made: a repository's first write creates it
    // with a commit of its own, which changes no record.
    let mut made: Vec<(&str, Vec<Value>)> = Vec::new();
    for (repo, writes) in &commits {
        if !made.iter().any(|(r, _)| r == repo) {
            made.push((repo, Vec::new()));
        }
        made.push((repo, writes.clone()));
    }
    // What each filter must print: (repo, paths) per commit, from the writes.
    let expected = |repo: Option<&str>, collection: Option<&str>| -> Vec<(String, Vec<String>)> {
        made.iter()
            .filter(|(r, _)| repo.is_none_or(|want| want == *r))
            .filter_map(|(r, writes)| {
                let paths: Vec<String> = writes
                    .iter()
                    .filter(|w| collection.is_none_or(|c| w["collection"] == c))
                    .map(|w| {
                        format!(
                            "{}/{}",
                            w["collection"].as_str().unwrap(),
                            w["rkey"].as_str().unwrap()
                        )
                    })
                    .collect();
                (collection.is_none() || !paths.is_empty()).then(|| ((*r).to_owned(), paths))
            })
            .collect()
    };
    let follow = |extra: &[&str], limit: usize| -> Vec<(String, Vec<String>)> {
        let url = format!("http://127.0.0.1:{port}");
        let limit = limit.to_string();
        let mut args = vec!["follow", &url, "--cursor", "0", "--limit", &limit, "--json"];
        args.extend_from_slice(extra);
        let out = datarepo(&args, "");
        assert!(out.status.success(), "{out:?}");
        json_lines(&out)
            .iter()
            .map(|e| {
                let paths = e["ops"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|o| o["path"].as_str().unwrap().to_owned())
                    .collect();
                (e["repo"].as_str().unwrap().to_owned(), paths)
            })
            .collect()
    };
    for (repo, collection) in [
        (Some("did:web:a"), None),
        (Some("did:web:b"), None),
        (None, Some("app.x.post")),
        (Some("did:web:a"), Some("app.x.like")),
    ] {
        let want = expected(repo, collection);
        let mut extra = Vec::new();
        if let Some(r) = repo {
            extra.extend(["--repo", r]);
        }
        if let Some(c) = collection {
            extra.extend(["--collection", c]);
        }
        assert_eq!(follow(&extra, want.len()), want, "{repo:?} {collection:?}");
    }
}
