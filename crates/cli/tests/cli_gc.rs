//! `datarepo gc` with `--store` / `DATAREPO_STORE`: deletes blocks no commit
//! reaches and reports what it did; bad locations are clear errors.

use crate::common;

use std::process::Command;

use bytes::Bytes;
use cid::Cid;
use multihash_codetable::{Code, MultihashDigest};
use serde_json::Value;
use store::{SlateKv, Store};

#[test]
fn gc_deletes_unreachable_blocks() {
    let tmp = testkit::tempdir("gc");
    let dir = tmp.path();
    common::rt().block_on(async {
        let kv = SlateKv::open_local(dir).await.unwrap();
        let store = Store::new(kv.clone());
        let bytes = Bytes::from_static(b"an orphan block");
        let cid = Cid::new_v1(0x55, Code::Sha2_256.digest(&bytes));
        store.put_blocks(&[(cid, bytes)]).await.unwrap();
        kv.close().await.unwrap();
    });
    let out = Command::new(env!("CARGO_BIN_EXE_datarepo"))
        .args(["gc", "--json"])
        .env("DATAREPO_STORE", dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["listed"], 1);
    assert_eq!(report["deleted"], 1);
    // camelCase, as every JSON datarepo prints and the XRPC API.
    for key in ["bytesFreed", "commitsDropped"] {
        assert!(report.get(key).is_some(), "{key} missing: {report}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_datarepo"))
        .args(["--store", dir.to_str().unwrap(), "gc"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("0 deleted"));
}

#[test]
fn bad_store_locations_are_clear_errors() {
    let out = Command::new(env!("CARGO_BIN_EXE_datarepo"))
        .args(["--store", "gs://bucket", "gc"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unsupported scheme"));
}
