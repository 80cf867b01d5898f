//! A query's work is bounded: an expression with more values than the
//! limit, or longer than the limit, is refused with a clear 400 before any
//! work, one at the limit is answered (and exactly), and a query that runs
//! past its budget is abandoned with `503 QueryTimeout` while the server
//! goes on serving.

use crate::common;

use std::{
    sync::{Arc, atomic::Ordering},
    time::Duration,
};

use common::{DID, SlowKv, TestServer};
use serde_json::{Value, json};
use server::Limits;

const POST: &str = "app.test.post";
/// The documented limits (`docs/indexes.md`).
const MAX_TERMS: usize = 256;
const MAX_WHERE_BYTES: usize = 8192;

async fn server(kv: SlowKv, query_timeout: Duration) -> TestServer {
    let mut config = common::config();
    config.limits = Limits {
        query_timeout,
        ..Limits::default()
    };
    let repos = Arc::new(repo::Repos::new(
        Arc::new(store::Store::new(kv)),
        common::env(),
    ));
    let server = TestServer::start_repos(repos, config).await;
    for i in 0..20 {
        let (status, body) = server
            .post(
                "com.atproto.repo.createRecord",
                &json!({"repo": DID, "collection": POST, "rkey": format!("p{i}"), "record": {"n": i}}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }
    let (status, body) = server
        .post(
            "dev.datarepo.addIndex",
            &json!({"repo": DID, "collection": POST, "path": "n", "kind": "integer"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    server
}

async fn count(server: &TestServer, where_: &str) -> (u16, Value) {
    server
        .get(
            "dev.datarepo.countRecords",
            &[("repo", DID), ("collection", POST), ("where", where_)],
        )
        .await
}

fn ors(n: usize) -> String {
    (0..n)
        .map(|i| format!("n = {i}"))
        .collect::<Vec<_>>()
        .join(" or ")
}

#[tokio::test]
async fn too_many_values_or_bytes_are_refused_and_the_limit_is_answered() {
    let server = server(
        SlowKv::new(Duration::from_millis(100), true),
        Duration::from_secs(10),
    )
    .await;
    // At the limit: every record with n below 20 matches, once.
    let (status, body) = count(&server, &ors(MAX_TERMS)).await;
    assert_eq!((status, &body["count"]), (200, &json!(20)), "{body}");
    let listed = format!(
        "n in [{}]",
        (0..MAX_TERMS)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let (status, body) = count(&server, &listed).await;
    assert_eq!((status, &body["count"]), (200, &json!(20)), "{body}");

    // One value more, in either form.
    for where_ in [ors(MAX_TERMS + 1), format!("{listed} or n exists")] {
        let (status, body) = count(&server, &where_).await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(body["error"], "InvalidRequest");
        let message = body["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("at most {MAX_TERMS}")),
            "{message}"
        );
    }
    // Longer than the limit, though few values.
    let long = format!("n = 1{}", " ".repeat(MAX_WHERE_BYTES));
    let (status, body) = count(&server, &long).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains(&format!("at most {MAX_WHERE_BYTES}")),
        "{body}"
    );
}

#[tokio::test]
async fn a_query_past_its_budget_is_abandoned() {
    // A 50 ms budget, and reads of 100 ms from now on.
    let kv = SlowKv::new(Duration::from_millis(100), true);
    let server = server(kv.clone(), Duration::from_millis(50)).await;
    kv.slow.store(true, Ordering::Relaxed);
    let (status, body) = count(&server, "n > 3").await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"], "QueryTimeout");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("--query-timeout-secs"),
        "{body}"
    );
    let (status, body) = server
        .get(
            "dev.datarepo.queryRecords",
            &[("repo", DID), ("collection", POST), ("where", "n < 3")],
        )
        .await;
    assert_eq!(
        (status, &body["error"]),
        (503, &json!("QueryTimeout")),
        "{body}"
    );
    // The server goes on serving.
    let (status, _) = server.get("_health", &[]).await;
    assert_eq!(status, 200);
}
