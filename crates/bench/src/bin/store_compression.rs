//! SlateDB compression for datarepo's blocks: bytes on disk after writing
//! record-like blocks (dag-cbor maps with text and a CID link) and flushing,
//! and block get throughput after reopening, for no compression, Snappy and
//! LZ4. Each codec is set through a SlateDB settings file, as a user would.
//!
//! Run: `cargo run --release -p datarepo-bench --bin store-compression [-- --blocks N]`.
#![allow(clippy::disallowed_methods)] // a benchmark measures wall time

use std::{path::Path, time::Instant};

use bytes::Bytes;
use cid::Cid;
use multihash_codetable::{Code, MultihashDigest};
use store::{Location, SlateKv, SlateOptions, Store};

fn record(i: usize) -> (Cid, Bytes) {
    let prev = Cid::new_v1(0x55, Code::Sha2_256.digest(&i.to_be_bytes()));
    let text = format!(
        "{{\"$type\":\"app.bsky.feed.post\",\"text\":\"post number {i}: the quick brown fox jumps over the lazy dog\",\
         \"createdAt\":\"2026-11-21T12:{:02}:{:02}.000Z\",\"langs\":[\"en\"],\"reply\":\"{prev}\"}}",
        i / 60 % 60,
        i % 60
    );
    let bytes = Bytes::from(text.into_bytes());
    (Cid::new_v1(0x71, Code::Sha2_256.digest(&bytes)), bytes)
}

fn dir_size(p: &Path) -> u64 {
    std::fs::read_dir(p).map_or(0, |rd| {
        rd.flatten()
            .map(|e| {
                let m = e.metadata().ok();
                if m.as_ref().is_some_and(std::fs::Metadata::is_dir) {
                    dir_size(&e.path())
                } else {
                    m.map_or(0, |m| m.len())
                }
            })
            .sum()
    })
}

fn main() {
    let n: usize = datarepo_bench::arg("--blocks", 50_000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let blocks: Vec<(Cid, Bytes)> = (0..n).map(record).collect();
    let raw: usize = blocks.iter().map(|(_, b)| b.len()).sum();
    println!(
        "{n} record blocks, {:.1} MB of block bytes",
        raw as f64 / 1e6
    );
    println!("| codec | bytes on disk after flush | put, batches of 500 | get after reopen |");
    println!("| --- | --- | --- | --- |");
    for codec in ["none", "Snappy", "Lz4"] {
        let base = std::env::temp_dir().join(format!(
            "datarepo-bench-compression-{codec}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).expect("dir");
        let settings = base.join("settings.json");
        let value = if codec == "none" {
            "null".to_owned()
        } else {
            format!("\"{codec}\"")
        };
        std::fs::write(
            &settings,
            format!("{{\"compression_codec\": {value}, \"flush_interval\": \"1ms\"}}"),
        )
        .expect("settings");
        let mut options = SlateOptions::default();
        options.settings_file = Some(settings);
        let location = Location::Local(base.join("data"));
        let (put_rate, get_rate, size) = rt.block_on(async {
            let kv = SlateKv::open_with(&location, &options).await.expect("open");
            let store = Store::new(kv.clone());
            let t = Instant::now();
            for chunk in blocks.chunks(500) {
                store.put_blocks(chunk).await.expect("put");
            }
            let put_rate = n as f64 / t.elapsed().as_secs_f64();
            kv.close().await.expect("close");
            let size = dir_size(&base.join("data"));
            let kv = SlateKv::open_with(&location, &options)
                .await
                .expect("reopen");
            let store = Store::new(kv.clone());
            let t = Instant::now();
            for i in 0..n {
                let (cid, _) = &blocks[(i * 7919) % n];
                assert!(store.get_block(cid).await.expect("get").is_some());
            }
            let get_rate = n as f64 / t.elapsed().as_secs_f64();
            kv.close().await.expect("close");
            (put_rate, get_rate, size)
        });
        println!(
            "| {codec} | {:.1} MB ({:.0}% of block bytes) | {put_rate:.0} blocks/s | {get_rate:.0} blocks/s |",
            size as f64 / 1e6,
            100.0 * size as f64 / raw as f64
        );
        let _ = std::fs::remove_dir_all(&base);
    }
}
