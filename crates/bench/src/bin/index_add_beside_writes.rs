//! `datarepo serve` as a process, on a local store holding `--n` records
//! of one collection written `--commit-every` to a commit: durable
//! `createRecord` latency from `--writers` writers that never pause while
//! `dev.datarepo.addIndex` builds the collection's first index, then a
//! second, against the same writers with no build; every record, those
//! written during the builds included, must be counted by the new indexes.
//!
//!   cargo build --release --bin datarepo
//!   cargo run --release -p datarepo-bench --bin index-add-beside-writes -- \
//!     [--n 300000] [--writers 1] [--commit-every 5000]
//!
//! `DATAREPO_BIN` names another binary (an older build, to compare).

#![allow(clippy::disallowed_methods, clippy::unwrap_used)] // a benchmark measures wall time

use std::{
    io::Write as _,
    process::{Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

const TOKEN: &str = "bench";
const DID: &str = "did:web:index-add.example";
const POSTS: &str = "app.bsky.feed.post";

/// Creates records one at a time until `stop`; each one's latency.
async fn writer(base: String, stop: Arc<AtomicBool>) -> Vec<Duration> {
    datarepo_bench::create_records_until(base, TOKEN, DID, POSTS, stop, |i| {
        serde_json::json!({"text": format!("during {i}"), "langs": ["during"], "createdAt": "2026-11-26T00:00:00Z"})
    })
    .await
}

/// The writer running from 0.5 s before an `addIndex` of `path` to 0.5 s
/// after its answer: the call's duration and the writes' latencies.
async fn beside_writer(
    client: &reqwest::Client,
    base: &str,
    path: &str,
    kind: &str,
) -> (Duration, Vec<Duration>) {
    let stop = Arc::new(AtomicBool::new(false));
    let during = writers(base, &stop);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let start = Instant::now();
    let response = client
        .post(format!("{base}/xrpc/dev.datarepo.addIndex"))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body(
            serde_json::json!({"repo": DID, "collection": POSTS, "path": path, "kind": kind})
                .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success());
    // A build longer than the server's answer wait is a job: followed to
    // its end.
    let answer: serde_json::Value = response.json().await.unwrap();
    if answer.get("records").is_none() {
        // 202: `{"job": {id, state, progress, …}}`.
        let id = answer["job"]["id"].as_str().expect("a job id").to_owned();
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let job: serde_json::Value = client
                .get(format!("{base}/xrpc/dev.datarepo.getJob?id={id}"))
                .bearer_auth(TOKEN)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            match job["state"].as_str() {
                Some("running") => continue,
                Some("succeeded") => break,
                other => panic!("the build ended {other:?}: {job}"),
            }
        }
    }
    let build = start.elapsed();
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::Relaxed);
    (build, joined(during).await)
}

/// `--writers` writers until `stop`.
fn writers(base: &str, stop: &Arc<AtomicBool>) -> Vec<tokio::task::JoinHandle<Vec<Duration>>> {
    let n: usize = datarepo_bench::arg("--writers", 1);
    (0..n.max(1))
        .map(|_| tokio::spawn(writer(base.to_owned(), Arc::clone(stop))))
        .collect()
}

/// Every writer's latencies, together.
async fn joined(writers: Vec<tokio::task::JoinHandle<Vec<Duration>>>) -> Vec<Duration> {
    let mut all = Vec::new();
    for w in writers {
        all.extend(w.await.unwrap());
    }
    all
}

fn main() {
    let n: usize = datarepo_bench::arg("--n", 300_000);
    let commit_every: usize = datarepo_bench::arg("--commit-every", 5000);
    let bin = datarepo_bench::datarepo_bin();
    assert!(
        bin.exists(),
        "build the release binary first: cargo build --release --bin datarepo"
    );
    let dir = std::env::temp_dir().join(format!("datarepo-bench-index-add-{}", std::process::id()));
    // The records, written by the CLI before the server starts.
    let mut put = Command::new(&bin)
        .arg("--store")
        .arg(&dir)
        .args(["--repo", DID, "put", "--batch", "--commit-every"])
        .arg(commit_every.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    {
        let mut stdin = std::io::BufWriter::new(put.stdin.take().unwrap());
        let langs = ["en", "fr", "ja", "de", "pt", "es", "it", "nl", "ko", "zh"];
        for i in 0..n {
            writeln!(
                stdin,
                r#"{{"$type":"com.atproto.repo.applyWrites#create","collection":"{POSTS}","value":{{"text":"post {i}","langs":["{}"],"createdAt":"2026-11-26T00:00:00Z"}}}}"#,
                langs[i % langs.len()]
            )
            .unwrap();
        }
    }
    assert!(put.wait().unwrap().success());

    let server = datarepo_bench::ServeProcess::start(&bin, &dir, TOKEN);
    let base = server.base.clone();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        server.ready().await;
        let client = reqwest::Client::new();
        // The writer alone, then beside the build.
        let stop = Arc::new(AtomicBool::new(false));
        let alone = writers(&base, &stop);
        tokio::time::sleep(Duration::from_secs(3)).await;
        stop.store(true, Ordering::Relaxed);
        let alone = joined(alone).await;
        let before: u64 = alone.len() as u64;

        println!(
            "{n} records in commits of {commit_every}, {} writers; createRecord alone: {}",
            datarepo_bench::arg::<usize>("--writers", 1),
            datarepo_bench::latency_summary(alone)
        );
        let mut made = before;
        // The collection's first index (a new scope), then a second (the
        // collection's scope, at the commits' columns).
        for (path, kind, check) in [
            ("langs", "keyword", "langs%20%3D%20%22during%22"),
            ("createdAt", "datetime", "createdAt%20exists"),
        ] {
            let (build, during) = beside_writer(&client, &base, path, kind).await;
            made += during.len() as u64;
            let count: serde_json::Value = client
                .get(format!(
                    "{base}/xrpc/dev.datarepo.countRecords?repo={DID}&collection={POSTS}&where={check}"
                ))
                .send()
                .await
                .unwrap()
                .bytes()
                .await
                .map(|b| serde_json::from_slice(&b).unwrap())
                .unwrap();
            let want = if path == "langs" { made } else { made + n as u64 };
            assert_eq!(count["count"], want, "every record is in the index");
            println!(
                "addIndex {path} ({kind}) took {:.2} s; createRecord during it (and 0.5 s either side): {}; \
                 the index counts all {want} records",
                build.as_secs_f64(),
                datarepo_bench::latency_summary(during)
            );
        }
    });
    // The server first: while it runs it writes into the directory.
    server.stop();
    let _ = std::fs::remove_dir_all(&dir);
}
