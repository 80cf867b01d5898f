//! On S3-compatible storage, a partition moves from one live server to
//! another and back: a server started with `--partitions-owned 1` takes
//! partition 1 from the server writing every partition, which then stands
//! by for it (forwarding its writes) and keeps writing the others instead
//! of stopping; when the new writer is killed the first takes partition 1
//! back, and its commits continue the partition's events after the other
//! server's (the merged firehose holds every commit once, numbered 1, 2,
//! 3, …).

use crate::common::{
    self,
    ha::{LEASE, partition_role, wait_for},
    http_within,
};

use std::{collections::BTreeSet, time::Duration};

use serde_json::{Value, json};

const TOKEN: &str = "move-token";
const POST: &str = "app.bsky.feed.post";
const PARTITIONS: u32 = 4;

/// A repository of partition `p`.
fn repo_in(p: u32) -> String {
    let partitions = store::Partitions::new(PARTITIONS).unwrap();
    (0..)
        .map(|i| format!("did:web:m{i}.example"))
        .find(|did| partitions.of(did) == p)
        .unwrap()
}

fn create(port: u16, repo: &str, text: &str) -> (u16, Value) {
    let body = json!({"repo": repo, "collection": POST, "record": {"text": text}});
    let answer = http_within(
        port,
        "POST",
        "/xrpc/com.atproto.repo.createRecord",
        TOKEN,
        &body.to_string(),
        Duration::from_secs(30),
    )
    .expect("the server answers");
    let status = answer.status;
    (status, answer.json())
}

#[test]
fn a_partition_moves_to_a_live_server_and_back() {
    let Some(location) = testkit::s3_location("partition-moves") else {
        eprintln!("skipped: no S3-compatible test server (DATAREPO_TEST_S3)");
        return;
    };
    let tmp = testkit::tempdir("partition-moves");
    let init = common::datarepo(&["--store", &location, "init", "--partitions", "4"], "");
    assert!(init.status.success(), "{init:?}");
    let (a, b) = (common::free_port(), common::free_port());
    let mut args = vec!["--partitions-owned", "all"];
    args.extend(LEASE);
    let mut first = common::spawn_serve(&location, a, TOKEN, &args, &tmp.path().join("a.log"));
    assert!(common::wait_until_up(a));
    wait_for(
        || (0..4).all(|p| partition_role(a, p).0.as_deref() == Some("writer")),
        "the first server writes every partition",
    );
    let (moving, staying) = (repo_in(1), repo_in(0));
    let mut acked = Vec::new();
    for text in ["before-1", "before-2"] {
        let (status, v) = create(a, &moving, text);
        assert_eq!(status, 200, "{v}");
        acked.push((
            moving.clone(),
            v["commit"]["rev"].as_str().unwrap().to_owned(),
        ));
    }

    // A second server takes partition 1 from the live first one.
    let mut args = vec!["--partitions-owned", "1"];
    args.extend(LEASE);
    let mut second = common::spawn_serve(&location, b, TOKEN, &args, &tmp.path().join("b.log"));
    assert!(common::wait_until_up(b));
    let b_url = format!("http://127.0.0.1:{b}");
    wait_for(
        || partition_role(b, 1).0.as_deref() == Some("writer"),
        "the second server writes partition 1",
    );
    wait_for(
        || partition_role(a, 1) == (Some("standby".to_owned()), Some(b_url.clone())),
        "the first server stands by for partition 1, naming the second",
    );
    assert!(
        first.0.try_wait().unwrap().is_none(),
        "the first server stopped"
    );
    for p in [0, 2, 3] {
        assert_eq!(
            partition_role(a, p).0.as_deref(),
            Some("writer"),
            "partition {p}"
        );
    }
    // Writes to either partition through the first server: partition 1's
    // forwarded to the second.
    for (repo, text) in [
        (&moving, "moved-1"),
        (&staying, "stayed-1"),
        (&moving, "moved-2"),
    ] {
        let (status, v) = create(a, repo, text);
        assert_eq!(status, 200, "{text}: {v}");
        acked.push((
            repo.clone(),
            v["commit"]["rev"].as_str().unwrap().to_owned(),
        ));
    }

    // The second server dies: the first takes partition 1 back.
    second.0.kill().unwrap();
    second.0.wait().unwrap();
    wait_for(
        || partition_role(a, 1).0.as_deref() == Some("writer"),
        "the first server takes partition 1 back",
    );
    for text in ["back-1", "back-2"] {
        let (status, v) = create(a, &moving, text);
        assert_eq!(status, 200, "{text}: {v}");
        acked.push((
            moving.clone(),
            v["commit"]["rev"].as_str().unwrap().to_owned(),
        ));
    }

    // Every commit once in the merged firehose, numbered without a gap:
    // the first server's commits after it took the partition back
    // continue the partition's events after the second's.
    let log = tmp.path().join("follow.jsonl");
    let mut follower = common::spawn_follower(a, &log, &[]);
    let events = common::lines_once(
        &log,
        |events| {
            let seen: BTreeSet<(String, String)> = events.iter().map(common::commit_of).collect();
            acked.iter().all(|a| seen.contains(a))
        },
        "the merged firehose holds every acknowledged commit",
    );
    let _ = follower.0.kill();
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    let distinct: BTreeSet<(String, String)> = events.iter().map(common::commit_of).collect();
    assert_eq!(distinct.len(), events.len(), "a commit came twice");

    // The moved repository holds every record, in one unbroken history.
    let listed = http_within(
        a,
        "GET",
        &format!("/xrpc/com.atproto.repo.listRecords?repo={moving}&collection={POST}&limit=100"),
        "",
        "",
        Duration::from_secs(10),
    )
    .unwrap()
    .json();
    assert_eq!(listed["records"].as_array().unwrap().len(), 6);
    assert!(first.terminate(), "the first server did not stop cleanly");
    let check = common::datarepo(
        &[
            "--store",
            &location,
            "--repo",
            &moving,
            "check",
            "--history",
        ],
        "",
    );
    assert!(check.status.success(), "{check:?}");
}
