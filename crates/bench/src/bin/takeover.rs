//! High availability: how long from SIGKILL of the writer to the first
//! write a standby acknowledges, on S3-compatible storage (SeaweedFS
//! locally, as the test command starts it), with the default lease
//! (renewed every 1,000 ms, 5,000 ms to live). What the user runs:
//! `datarepo serve` and `datarepo serve --standby` as processes.
//!
//! Each run: a writer and a standby on a fresh prefix; writes (a quiet
//! store: 200 records, then 7 s idle so the writer flushes its memtable; or
//! a burst: 16 writers for 3 s, killed at once, leaving its WAL unflushed);
//! SIGKILL; then the parts: until the lease object names the standby
//! (lease), until the standby says it is the writer (open: SlateDB's open
//! as writer, fencing and WAL replay, and re-reading the repositories),
//! until its first acknowledged `createRecord`.
//!
//!   cargo build --release -p datarepo-cli -p datarepo-bench
//!   (source scripts/s3-test-server.sh; target/release/takeover -- --runs 3)
//!
//! Needs the AWS_* settings and DATAREPO_TEST_S3 (`s3://bucket/prefix`).

#![allow(clippy::disallowed_methods, clippy::unwrap_used)] // a benchmark measures wall time

use std::{
    path::Path,
    sync::Arc,
    time::{Duration, Instant},
};

use datarepo_bench::{ServeProcess, arg, create_records_for, datarepo_bin};

const TOKEN: &str = "bench";
const DID: &str = "did:web:takeover.example";

fn body() -> Arc<dyn Fn(usize, u64) -> String + Send + Sync> {
    Arc::new(|w, n| {
        format!(
            r#"{{"repo":"{DID}","collection":"app.bsky.feed.post","record":{{"text":"post {w}-{n}","createdAt":"2026-11-28T00:00:00Z"}}}}"#
        )
    })
}

async fn role(client: &reqwest::Client, base: &str) -> Option<String> {
    let v: serde_json::Value = client
        .get(format!("{base}/xrpc/_health"))
        .send()
        .await
        .ok()?
        .json()
        .await
        .ok()?;
    v["role"].as_str().map(str::to_owned)
}

struct Parts {
    lease: Duration,
    open: Duration,
    first_ack: Duration,
}

async fn run(bin: &Path, location: &str, burst: bool, writers: usize) -> Parts {
    let client = reqwest::Client::new();
    let writer = ServeProcess::start_with(bin, Path::new(location), TOKEN, &[]);
    writer.ready().await;
    let standby = ServeProcess::start_with(bin, Path::new(location), TOKEN, &["--standby"]);
    standby.ready().await;
    while role(&client, &standby.base).await.as_deref() != Some("standby") {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    if burst {
        create_records_for(&writer.base, TOKEN, 3.0, writers, body(), None).await;
    } else {
        create_records_for(&writer.base, TOKEN, 1.0, 4, body(), None).await;
        tokio::time::sleep(Duration::from_secs(7)).await;
    }
    let lease = store::Lease::at(&location.parse().unwrap()).await.unwrap();
    let (before, _) = lease.read().await.unwrap().unwrap();
    let killed = Instant::now();
    drop(writer); // SIGKILL
    let mut lease_at = None;
    let mut writer_at = None;
    let first_ack = loop {
        if lease_at.is_none()
            && let Ok(Some((holder, _))) = lease.read().await
            && holder.id != before.id
        {
            lease_at = Some(killed.elapsed());
        }
        if writer_at.is_none() && role(&client, &standby.base).await.as_deref() == Some("writer") {
            writer_at = Some(killed.elapsed());
        }
        if writer_at.is_some() {
            let answer = client
                .post(format!(
                    "{}/xrpc/com.atproto.repo.createRecord",
                    standby.base
                ))
                .bearer_auth(TOKEN)
                .header("content-type", "application/json")
                .body(body()(0, 0))
                .send()
                .await;
            if answer.is_ok_and(|a| a.status().is_success()) {
                break killed.elapsed();
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let lease_at = lease_at.unwrap_or(first_ack);
    let writer_at = writer_at.unwrap_or(first_ack);
    let status = standby.stop();
    assert!(status.success(), "the new writer exited with {status}");
    Parts {
        lease: lease_at,
        open: writer_at.saturating_sub(lease_at),
        first_ack,
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let runs: usize = arg("--runs", 3);
    let writers: usize = arg("--writers", 16);
    let base = std::env::var("DATAREPO_TEST_S3").expect(
        "DATAREPO_TEST_S3=s3://bucket/prefix and the AWS_* settings (scripts/s3-test-server.sh)",
    );
    let bin = datarepo_bin();
    let rt = tokio::runtime::Runtime::new().unwrap();
    println!("lease: renewed every 1000 ms, 5000 ms to live (the defaults)");
    for (name, burst) in [("quiet store", false), ("right after a burst", true)] {
        for r in 0..runs {
            let location = format!(
                "{base}/takeover-{}-{r}-{}",
                u8::from(burst),
                std::process::id()
            );
            let parts = rt.block_on(run(&bin, &location, burst, writers));
            println!(
                "{name:<20} run {r}: lease taken {:>7.0} ms, open as writer {:>6.0} ms, first write acknowledged {:>7.0} ms after SIGKILL",
                ms(parts.lease),
                ms(parts.open),
                ms(parts.first_ack)
            );
        }
    }
}
