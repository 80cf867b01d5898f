//! Encode and decode of typical keys: a record-index key and a short txkey.
//!
//! Run: `cargo bench -p keycodec --bench keycodec`.
#![allow(missing_docs)] // criterion_group! generates an undocumented function

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use keycodec::{
    KeyReader,
    records::{decode_key, record_index_key},
    txkey::short,
};

fn bench(c: &mut Criterion) {
    let (repo, collection, rkey) = ("did:web:example.com", "app.bsky.feed.post", "3jui7kd54zh2y");
    c.bench_function("record_index_key/encode", |b| {
        b.iter(|| record_index_key(black_box(repo), black_box(collection), black_box(rkey)));
    });
    let key = record_index_key(repo, collection, rkey);
    c.bench_function("record_index_key/decode", |b| {
        b.iter(|| decode_key(black_box(&key)))
    });
    c.bench_function("record_index_key/read fields", |b| {
        b.iter(|| {
            let mut r = KeyReader::new(black_box(&key))?;
            Ok::<_, keycodec::Error>((r.str()?.len(), r.str()?.len(), r.str()?.len()))
        });
    });
    c.bench_function("txkey short/encode", |b| {
        b.iter(|| short::key(black_box("field"), black_box("standard"), black_box(42)));
    });
    let tx = short::key("field", "standard", 42).unwrap_or_default();
    c.bench_function("txkey short/decode", |b| {
        b.iter(|| short::Key::parse(black_box(&tx)))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
