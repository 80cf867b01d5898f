//! `datarepo check`: every repository (or the one given) read back; exit 0
//! when intact, 1 with the problems listed when something is damaged.

use crate::common;

use common::datarepo;
use serde_json::Value;
use store::{Kv, SlateKv, WriteOp};

const GOOD: &str = "did:web:good.example";
const BAD: &str = "did:web:bad.example";
const POST: &str = "app.bsky.feed.post";

#[test]
fn check_reports_damage_and_exits_non_zero() {
    let tmp = testkit::tempdir("check");
    let store = tmp.path().to_str().unwrap();
    for repo in [GOOD, BAD] {
        let out = datarepo(&["--store", store, "--repo", repo, "init"], "");
        assert!(out.status.success(), "{out:?}");
        for rkey in ["a", "b"] {
            let out = datarepo(
                &["--store", store, "--repo", repo, "put", POST, rkey],
                r#"{"text": "hello"}"#,
            );
            assert!(out.status.success(), "{out:?}");
        }
    }

    let out = datarepo(&["--store", store, "check"], "");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("{GOOD}: intact (2 records")),
        "{text}"
    );
    assert!(
        text.contains(&format!("{BAD}: intact (2 records")),
        "{text}"
    );

    // Damage one repository behind datarepo's back: drop a record's index
    // row, so listings would no longer show a record the tree holds.
    common::rt().block_on(async {
        let kv = SlateKv::open_local(tmp.path()).await.unwrap();
        let key = keycodec::records::record_index_key(BAD, POST, "b");
        kv.write(vec![WriteOp::Delete(key)]).await.unwrap();
        kv.close().await.unwrap();
    });

    let out = datarepo(&["--store", store, "check"], "");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("{GOOD}: intact")), "{text}");
    assert!(text.contains(&format!("{BAD}: 1 problem(s)")), "{text}");
    assert!(
        text.contains(&format!("the tree holds {POST}/b (bafyrei"))
            && text.contains("which the record index does not list"),
        "{text}"
    );

    let out = datarepo(&["--store", store, "--json", "check"], "");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["intact"], false);
    let repos = report["repos"].as_array().unwrap();
    let bad = repos.iter().find(|r| r["repo"] == BAD).unwrap();
    assert_eq!(bad["intact"], false);
    assert_eq!(bad["problemCount"], 1);
    assert_eq!(bad["records"], 2);
    let good = repos.iter().find(|r| r["repo"] == GOOD).unwrap();
    assert_eq!(good["intact"], true);
    assert_eq!(good["problems"], serde_json::json!([]));

    // Only the repository given.
    let out = datarepo(&["--store", store, "--repo", GOOD, "check"], "");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let out = datarepo(
        &["--store", store, "--repo", "did:web:none.example", "check"],
        "",
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("did:web:none.example"));
}

#[test]
fn check_history_reads_what_only_older_commits_reach() {
    let tmp = testkit::tempdir("check-history");
    let store = tmp.path().to_str().unwrap();
    let put = |text: &str| {
        let out = datarepo(
            &["--store", store, "--repo", GOOD, "--json", "put", POST, "a"],
            &format!(r#"{{"text": "{text}"}}"#),
        );
        assert!(out.status.success(), "{out:?}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["cid"].as_str().unwrap().parse::<cid::Cid>().unwrap()
    };
    assert!(
        datarepo(&["--store", store, "--repo", GOOD, "init"], "")
            .status
            .success()
    );
    let first = put("first version");
    put("second version");

    // Damage the first version, which only the older commit reaches.
    common::rt().block_on(async {
        let kv = SlateKv::open_local(tmp.path()).await.unwrap();
        let key = keycodec::records::block_key(&first.to_bytes());
        kv.write(vec![WriteOp::Put(key, b"other bytes".to_vec().into())])
            .await
            .unwrap();
        kv.close().await.unwrap();
    });

    let out = datarepo(&["--store", store, "check"], "");
    assert_eq!(out.status.code(), Some(0), "the head is intact: {out:?}");

    let out = datarepo(&["--store", store, "check", "--history"], "");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("record {POST}/a as of commit")) && text.contains("corrupt"),
        "{text}"
    );
    assert!(text.contains("older commits: "), "{text}");

    let out = datarepo(&["--store", store, "--json", "check", "--history"], "");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let repo = &report["repos"][0];
    assert_eq!(repo["problemCount"], 1);
    assert_eq!(repo["olderRecords"], 1);
    assert!(repo["olderShards"].as_u64().unwrap() >= 1, "{repo}");
}
