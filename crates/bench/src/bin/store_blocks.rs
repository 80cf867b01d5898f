//! Block put and get throughput through `Store` (hash checked on every write
//! and read) against raw SlateDB puts and gets of the same keys and bytes,
//! in the same run: on a local directory and, when `DATAREPO_TEST_S3` and
//! the `AWS_*` variables are set (e.g. after `source scripts/s3-test-server.sh`),
//! on S3-compatible storage.
//!
//! A third set of blocks is read raw and then checked against its CID, the
//! check `Store` makes on every read: it splits the overhead into that
//! check and the rest.
//!
//! Run: `cargo run --release -p datarepo-bench --bin store-blocks [-- --blocks N --size BYTES]`.
#![allow(clippy::disallowed_methods)] // a benchmark measures wall time

use std::time::Instant;

use bytes::Bytes;
use cid::Cid;
use multihash_codetable::{Code, MultihashDigest};
use store::{Kv, Location, SlateKv, Store, WriteOp};

fn blocks(n: usize, size: usize, salt: &str) -> Vec<(Cid, Bytes)> {
    (0..n)
        .map(|i| {
            let mut b = format!("{salt} block {i} ").into_bytes();
            b.resize(size, (i % 251) as u8);
            let bytes = Bytes::from(b);
            (Cid::new_v1(0x71, Code::Sha2_256.digest(&bytes)), bytes)
        })
        .collect()
}

async fn measure(location: Location, n: usize, size: usize) {
    let kv = SlateKv::open(&location).await.expect("open");
    let store = Store::new(kv.clone());
    let ours = blocks(n, size, "store");
    let raw = blocks(n, size, "raw");
    // Read raw and then checked against its CID, as `Store` does: what the
    // check alone costs over a raw get.
    let checked = blocks(n, size, "checked");
    let mb = (n * size) as f64 / 1e6;

    // Batches alternate, so that both sets end up alike in the memtable
    // and in SST files (with ours first, a run larger than the memtable
    // read ours from SSTs and raw from memory).
    let (mut put_ours, mut put_raw) = (0.0, 0.0);
    for ((ours, raw), checked) in ours
        .chunks(100)
        .zip(raw.chunks(100))
        .zip(checked.chunks(100))
    {
        let t = Instant::now();
        store.put_blocks(ours).await.expect("put");
        put_ours += t.elapsed().as_secs_f64();
        let t = Instant::now();
        let ops = raw
            .iter()
            .map(|(c, b)| WriteOp::Put(keycodec::records::block_key(&c.to_bytes()), b.clone()))
            .collect();
        kv.write(ops).await.expect("raw put");
        put_raw += t.elapsed().as_secs_f64();
        let ops = checked
            .iter()
            .map(|(c, b)| WriteOp::Put(keycodec::records::block_key(&c.to_bytes()), b.clone()))
            .collect();
        kv.write(ops).await.expect("raw put");
    }

    // Alternate ours and raw gets, so both see the same cache and CPU state.
    let order: Vec<usize> = (0..n).map(|i| (i * 7919) % n).collect();
    let (mut get_ours, mut get_raw, mut get_checked) = (0.0, 0.0, 0.0);
    for &i in &order {
        let t = Instant::now();
        assert!(store.get_block(&ours[i].0).await.expect("get").is_some());
        get_ours += t.elapsed().as_secs_f64();
        let key = keycodec::records::block_key(&raw[i].0.to_bytes());
        let t = Instant::now();
        assert!(kv.get(&key).await.expect("raw get").is_some());
        get_raw += t.elapsed().as_secs_f64();
        let (cid, _) = &checked[i];
        let key = keycodec::records::block_key(&cid.to_bytes());
        let t = Instant::now();
        let got = kv.get(&key).await.expect("raw get").expect("present");
        assert_eq!(Code::Sha2_256.digest(&got).digest(), cid.hash().digest());
        get_checked += t.elapsed().as_secs_f64();
    }
    kv.close().await.expect("close");

    let name = match &location {
        Location::Local(_) => "local directory",
        Location::S3 { .. } => "S3 (SeaweedFS on 127.0.0.1)",
    };
    println!(
        "| {name} | put, batches of 100 | {:.0} blocks/s ({:.1} MB/s) | {:.0} blocks/s | {:.2}× | — | — |",
        n as f64 / put_ours,
        mb / put_ours,
        n as f64 / put_raw,
        put_ours / put_raw
    );
    println!(
        "| {name} | get, one at a time, interleaved | {:.0} blocks/s ({:.1} MB/s) | {:.0} blocks/s | {:.2}× | {:.2}× | {:.2}× |",
        n as f64 / get_ours,
        mb / get_ours,
        n as f64 / get_raw,
        get_ours / get_raw,
        get_checked / get_raw,
        get_ours / get_checked
    );
}

fn main() {
    let n = datarepo_bench::arg("--blocks", 20_000);
    let size = datarepo_bench::arg("--size", 1024);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    println!(
        "| storage | operation | `Store` (hash-checked) | raw SlateDB | overhead | raw get + SHA-256 check, over raw | `Store` over raw + check |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    let dir = std::env::temp_dir().join(format!("datarepo-bench-blocks-{}", std::process::id()));
    rt.block_on(measure(Location::Local(dir.clone()), n, size));
    let _ = std::fs::remove_dir_all(&dir);
    if let Ok(base) = std::env::var("DATAREPO_TEST_S3") {
        let location: Location = format!("{base}/bench-blocks-{}", std::process::id())
            .parse()
            .expect("location");
        rt.block_on(measure(location, n, size));
    }
}
