//! A record may refer only to blobs its repository holds, as they are
//! stored: an unknown CID is refused (BlobNotFound), a claimed type or size
//! that is not the stored blob's is refused, and nothing of a refused
//! commit is written. A blob referred to becomes permanent, and counts the
//! head's records that refer to it, across creates, updates and deletes.

use crate::common;

use repo::{Error, Write};
use serde_json::{Value, json};
use store::{Kv, blob_cid};

const DID: &str = "did:example:blobs";
const POSTS: &str = "app.test.post";

fn image(cid: &cid::Cid, mime: &str, size: u64) -> Value {
    json!({"$type": "blob", "ref": {"$link": cid.to_string()}, "mimeType": mime, "size": size})
}

fn put(rkey: &str, value: Value) -> Write {
    Write::Update {
        collection: POSTS.into(),
        rkey: rkey.into(),
        value,
        swap_record: None,
    }
}

#[test]
fn references_are_checked_and_counted() {
    common::rt().block_on(async {
        let repos = common::repos();
        let repo = repos.create(DID).await.unwrap();
        let png = b"\x89PNG\r\n\x1a\n pretend".to_vec();
        let cid = blob_cid(&png);
        let unknown = blob_cid(b"never uploaded");
        let info = repo.add_blob(&cid, "image/png", png.len() as u64).await.unwrap();
        assert!(!info.permanent, "temporary until a commit refers to it");
        let size = png.len() as u64;

        let refused = repo
            .apply_writes(vec![put("a", json!({"embed": image(&unknown, "image/png", 4)}))], None)
            .await;
        assert!(matches!(&refused, Err(Error::BlobNotFound(c)) if *c == unknown.to_string()), "{refused:?}");
        for (mime, claimed) in [("image/jpeg", size), ("image/png", size + 1)] {
            let refused = repo
                .apply_writes(vec![put("a", json!({"embed": image(&cid, mime, claimed)}))], None)
                .await;
            assert!(matches!(refused, Err(Error::BlobMismatch { .. })), "{refused:?}");
        }
        assert!(repo.get_record(POSTS, "a").await.unwrap().is_none(), "nothing written");
        assert!(!repo.blob(&cid).await.unwrap().unwrap().permanent);

        // Two records refer to it (one twice: counted once).
        repo.apply_writes(
            vec![
                put("a", json!({"images": [image(&cid, "image/png", size), image(&cid, "image/png", size)]})),
                put("b", json!({"avatar": image(&cid, "image/png", size)})),
            ],
            None,
        )
        .await
        .unwrap();
        let held = repo.blob(&cid).await.unwrap().unwrap();
        assert_eq!((held.permanent, held.refs, held.released_rev), (true, 2, None));
        assert!(held.first_rev.is_some());
        let listed: Vec<String> = repo.list_blobs(None, 10).await.unwrap().into_iter().map(|(c, _)| c).collect();
        assert_eq!(listed, [cid.to_string()]);

        // One record gone, the other no longer referring: none refer.
        repo.apply_writes(
            vec![Write::Delete {
                collection: POSTS.into(),
                rkey: "a".into(),
                swap_record: None,
            }],
            None,
        )
        .await
        .unwrap();
        assert_eq!(repo.blob(&cid).await.unwrap().unwrap().refs, 1);
        let result = repo
            .apply_writes(vec![put("b", json!({"text": "no picture"}))], None)
            .await
            .unwrap();
        let released = repo.blob(&cid).await.unwrap().unwrap();
        assert_eq!(released.refs, 0);
        assert_eq!(released.released_rev, Some(result.rev.as_u64()));
        // A new handle (another process) reads the same references.
        let again = repo::Repos::new(std::sync::Arc::clone(repos.store()), common::env());
        let reopened = again.open(DID).await.unwrap();
        reopened
            .apply_writes(vec![put("b", json!({"avatar": image(&cid, "image/png", size)}))], None)
            .await
            .unwrap();
        assert_eq!(reopened.blob(&cid).await.unwrap().unwrap().refs, 1);
        let kv = repos.store().kv();
        assert!(kv
            .get(&keycodec::records::record_blobs_key(DID, POSTS, "b"))
            .await
            .unwrap()
            .is_some());
    });
}
