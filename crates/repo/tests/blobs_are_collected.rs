//! Collecting blobs: a temporary blob (never referred to) goes once older
//! than the TTL, bytes included; a blob records no longer refer to stays
//! while a retained commit did, and goes once garbage collection has
//! dropped those commits; a referenced blob always stays; a dry run
//! changes nothing.

use crate::common;

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use bytes::Bytes;
use futures::stream;
use repo::{Repos, Write};
use serde_json::{Value, json};
use store::{Kv, MemoryKv, Retention, Store};

const DID: &str = "did:example:collected";
const HOUR: u64 = 3600;

fn put(rkey: &str, value: Value) -> Write {
    Write::Update {
        collection: "app.test.post".into(),
        rkey: rkey.into(),
        value,
        swap_record: None,
    }
}

fn image(cid: &cid::Cid, size: u64) -> Value {
    json!({"$type": "blob", "ref": {"$link": cid.to_string()}, "mimeType": "application/octet-stream", "size": size})
}

#[test]
fn temporary_and_released_blobs_are_collected() {
    common::rt().block_on(async {
        let offset = Arc::new(AtomicU64::new(0));
        let store = Arc::new(Store::new(MemoryKv::new()));
        let repos = Repos::new(Arc::clone(&store), common::env_ahead_by(&offset, 3));
        let repo = repos.create(DID).await.unwrap();
        let mut cids = Vec::new();
        for (i, name) in ["temporary", "kept", "released"].iter().enumerate() {
            let body = vec![Ok::<_, std::io::Error>(Bytes::from(format!(
                "{name} bytes {i}"
            )))];
            let (cid, info) = repo
                .store_blob(stream::iter(body), 1 << 20, None, name)
                .await
                .unwrap();
            cids.push((cid, info.size));
        }
        let [(temporary, _), (kept, kept_size), (released, released_size)] = cids[..] else {
            unreachable!()
        };
        repo.apply_writes(
            vec![
                put("a", json!({"img": image(&kept, kept_size)})),
                put("b", json!({"img": image(&released, released_size)})),
            ],
            None,
        )
        .await
        .unwrap();
        repo.apply_writes(vec![put("b", json!({"text": "no image"}))], None)
            .await
            .unwrap();
        let blobs = store.kv().blobs();
        let held = |cid| {
            let repo = Arc::clone(&repo);
            async move { repo.blob(&cid).await.unwrap().is_some() }
        };
        let stored = |cid| {
            let blobs = blobs.clone();
            async move { blobs.size(&cid).await.unwrap().is_some() }
        };

        // Young, and every commit retained: nothing goes.
        let report = repos.collect_blobs(HOUR, false).await.unwrap();
        assert_eq!(report.held, 3);
        assert_eq!(
            (
                report.temporary_dropped,
                report.released_dropped,
                report.objects_deleted
            ),
            (0, 0, 0)
        );

        // Two hours on: the temporary one goes (a dry run says so first).
        offset.store(2 * HOUR, Ordering::Relaxed);
        let dry = repos.collect_blobs(HOUR, true).await.unwrap();
        assert_eq!((dry.temporary_dropped, dry.objects_deleted), (1, 1));
        assert!(
            held(temporary).await && stored(temporary).await,
            "a dry run changes nothing"
        );
        let report = repos.collect_blobs(HOUR, false).await.unwrap();
        assert_eq!((report.temporary_dropped, report.released_dropped), (1, 0));
        assert_eq!(report.objects_deleted, 1);
        assert!(!held(temporary).await && !stored(temporary).await);
        // The released one stays while the commit that referred to it is kept.
        assert!(held(released).await && stored(released).await);

        // Once only the newest commit is kept, no retained commit refers to it.
        store.gc(Retention::Last(1), |_| {}).await.unwrap();
        let report = repos.collect_blobs(HOUR, false).await.unwrap();
        assert_eq!((report.temporary_dropped, report.released_dropped), (0, 1));
        assert!(!held(released).await && !stored(released).await);
        assert!(
            held(kept).await && stored(kept).await,
            "a referenced blob stays"
        );
    });
}
