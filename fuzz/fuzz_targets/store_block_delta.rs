//! A block stored as a delta, with any bytes as its value and as its
//! anchor: reading it through `Store` never panics, and returns bytes only
//! when they hash to the block's CID.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use store::{Block, Kv, MemoryKv, Store, WriteOp};

fuzz_target!(|data: &[u8]| {
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let (anchor, tail) = rest.split_at((usize::from(split & 0x7f) * 8).min(rest.len()));
    let anchor = Block::new(0x71, Bytes::copy_from_slice(anchor));
    // With the high bit, a well-formed head naming the stored anchor, so
    // that the splice itself is exercised; else any bytes.
    let mut value = Vec::new();
    if split & 0x80 != 0 {
        value.push(0x01);
        value.extend_from_slice(&anchor.cid().to_bytes());
    }
    value.extend_from_slice(tail);
    let wanted = Block::new(0x71, Bytes::copy_from_slice(tail)).cid();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = Store::new(MemoryKv::new());
        store
            .kv()
            .write(vec![
                WriteOp::Put(
                    keycodec::records::block_key(&anchor.cid().to_bytes()),
                    anchor.bytes().clone(),
                ),
                WriteOp::Put(
                    keycodec::records::block_delta_key(&wanted.to_bytes()),
                    Bytes::from(value),
                ),
            ])
            .await
            .unwrap();
        if let Ok(Some(block)) = store.get_block(&wanted).await {
            assert_eq!(block.cid(), wanted);
        }
    });
});
