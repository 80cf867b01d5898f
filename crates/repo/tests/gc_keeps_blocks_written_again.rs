//! A block that garbage collection found unreachable, but that a commit
//! writes again (the same content, so the same CID) before the sweep
//! reaches it, is not deleted: the commit's tree needs it.

use crate::common;

use std::sync::Arc;

use common::{PauseAt, PausingKv};
use repo::{Repos, Write};
use serde_json::json;
use store::{Retention, Store};

const DID: &str = "did:web:example.com";
const POST: &str = "app.bsky.feed.post";

fn put(text: &str) -> Write {
    Write::Update {
        collection: POST.into(),
        rkey: "r".into(),
        value: json!({ "text": text }),
        swap_record: None,
    }
}

#[test]
fn a_block_written_again_during_a_collection_stays() {
    common::rt().block_on(async {
        let kv = PausingKv::new(PauseAt::Deletions);
        let repos = Repos::new(Arc::new(Store::new(kv.clone())), common::env());
        let repo = repos.create(DID).await.unwrap();
        let first = repo
            .apply_writes(
                vec![Write::Create {
                    collection: POST.into(),
                    rkey: Some("r".into()),
                    value: json!({ "text": "A" }),
                }],
                None,
            )
            .await
            .unwrap();
        repo.apply_writes(vec![put("B")], None).await.unwrap();

        // The collection finds "A"'s block unreachable; before it deletes
        // anything, the record is set back to "A".
        let release = kv.arm();
        let gc = repos.store().gc(Retention::Last(1), |_| {});
        let commit = async {
            kv.reached().await;
            let again = repo.apply_writes(vec![put("A")], None).await.unwrap();
            assert_eq!(again.results[0].cid, first.results[0].cid);
            release.send(()).unwrap();
        };
        let (report, ()) = tokio::join!(gc, commit);
        report.unwrap();

        let fresh = Repos::new(Arc::new(Store::new(kv.clone())), common::env());
        let report = fresh.check(DID, |_| {}).await.unwrap();
        assert!(report.is_intact(), "{:#?}", report.problems);
    });
}
