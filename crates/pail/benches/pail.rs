//! Pail micro-benchmarks on a 100,000-key tree with default settings:
//! `get`, a full scan, a page of 100 from a cursor, and one put.
//!
//! Run: `cargo bench -p pail --bench pail`. The comparison with the JS
//! reference lives in `crates/bench` (`pail-vs-reference`).
#![allow(missing_docs)] // criterion_group! generates an undocumented function

use std::{hint::black_box, ops::ControlFlow, sync::Arc};

use cid::Cid;
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use multihash_codetable::{Code, MultihashDigest};
use pail::{Batch, EntriesOptions, MemoryBlocks, Shard, ShardConfig};

const N: usize = 100_000;

fn keys() -> Vec<String> {
    let mut state = 0x5eed_u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        state >> 33
    };
    (0..N)
        .map(|i| {
            let len = 20 + (next() % 21) as usize;
            let mut k: String = (0..len)
                .map(|_| char::from(b'a' + (next() % 26) as u8))
                .collect();
            k.push_str(&i.to_string());
            k
        })
        .collect()
}

fn tree(keys: &[String]) -> (MemoryBlocks, Cid) {
    let blocks = MemoryBlocks::new();
    let empty = Arc::new(Shard::empty(ShardConfig::default()));
    blocks.insert(Arc::clone(&empty));
    let mut batch = pollster::block_on(Batch::new(&blocks, empty.cid())).unwrap();
    for (i, k) in keys.iter().enumerate() {
        let v = Cid::new_v1(0x55, Code::Sha2_256.digest(&i.to_be_bytes()));
        pollster::block_on(batch.put(k, v)).unwrap();
    }
    let m = batch.commit();
    blocks.apply(&m, true);
    (blocks, m.root)
}

fn bench(c: &mut Criterion) {
    let keys = keys();
    let mut group = c.benchmark_group("batch");
    group.throughput(Throughput::Elements(N as u64));
    group.sample_size(10);
    group.bench_function("100k puts in one batch, committed", |b| {
        b.iter(|| tree(black_box(&keys)))
    });
    group.finish();
    let (blocks, root) = tree(&keys);
    c.bench_function("get at 100k keys", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 7919) % N;
            pollster::block_on(pail::get(&blocks, root, black_box(&keys[i]))).unwrap()
        });
    });
    let mut group = c.benchmark_group("scan");
    group.throughput(Throughput::Elements(N as u64));
    group.sample_size(20);
    group.bench_function("full entries scan, 100k", |b| {
        b.iter(|| {
            let mut n = 0usize;
            pollster::block_on(pail::for_each_entry(
                &blocks,
                root,
                &EntriesOptions::default(),
                |_, v| {
                    black_box(v);
                    n += 1;
                    ControlFlow::Continue(())
                },
            ))
            .unwrap();
            assert_eq!(n, N);
        });
    });
    group.finish();
    let mut sorted = keys.clone();
    sorted.sort();
    c.bench_function("page of 100 after a cursor", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 7919) % N;
            let o = EntriesOptions {
                gt: Some(sorted[i].clone()),
                limit: Some(100),
                ..EntriesOptions::default()
            };
            pollster::block_on(pail::entries(&blocks, root, &o)).unwrap()
        });
    });
    c.bench_function("one put into 100k keys (root after it)", |b| {
        let mut n = 0u64;
        b.iter_batched(
            || {
                n += 1;
                format!("new-key-{n}")
            },
            |k| pollster::block_on(pail::put(&blocks, root, &k, Cid::default())).unwrap(),
            BatchSize::SmallInput,
        );
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
