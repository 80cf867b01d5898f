//! `gc --dry-run` reports what would go and changes nothing; `gc --repo R
//! --keep-last N` shortens only R's history.

use crate::common;

use common::datarepo;
use serde_json::Value;

const A: &str = "did:web:gc-a.example";
const B: &str = "did:web:gc-b.example";
const POST: &str = "app.bsky.feed.post";

fn json(args: &[&str]) -> Value {
    let out = datarepo(args, "");
    assert!(out.status.success(), "{args:?}: {out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn commits(store: &str, repo: &str) -> usize {
    json(&["--store", store, "--repo", repo, "log", "--json"])["commits"]
        .as_array()
        .unwrap()
        .len()
}

#[test]
fn dry_runs_change_nothing_and_repo_limits_retention() {
    let tmp = testkit::tempdir("cli-gc-dry-run");
    let store = tmp.path().join("data");
    let store = store.to_str().unwrap();
    for repo in [A, B] {
        for i in 0..3 {
            let out = datarepo(
                &["--store", store, "--repo", repo, "put", POST, "same"],
                &format!(r#"{{"version": {i}}}"#),
            );
            assert!(out.status.success(), "{out:?}");
        }
    }
    let (a, b) = (commits(store, A), commits(store, B));
    assert_eq!((a, b), (4, 4), "init-by-put plus three writes each");

    let dry = json(&[
        "--store",
        store,
        "gc",
        "--keep-last",
        "1",
        "--dry-run",
        "--json",
    ]);
    assert_eq!(dry["dryRun"], true);
    assert_eq!(dry["commitsDropped"], 6, "{dry}");
    assert!(dry["deleted"].as_u64().unwrap() > 0, "{dry}");
    assert_eq!((commits(store, A), commits(store, B)), (a, b));
    // Nothing was deleted: a real collection finds the same.
    let real = json(&[
        "--store",
        store,
        "--repo",
        A,
        "gc",
        "--keep-last",
        "1",
        "--json",
    ]);
    assert_eq!(real["commitsDropped"], 3, "{real}");
    assert!(real["deleted"].as_u64().unwrap() > 0, "{real}");
    assert_eq!((commits(store, A), commits(store, B)), (1, b));
    let check = datarepo(&["--store", store, "check", "--history"], "");
    assert!(check.status.success(), "{check:?}");
}
