//! Helpers shared by the store integration tests.
#![allow(dead_code, unreachable_pub)]

use bytes::Bytes;
use cid::Cid;
use multihash_codetable::{Code, MultihashDigest};

/// A raw block and its CID.
pub fn block(n: u64) -> (Cid, Bytes) {
    let bytes = Bytes::from(format!("block number {n}"));
    (Cid::new_v1(0x55, Code::Sha2_256.digest(&bytes)), bytes)
}

/// Puts `key` = `value` in a commit of its own and waits until it is
/// durable.
pub async fn durable_put(kv: &impl store::Kv, key: Vec<u8>, value: Vec<u8>) {
    kv.apply(vec![store::WriteOp::Put(key, value.into())])
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
}
