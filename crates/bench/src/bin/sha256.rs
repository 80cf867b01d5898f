//! Which SHA-256 is fastest here: `sha2` (RustCrypto; SHA-NI chosen at run
//! time) as `multihash-codetable` uses it, against `ring`, on shard-sized
//! inputs.
//!
//! Run: `cargo run --release -p datarepo-bench --bin sha256`.

use std::{hint::black_box, time::Instant};

use multihash_codetable::{Code, MultihashDigest};
use sha2::Digest;

fn measure(name: &str, size: usize, rounds: usize, f: impl Fn(&[u8]) -> u8) {
    let buf: Vec<u8> = (0..size).map(|i| (i * 31 % 251) as u8).collect();
    for _ in 0..rounds / 10 + 1 {
        black_box(f(black_box(&buf)));
    }
    #[allow(clippy::disallowed_methods)] // a benchmark measures wall time
    let start = Instant::now();
    for _ in 0..rounds {
        black_box(f(black_box(&buf)));
    }
    let secs = start.elapsed().as_secs_f64();
    let gbps = (size * rounds) as f64 / secs / 1e9;
    println!(
        "| {name} | {size} | {gbps:.2} GB/s | {:.1} µs |",
        secs * 1e6 / rounds as f64
    );
}

fn main() {
    println!("| implementation | input bytes | throughput | per input |");
    println!("| --- | --- | --- | --- |");
    for (size, rounds) in [(4096, 100_000), (65_536, 10_000), (524_288, 2_000)] {
        measure("sha2 0.11 (via multihash-codetable)", size, rounds, |b| {
            Code::Sha2_256.digest(b).digest()[0]
        });
        measure("sha2 0.11 (direct)", size, rounds, |b| {
            sha2::Sha256::digest(b)[0]
        });
        measure("ring 0.17", size, rounds, |b| {
            ring::digest::digest(&ring::digest::SHA256, b).as_ref()[0]
        });
    }
}
