//! An incremental file (`export --since`) carries only what changed; every
//! other record its tree names must already be in the store. An older copy
//! that lost some of them refuses the increment, naming the first missing
//! record in tree order, and keeps its head.

use crate::common;

use keycodec::records;
use repo::{Error, Repos, Write};
use serde_json::json;
use store::{Kv as _, MemoryKv, WriteOp};

const DID: &str = "did:web:increments.example";
const COLLECTION: &str = "app.bsky.feed.post";

async fn export(repos: &Repos<MemoryKv>, since: Option<rkey::Tid>) -> Vec<u8> {
    let repo = repos.open(DID).await.unwrap();
    repo.export_car(Vec::new(), since, |_| {}).await.unwrap().0
}

#[test]
fn an_increment_is_refused_where_records_it_leaves_out_are_missing() {
    common::rt().block_on(async {
        let repos = common::repos();
        let repo = repos.create(DID).await.unwrap();
        // Distinct records (no two share a block), enough for several of
        // the reads that check them together.
        let writes = (0..300)
            .map(|i| Write::Create {
                collection: COLLECTION.into(),
                rkey: Some(format!("k{i:04}")),
                value: json!({ "n": i }),
            })
            .collect();
        repo.apply_writes(writes, None).await.unwrap();
        let full = export(&repos, None).await;
        let base = repo.head().await.unwrap().rev;
        repo.apply_writes(
            vec![Write::Create {
                collection: COLLECTION.into(),
                rkey: Some("late".into()),
                value: json!({ "late": true }),
            }],
            None,
        )
        .await
        .unwrap();
        let since = export(&repos, Some(base)).await;

        let copy = common::repos();
        copy.import_car(&full[..], None).await.unwrap();
        let before = copy.open(DID).await.unwrap().head().await.unwrap();
        let mut lost = Vec::new();
        for rkey in ["k0250", "k0120", "k0299"] {
            let cid = repo
                .get_record(COLLECTION, rkey)
                .await
                .unwrap()
                .unwrap()
                .cid();
            lost.push(WriteOp::Delete(records::block_key(&cid.to_bytes())));
        }
        copy.store().kv().write(lost).await.unwrap();

        let err = copy.import_car(&since[..], Some(DID)).await.unwrap_err();
        let first = repo
            .get_record(COLLECTION, "k0120")
            .await
            .unwrap()
            .unwrap()
            .cid();
        assert!(matches!(err, Error::InvalidCar(_)), "{err}");
        assert!(
            err.to_string().contains(&format!(
                "record {COLLECTION}/k0120 ({first}) is neither in the file nor in the store"
            )),
            "{err}"
        );
        assert_eq!(copy.open(DID).await.unwrap().head().await.unwrap(), before);

        // The same increment on a whole copy applies.
        let whole = common::repos();
        whole.import_car(&full[..], None).await.unwrap();
        whole.import_car(&since[..], Some(DID)).await.unwrap();
        assert_eq!(
            whole.open(DID).await.unwrap().head().await.unwrap(),
            repo.head().await.unwrap()
        );
    });
}
