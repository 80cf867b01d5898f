//! `--server` mode's `index add` and `index rebuild` follow the job a
//! server answers with (`serve --job-answer-wait-secs 0`: every build
//! answers `202 {job}` at once) to its outcome, and print what they print
//! when the build answers in time.

use crate::common;

use std::process::{Command, Stdio};

use common::{ServerProcess, datarepo_with, json_lines};
use serde_json::json;

const DID: &str = "did:web:jobs.example";
const POST: &str = "app.test.post";
const TOKEN: &str = "jobs-token";

#[test]
fn remote_index_builds_wait_for_their_jobs() {
    let tmp = testkit::tempdir("cli-remote-jobs");
    let store = tmp.path().join("data");
    let port = common::free_port();
    let _server = ServerProcess(
        common::serve(store.to_str().unwrap(), port, TOKEN)
            .args(["--job-answer-wait-secs", "0"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert!(common::wait_until_up(port));
    let remote = |args: &[&str], stdin: &str| {
        let out = datarepo_with(
            Command::new(env!("CARGO_BIN_EXE_datarepo"))
                .args([
                    "--server",
                    &format!("http://127.0.0.1:{port}"),
                    "--repo",
                    DID,
                ])
                .args(args)
                .env("DATAREPO_TOKEN", TOKEN),
            stdin,
        );
        assert!(out.status.success(), "{args:?}: {out:?}");
        out
    };
    let batch: String = (0..2000)
        .map(|i| {
            json!({"$type": "com.atproto.repo.applyWrites#create", "collection": POST,
                   "rkey": format!("r{i:05}"), "value": {"n": i}})
            .to_string()
                + "\n"
        })
        .collect();
    remote(&["put", "--batch"], &batch);

    let added = &json_lines(&remote(
        &["index", "add", POST, "n", "--kind", "integer", "--json"],
        "",
    ))[0];
    // What the command prints locally: no job id.
    assert_eq!(
        *added,
        json!({"collection": POST, "path": "n", "kind": "integer", "records": 2000})
    );
    let text = String::from_utf8(remote(&["index", "rebuild"], "").stdout).unwrap();
    assert_eq!(text.trim(), "rebuilt the field indexes: 2000 records");

    // The jobs, as the server lists them.
    let (status, body) = common::http(
        port,
        "GET",
        &format!("/xrpc/dev.datarepo.listJobs?repo={DID}"),
        TOKEN,
        "",
    )
    .unwrap();
    assert_eq!(status, 200);
    let jobs: serde_json::Value = serde_json::from_str(&body).unwrap();
    let kinds: Vec<&str> = jobs["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["rebuildIndexes", "addIndex"]);
    assert!(
        jobs["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|j| j["state"] == "succeeded")
    );
}
