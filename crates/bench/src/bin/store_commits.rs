//! Durable commits per second on SlateDB in a local directory, for 1 and 16
//! concurrent writers (each on its own repository, so that they never
//! conflict and commits arriving together share one WAL flush), across WAL
//! flush intervals; and the overhead of `Store::commit` over raw SlateDB
//! write batches of the same bytes.
//!
//! Run: `cargo run --release -p datarepo-bench --bin store-commits [-- --secs S]`;
//! with `DATAREPO_BENCH_S3=s3://bucket/prefix` (and the `AWS_*` variables) it
//! measures on S3-compatible storage instead of a local directory.
#![allow(clippy::disallowed_methods)] // a benchmark measures wall time

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use bytes::Bytes;
use cid::Cid;
use multihash_codetable::{Code, MultihashDigest};
use store::{Block, Commit, Head, Kv, RecordChange, SlateKv, SlateOptions, Store, WriteOp};

fn block(tag: &str, n: u64) -> (Cid, Bytes) {
    let bytes = Bytes::from(format!("{tag} {n} {}", "r".repeat(200)));
    (Cid::new_v1(0x71, Code::Sha2_256.digest(&bytes)), bytes)
}

fn commit(repo: &str, expected: Option<Cid>, rev: u64) -> Commit {
    let (c, cb) = block(&format!("commit {repo}"), rev);
    let (r, rb) = block(&format!("record {repo}"), rev);
    Commit {
        repo: repo.to_owned(),
        expected,
        head: Head { commit: c, rev },
        blocks: vec![
            Block::verify(c, cb).expect("block"),
            Block::verify(r, rb.clone()).expect("block"),
        ],
        records: vec![RecordChange {
            collection: "app.bench.post".into(),
            rkey: format!("r{rev:08}"),
            record: Some(Block::verify(r, rb).expect("block")),
        }],
        collections: Vec::new(),
        index: Vec::new(),
        history: store::LogChange::default(),
        event: None,
        stream: None,
    }
}

async fn run(flush: Duration, writers: usize, secs: f64, raw: bool) -> f64 {
    let name = format!(
        "datarepo-bench-commits-{}-{writers}-{raw}-{}",
        flush.as_micros(),
        std::process::id()
    );
    let location: store::Location = match std::env::var("DATAREPO_BENCH_S3") {
        Ok(base) => format!("{base}/{name}").parse().expect("location"),
        Err(_) => store::Location::Local(std::env::temp_dir().join(&name)),
    };
    let mut options = SlateOptions::default();
    options.flush_interval = Some(flush);
    let kv = SlateKv::open_with(&location, &options).await.expect("open");
    let store = Arc::new(Store::new(kv.clone()));
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let start = Instant::now();
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let repo = format!("did:web:w{w}");
                let mut head = None;
                let mut n = 0u64;
                while Instant::now() < deadline {
                    n += 1;
                    let c = commit(&repo, head, n);
                    if raw {
                        // The same bytes as one raw write batch, no checks.
                        let mut ops: Vec<WriteOp> = c
                            .blocks
                            .iter()
                            .map(|b| WriteOp::Put(b.cid().to_bytes(), b.bytes().clone()))
                            .collect();
                        ops.push(WriteOp::Put(
                            repo.as_bytes().to_vec(),
                            Bytes::from(c.head.commit.to_bytes()),
                        ));
                        store.kv().write(ops).await.expect("raw write");
                    } else {
                        store.commit(c.clone()).await.expect("commit");
                    }
                    head = Some(c.head.commit);
                }
                n
            })
        })
        .collect();
    let mut total = 0;
    for t in tasks {
        total += t.await.expect("writer");
    }
    let rate = total as f64 / start.elapsed().as_secs_f64();
    kv.close().await.expect("close");
    if let store::Location::Local(dir) = &location {
        let _ = std::fs::remove_dir_all(dir);
    }
    rate
}

fn main() {
    let secs: f64 = datarepo_bench::arg("--secs", 3.0);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    println!("| WAL flush interval | writers | Store::commit | raw SlateDB batch | overhead |");
    println!("| --- | --- | --- | --- | --- |");
    let intervals: &[u64] = if std::env::var_os("DATAREPO_BENCH_S3").is_some() {
        &[100, 10, 1]
    } else {
        &[100, 20, 10, 5, 1]
    };
    for &flush_ms in intervals {
        for writers in [1usize, 16] {
            let flush = Duration::from_millis(flush_ms);
            let ours = rt.block_on(run(flush, writers, secs, false));
            let raw = rt.block_on(run(flush, writers, secs, true));
            println!(
                "| {flush_ms} ms | {writers} | {ours:.0} commits/s | {raw:.0} writes/s | {:.2}× |",
                raw / ours
            );
        }
    }
}
