//! `datarepo verify` of a signed N-record repository's CAR, against SHA-256
//! alone over the same blocks, in one run.
//!
//! 1. Builds a repository of N records signed with a fixed secp256k1 key
//!    (commits of `--batch` records) in memory and exports its CAR.
//! 2. Times SHA-256 over every block's bytes (one thread, then every core,
//!    as verification hashes), `repo::verify_car` in this process, and the
//!    `datarepo verify FILE --key DID` command as a process (when the
//!    release binary is built).
//!
//!   cargo build --release --bin datarepo
//!   cargo run --release -p datarepo-bench --bin verify-car -- [--n 1000000 --batch 10000 --runs 3]
//!
//! `DATAREPO_BIN` names another binary; `--keep 1` keeps the CAR file.

#![allow(clippy::disallowed_methods, clippy::unwrap_used)] // a benchmark measures wall time

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::{sync::Arc, time::Instant};

use repo::{Curve, Env, Repos, SigningKey, VerifyOptions, Write};
use sha2::{Digest, Sha256};
use store::{MemoryKv, Store};

const COLLECTION: &str = "app.bsky.feed.post";

/// Each block's bytes in a CAR v1 file (varint length, CID, bytes).
fn blocks(car: &[u8]) -> Vec<&[u8]> {
    let (header_len, rest) = unsigned_varint_decode(car);
    let mut at = car.len() - rest.len() + header_len;
    let mut out = Vec::new();
    while at < car.len() {
        let (len, rest) = unsigned_varint_decode(&car[at..]);
        let start = car.len() - rest.len();
        let section = &car[start..start + len];
        // A CIDv1 with a sha2-256 multihash: version, codec, 0x12, 0x20, digest.
        out.push(&section[36..]);
        at = start + len;
    }
    out
}

fn unsigned_varint_decode(bytes: &[u8]) -> (usize, &[u8]) {
    let mut value = 0usize;
    for (i, b) in bytes.iter().enumerate() {
        value |= usize::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return (value, &bytes[i + 1..]);
        }
    }
    panic!("truncated varint")
}

fn sha256_all(blocks: &[&[u8]], threads: usize) -> u8 {
    let chunk = blocks.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = blocks
            .chunks(chunk)
            .map(|part| s.spawn(move || part.iter().fold(0u8, |acc, b| acc ^ Sha256::digest(b)[0])))
            .collect();
        handles
            .into_iter()
            .fold(0, |acc, h| acc ^ h.join().unwrap())
    })
}

fn main() {
    let n: u64 = datarepo_bench::arg("--n", 1_000_000);
    let batch: u64 = datarepo_bench::arg("--batch", 10_000);
    let runs: usize = datarepo_bench::arg("--runs", 3);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = std::env::temp_dir().join(format!("datarepo-bench-verify-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let key_file = dir.join("k.key");
    let key = Arc::new(SigningKey::from_scalar_bytes(Curve::K256, &[0x2a; 32]).unwrap());
    key.write_new_file(&key_file).unwrap();
    let did = key.public_key().did_key();

    let car = rt.block_on(async {
        let clock = Arc::new(std::sync::atomic::AtomicU64::new(1_767_225_600_000_000));
        let env = Env::new(
            move || clock.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            1,
        );
        let repos = Repos::new(Arc::new(Store::new(MemoryKv::new())), env);
        let repo = repos
            .create_signed("did:plc:verify", Arc::clone(&key), key_file.clone())
            .await
            .unwrap();
        let mut i = 0;
        while i < n {
            let writes = (i..(i + batch).min(n))
                .map(|j| Write::Create {
                    collection: COLLECTION.into(),
                    rkey: None,
                    value: serde_json::json!({"$type": COLLECTION, "text": format!("post number {j}"),
                                              "createdAt": "2026-01-01T00:00:00.000Z"}),
                })
                .collect();
            repo.apply_writes(writes, None).await.unwrap();
            i += batch;
        }
        repo.export_car(Vec::new(), None, |_| {}).await.unwrap().0
    });
    let file = dir.join("repo.car");
    std::fs::write(&file, &car).unwrap();
    let blocks = blocks(&car);
    let bytes: usize = blocks.iter().map(|b| b.len()).sum();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "{n} records, {} blocks, {:.1} MiB of block data, {cores} cores",
        blocks.len(),
        bytes as f64 / (1 << 20) as f64
    );
    let rate = |secs: f64| n as f64 / secs / 1000.0;
    let options = VerifyOptions {
        keys: vec![*key.public_key()],
        ..VerifyOptions::default()
    };
    let bin = datarepo_bench::datarepo_bin();
    for run in 1..=runs {
        let start = Instant::now();
        std::hint::black_box(sha256_all(&blocks, 1));
        let sha1 = start.elapsed().as_secs_f64();
        let start = Instant::now();
        std::hint::black_box(sha256_all(&blocks, cores));
        let sha_all = start.elapsed().as_secs_f64();
        let start = Instant::now();
        let report = rt.block_on(repo::verify_car(&car[..], &options)).unwrap();
        let verify = start.elapsed().as_secs_f64();
        assert_eq!(report.records, n);
        let mut line = format!(
            "run {run}: sha256 1 thread {sha1:.3} s ({:.0}k records/s), {cores} threads {sha_all:.3} s ({:.0}k/s); \
             verify_car {verify:.3} s ({:.0}k/s, {:.2}x the {cores}-thread hashing time)",
            rate(sha1),
            rate(sha_all),
            rate(verify),
            verify / sha_all
        );
        if bin.exists() {
            let start = Instant::now();
            let out = std::process::Command::new(&bin)
                .args(["verify", file.to_str().unwrap(), "--key", &did])
                .output()
                .unwrap();
            let secs = start.elapsed().as_secs_f64();
            assert!(out.status.success(), "{out:?}");
            line += &format!("; `datarepo verify` {secs:.3} s ({:.0}k/s)", rate(secs));
        }
        println!("{line}");
    }
    if !bin.exists() {
        println!(
            "(build the release binary to time `datarepo verify`: cargo build --release --bin datarepo)"
        );
    }
    if datarepo_bench::arg("--keep", 0u8) == 1 {
        println!("kept {} (key {did})", file.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
