//! `Store::get_shard_block`, the read a firehose replay makes of each
//! commit's shards (delta key first, anchors remembered across reads),
//! returns exactly what `Store::get_block` returns for every shard version
//! stored, whether in full or as a delta, through one memo shared by all
//! the reads, from a store with nothing cached.

use crate::common;

use std::sync::Arc;

use keycodec::{
    RecordType,
    records::{DecodedKey, decode_key},
};
use repo::{Repos, Write};
use serde_json::json;
use store::{AnchorMemo, Kv, MemoryKv, Store};

const DID: &str = "did:web:example.com";
const POST: &str = "app.bsky.feed.post";

#[test]
fn shard_blocks_read_for_replay_equal_plain_reads() {
    common::rt().block_on(async {
        let kv = MemoryKv::new();
        let repos = Repos::new(Arc::new(Store::new(kv.clone())), common::env());
        let repo = repos.create(DID).await.unwrap();
        repo.apply_writes(common::posts(POST, 300), None)
            .await
            .unwrap();
        for i in 0..120 {
            repo.apply_writes(
                vec![Write::Update {
                    collection: POST.into(),
                    rkey: common::post_rkey((i * 13) % 300),
                    value: json!({ "text": format!("edit {i}") }),
                    swap_record: None,
                }],
                None,
            )
            .await
            .unwrap();
        }

        let reader = Store::new(kv.clone());
        let memo = AnchorMemo::default();
        let (mut full, mut deltas) = (0, 0);
        for t in [RecordType::Block, RecordType::BlockDelta] {
            for (key, _) in kv.scan(&t.range(), false, usize::MAX).await.unwrap() {
                let cid = match decode_key(&key).unwrap() {
                    DecodedKey::Block { cid } => {
                        full += 1;
                        cid::Cid::try_from(cid).unwrap()
                    }
                    DecodedKey::BlockDelta { cid } => {
                        deltas += 1;
                        cid::Cid::try_from(cid).unwrap()
                    }
                    other => panic!("{other:?}"),
                };
                if cid.codec() != 0x71 {
                    continue;
                }
                let plain = reader.get_block(&cid).await.unwrap().expect("stored");
                let for_replay = reader
                    .get_shard_block(&cid, &memo)
                    .await
                    .unwrap()
                    .expect("stored");
                assert_eq!(for_replay.cid(), cid);
                assert_eq!(for_replay.bytes(), plain.bytes(), "{cid}");
            }
        }
        assert!(deltas >= 60, "most shard versions are deltas ({deltas})");
        assert!(full > 0);

        // A block nobody stored.
        let absent = store::Block::new(0x71, bytes::Bytes::from_static(b"\xa0"));
        assert!(
            reader
                .get_shard_block(&absent.cid(), &memo)
                .await
                .unwrap()
                .is_none()
        );
    });
}
