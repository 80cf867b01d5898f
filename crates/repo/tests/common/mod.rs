//! Shared helpers for the repo tests.
#![allow(dead_code)]

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use repo::{Env, Repos};
use store::{MemoryKv, Store};

/// A clock that starts at 2026-01-01 and moves 1 ms per reading.
pub(crate) fn env() -> Env {
    let t = Arc::new(AtomicU64::new(1_767_225_600_000_000));
    Env::new(move || t.fetch_add(1000, Ordering::Relaxed), 7)
}

/// Repositories over a fresh in-memory store.
pub(crate) fn repos() -> Repos<MemoryKv> {
    Repos::new(Arc::new(Store::new(MemoryKv::new())), env())
}

pub(crate) fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}
