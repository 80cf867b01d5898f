//! `MemoryKv` applies large all-put batches by merging them in bulk; the
//! result is the same as applying each put in order (later puts win),
//! checked against a `BTreeMap` model.

use std::collections::BTreeMap;

use bytes::Bytes;
use keycodec::KeyRange;
use proptest::prelude::*;
use store::{Kv, MemoryKv, WriteOp};

fn batch(keys: Vec<u16>, tag: u8) -> Vec<WriteOp> {
    keys.into_iter()
        .enumerate()
        .map(|(i, k)| {
            WriteOp::Put(
                k.to_be_bytes().to_vec(),
                Bytes::from(vec![tag, (i % 251) as u8]),
            )
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]
    #[test]
    fn bulk_and_single_puts_agree(
        batches in prop::collection::vec((prop::collection::vec(0u16..6000, 1..9000), any::<bool>()), 1..5)
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(async {
            let kv = MemoryKv::new();
            let mut model: BTreeMap<Vec<u8>, Bytes> = BTreeMap::new();
            for (tag, (keys, delete_some)) in batches.into_iter().enumerate() {
                let mut ops = batch(keys, tag as u8);
                if delete_some {
                    ops.push(WriteOp::Delete(7u16.to_be_bytes().to_vec()));
                }
                for op in &ops {
                    match op {
                        WriteOp::Put(k, v) => { model.insert(k.clone(), v.clone()); }
                        WriteOp::Delete(k) => { model.remove(k); }
                        WriteOp::Merge(..) => unreachable!("this test writes no merges"),
                    }
                }
                let _ = kv.apply(ops).await.unwrap();
            }
            let all = kv.scan(&KeyRange::prefix(&[]), false, usize::MAX).await.unwrap();
            let got: Vec<(Vec<u8>, Bytes)> = all.into_iter().map(|(k, v)| (k.to_vec(), v)).collect();
            let want: Vec<(Vec<u8>, Bytes)> = model.into_iter().collect();
            assert_eq!(got, want);
        });
    }
}
