//! A collection racing a commit that refers to a temporary blob old enough
//! to be collected: the commit wins (the blob is permanent and its bytes
//! stay) or is refused with `BlobNotFound` (no record refers to it); never
//! a record referring to a blob that is gone. Many rounds, the two started
//! together on a multi-threaded runtime.

use crate::common;

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use bytes::Bytes;
use repo::{Error, Repos, Write};
use serde_json::json;
use store::{Kv, MemoryKv, Store};

const DID: &str = "did:example:race";
const HOUR: u64 = 3600;

#[test]
fn a_commit_and_a_collection_never_leave_a_dangling_reference() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let offset = Arc::new(AtomicU64::new(0));
        let store = Arc::new(Store::new(MemoryKv::new()));
        let repos = Arc::new(Repos::new(
            Arc::clone(&store),
            common::env_ahead_by(&offset, 9),
        ));
        let repo = repos.create(DID).await.unwrap();
        let (mut won, mut refused) = (0, 0);
        for round in 0..200u64 {
            let bytes = Bytes::from(format!("round {round}'s upload"));
            let body = futures::stream::iter(vec![Ok::<_, std::io::Error>(bytes.clone())]);
            let (cid, info) = repo
                .store_blob(body, 1 << 20, None, &format!("upload-{round}"))
                .await
                .unwrap();
            // Old enough to be collected from now on.
            offset.fetch_add(2 * HOUR, Ordering::Relaxed);
            let write = Write::Update {
                collection: "app.test.post".into(),
                rkey: format!("r{round}"),
                value: json!({"image": {"$type": "blob", "ref": {"$link": cid.to_string()},
                                        "mimeType": info.mime_type, "size": info.size}}),
                swap_record: None,
            };
            let committing = {
                let repo = Arc::clone(&repo);
                tokio::spawn(async move { repo.apply_writes(vec![write], None).await })
            };
            let collecting = {
                let repos = Arc::clone(&repos);
                tokio::spawn(async move { repos.collect_blobs(HOUR, false).await })
            };
            let committed = committing.await.unwrap();
            collecting.await.unwrap().unwrap();
            let held = repo.blob(&cid).await.unwrap();
            let stored = store.kv().blobs().size(&cid).await.unwrap();
            match committed {
                Ok(_) => {
                    won += 1;
                    let info = held.expect("a blob a commit refers to is held");
                    assert!(info.permanent && info.refs == 1, "round {round}: {info:?}");
                    assert_eq!(stored, Some(bytes.len() as u64), "round {round}");
                }
                Err(Error::BlobNotFound(named)) => {
                    refused += 1;
                    assert_eq!(named, cid.to_string());
                    assert!(held.is_none(), "round {round}");
                    let record = repo
                        .get_record("app.test.post", &format!("r{round}"))
                        .await
                        .unwrap();
                    assert!(record.is_none(), "round {round}");
                }
                Err(e) => panic!("round {round}: {e}"),
            }
        }
        // Both outcomes are possible; the test is that neither dangles.
        assert_eq!(won + refused, 200);
    });
}
