//! The record index keeps small records inline: reading or listing them is
//! one lookup, the inline bytes are checked against the CID like any
//! block, and large records are read from their block.

use bytes::Bytes;
use store::{
    Block, Commit, Error, Head, INLINE_RECORD_BYTES, Kv, MemoryKv, RecordChange, Store, WriteOp,
};

const REPO: &str = "did:web:inline.example";

fn block(bytes: Vec<u8>) -> Block {
    Block::new(0x71, Bytes::from(bytes))
}

#[tokio::test]
async fn inline_records_read_back_verified() {
    let store = Store::new(MemoryKv::new());
    let small = block(b"a small record".to_vec());
    let large = block(vec![7; INLINE_RECORD_BYTES + 1]);
    let commit = block(b"commit".to_vec());
    store
        .commit(Commit {
            repo: REPO.into(),
            expected: None,
            head: Head {
                commit: commit.cid(),
                rev: 1,
            },
            blocks: vec![commit.clone(), small.clone(), large.clone()],
            records: vec![
                RecordChange {
                    collection: "a.b.c".into(),
                    rkey: "large".into(),
                    record: Some(large.clone()),
                },
                RecordChange {
                    collection: "a.b.c".into(),
                    rkey: "small".into(),
                    record: Some(small.clone()),
                },
            ],
            collections: Vec::new(),
            index: Vec::new(),
            history: store::LogChange::default(),
            event: None,
            stream: None,
        })
        .await
        .unwrap();
    assert_eq!(
        store.record_block(REPO, "a.b.c", "small").await.unwrap(),
        Some(small.clone())
    );
    assert_eq!(
        store.record_block(REPO, "a.b.c", "large").await.unwrap(),
        Some(large.clone())
    );
    assert_eq!(
        store.record(REPO, "a.b.c", "small").await.unwrap(),
        Some(small.cid())
    );
    let listed = store
        .list_record_blocks(REPO, "a.b.c", None, false, 10)
        .await
        .unwrap();
    assert_eq!(
        listed,
        vec![
            ("large".to_owned(), large),
            ("small".to_owned(), small.clone())
        ]
    );

    // Tampered inline bytes are corruption naming the CID, never data.
    let key = keycodec::records::record_index_key(REPO, "a.b.c", "small");
    let mut value = small.cid().to_bytes();
    value.extend_from_slice(b"another record");
    store
        .kv()
        .write(vec![WriteOp::Put(key, Bytes::from(value))])
        .await
        .unwrap();
    let err = store
        .record_block(REPO, "a.b.c", "small")
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Corrupt { cid } if cid == small.cid()),
        "{err}"
    );
    let err = store
        .list_record_blocks(REPO, "a.b.c", None, false, 10)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err}");
}
