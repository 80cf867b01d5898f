//! Helpers shared by the store integration tests.
#![allow(dead_code, unreachable_pub)]

use std::path::PathBuf;

use bytes::Bytes;
use cid::Cid;
use multihash_codetable::{Code, MultihashDigest};

/// A raw block and its CID.
pub fn block(n: u64) -> (Cid, Bytes) {
    let bytes = Bytes::from(format!("block number {n}"));
    (Cid::new_v1(0x55, Code::Sha2_256.digest(&bytes)), bytes)
}

/// A fresh temporary directory.
pub fn tempdir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("datarepo-store-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
