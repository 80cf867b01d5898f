//! `addIndex` and `rebuildIndexes` are jobs: past `job_answer_wait` the
//! request answers `202 {job}` while the build goes on, `getJob` reports
//! its progress and then its outcome (the result the request would have
//! answered, or the error), `listJobs` lists it; a build that ends in time
//! answers as before, with its job's id.

use crate::common;

use std::{
    sync::{Arc, atomic::Ordering},
    time::Duration,
};

use common::{DID, SlowKv, TestServer};
use serde_json::{Value, json};
use server::Limits;

const POST: &str = "app.test.post";

async fn server(kv: SlowKv, job_answer_wait: Duration) -> TestServer {
    let mut config = common::config();
    config.limits = Limits {
        job_answer_wait,
        ..Limits::default()
    };
    let repos = Arc::new(repo::Repos::new(
        Arc::new(store::Store::new(kv)),
        common::env(),
    ));
    let server = TestServer::start_repos(repos, config).await;
    let writes: Vec<Value> = (0..3000)
        .map(|i| {
            json!({"$type": "com.atproto.repo.applyWrites#create", "collection": POST,
                        "rkey": format!("r{i:05}"), "value": {"n": i}})
        })
        .collect();
    for chunk in writes.chunks(200) {
        let (status, body) = server
            .post(
                "com.atproto.repo.applyWrites",
                &json!({"repo": DID, "writes": chunk}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }
    server
}

async fn job(server: &TestServer, id: &str) -> Value {
    let (status, body) = server.get("dev.datarepo.getJob", &[("id", id)]).await;
    assert_eq!(status, 200, "{body}");
    body
}

/// Polls the job until it is no longer running; the progress seen meanwhile.
async fn until_done(server: &TestServer, id: &str) -> (Value, Vec<u64>) {
    let mut seen = Vec::new();
    for _ in 0..600 {
        let j = job(server, id).await;
        if j["state"] != "running" {
            return (j, seen);
        }
        seen.push(j["progress"]["done"].as_u64().unwrap());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("job {id} still running after 12 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_build_answers_202_and_is_followed_to_its_outcome() {
    let kv = SlowKv::new(Duration::from_millis(20), false);
    let server = server(kv.clone(), Duration::ZERO).await;
    kv.slow.store(true, Ordering::Relaxed);

    let (status, body) = server
        .post(
            "dev.datarepo.addIndex",
            &json!({"repo": DID, "collection": POST, "path": "n", "kind": "integer"}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    let started = &body["job"];
    assert_eq!(started["state"], "running", "{body}");
    assert_eq!(started["kind"], "addIndex");
    assert_eq!(
        started["params"],
        json!({"collection": POST, "path": "n", "kind": "integer"})
    );
    let id = started["id"].as_str().unwrap().to_owned();

    let (done, seen) = until_done(&server, &id).await;
    assert_eq!(done["state"], "succeeded", "{done}");
    assert_eq!(
        done["result"],
        json!({"collection": POST, "path": "n", "kind": "integer", "records": 3000})
    );
    assert_eq!(done["progress"]["done"], 3000, "{done}");
    assert!(
        seen.windows(2).all(|w| w[0] <= w[1]),
        "progress went back: {seen:?}"
    );
    // The index answers.
    let (_, count) = server
        .get(
            "dev.datarepo.countRecords",
            &[("repo", DID), ("collection", POST), ("where", "n >= 2990")],
        )
        .await;
    assert_eq!(count["count"], 10);

    // A second addIndex of the same path fails; its job says why.
    let (status, body) = server
        .post(
            "dev.datarepo.addIndex",
            &json!({"repo": DID, "collection": POST, "path": "n", "kind": "integer"}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    let failed_id = body["job"]["id"].as_str().unwrap().to_owned();
    let (failed, _) = until_done(&server, &failed_id).await;
    assert_eq!(failed["state"], "failed", "{failed}");
    assert_eq!(failed["error"]["error"], "InvalidRequest", "{failed}");
    assert!(
        failed["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already"),
        "{failed}"
    );

    // Both listed, newest first; an unknown job is named.
    let (_, list) = server.get("dev.datarepo.listJobs", &[("repo", DID)]).await;
    let ids: Vec<&str> = list["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [failed_id.as_str(), id.as_str()]);
    let (status, body) = server.get("dev.datarepo.getJob", &[("id", "nope")]).await;
    assert_eq!(
        (status, &body["error"]),
        (400, &json!("JobNotFound")),
        "{body}"
    );
}

#[tokio::test]
async fn a_build_that_ends_in_time_answers_as_before_with_its_job() {
    let server = server(
        SlowKv::new(Duration::from_millis(20), false),
        Duration::from_secs(30),
    )
    .await;
    let (status, body) = server
        .post(
            "dev.datarepo.addIndex",
            &json!({"repo": DID, "collection": POST, "path": "n", "kind": "integer"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let id = body["job"].as_str().unwrap().to_owned();
    assert_eq!(body["records"], 3000);
    assert_eq!(job(&server, &id).await["state"], "succeeded");
    let (status, body) = server
        .post("dev.datarepo.rebuildIndexes", &json!({"repo": DID}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (&body["rebuilt"], &body["records"]),
        (&json!(true), &json!(3000))
    );
    // The same index again: the error as before.
    let (status, body) = server
        .post(
            "dev.datarepo.addIndex",
            &json!({"repo": DID, "collection": POST, "path": "n", "kind": "integer"}),
        )
        .await;
    assert_eq!(
        (status, &body["error"]),
        (400, &json!("InvalidRequest")),
        "{body}"
    );
}
