//! A replica of a local store must look for new manifests more often than
//! superseded ones are collected (`store::LOCAL_METADATA_MIN_AGE`): one
//! that looked less often could find the manifest after its own already
//! collected and stop following the writer. `serve --replica` refuses a
//! longer `--refresh-ms` before it opens anything.

use crate::common;

#[test]
fn a_local_replica_refuses_a_refresh_longer_than_collection_allows() {
    let tmp = testkit::tempdir("cli-replica-refresh");
    let store = tmp.path().join("data");
    let store = store.to_str().unwrap();
    let longest = store::LOCAL_METADATA_MIN_AGE.as_millis() / 3;
    let too_long = (longest + 1).to_string();
    let out = common::datarepo(
        &[
            "--store",
            store,
            "serve",
            "--replica",
            "--refresh-ms",
            &too_long,
            "--addr",
            "127.0.0.1:0",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--refresh-ms") && stderr.contains(&format!("at most {longest}")),
        "{stderr}"
    );
}
