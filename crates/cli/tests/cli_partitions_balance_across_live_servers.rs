//! With `--partitions-owned auto` (the default on S3-compatible storage),
//! servers share a partitioned store's partitions fairly: the first server
//! takes all 4 partitions; when a second one starts, the first lets two
//! leases lapse and the second takes them, each then writing 2; writes
//! through either land, before and after.

use crate::common::{
    self,
    ha::{LEASE, partitions_written, wait_for},
    http_within,
};

use std::time::Duration;

use serde_json::json;

const TOKEN: &str = "balance-token";

fn write_everywhere(port: u16, round: &str) {
    for i in 0..8 {
        let body = json!({"repo": format!("did:web:b{i}.example"), "collection": "app.bsky.feed.post",
                          "record": {"text": round}});
        let answer = http_within(
            port,
            "POST",
            "/xrpc/com.atproto.repo.createRecord",
            TOKEN,
            &body.to_string(),
            Duration::from_secs(30),
        )
        .expect("the server answers");
        assert_eq!(answer.status, 200, "{round} b{i}: {}", answer.body);
    }
}

#[test]
fn live_servers_share_the_partitions() {
    let Some(location) = testkit::s3_location("partitions-balance") else {
        eprintln!("skipped: no S3-compatible test server (DATAREPO_TEST_S3)");
        return;
    };
    let tmp = testkit::tempdir("partitions-balance");
    let init = common::datarepo(&["--store", &location, "init", "--partitions", "4"], "");
    assert!(init.status.success(), "{init:?}");
    let (a, b) = (common::free_port(), common::free_port());
    let mut first = common::spawn_serve(&location, a, TOKEN, &LEASE, &tmp.path().join("a.log"));
    assert!(common::wait_until_up(a));
    wait_for(
        || partitions_written(a) == Some(4),
        "the only server takes every partition",
    );
    write_everywhere(a, "alone");

    let mut second = common::spawn_serve(&location, b, TOKEN, &LEASE, &tmp.path().join("b.log"));
    assert!(common::wait_until_up(b));
    wait_for(
        || partitions_written(a) == Some(2) && partitions_written(b) == Some(2),
        "two servers write two partitions each",
    );
    // And stay so.
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(
        (partitions_written(a), partitions_written(b)),
        (Some(2), Some(2))
    );
    write_everywhere(a, "shared-a");
    write_everywhere(b, "shared-b");
    assert!(first.terminate(), "the first server did not stop cleanly");
    assert!(second.terminate(), "the second server did not stop cleanly");
}
