//! `Store::each_block` (many blocks read by range scans over their keys)
//! hands every asked-for place exactly one answer, the one
//! `Store::get_block` gives for its CID: a stored block, `None` for a
//! missing one, `Corrupt` for bytes that do not hash to it. Stored blocks
//! the caller does not ask for lie between the asked ones (sometimes far
//! more of them than a scan reads), places repeat CIDs, and some CIDs are
//! not the usual CIDv1/SHA-256/1-byte codec: codecs of two varint bytes,
//! whose keys sort in another order than the CIDs.

use std::collections::BTreeMap;

use bytes::Bytes;
use cid::Cid;
use multihash_codetable::{Code, MultihashDigest};
use proptest::prelude::*;
use store::{Error, Kv, MemoryKv, Store, WriteOp};

/// What a read answered, comparable across the two ways of reading.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Block(Bytes),
    Missing,
    Corrupt,
    Other(String),
}

fn answer(result: Result<Option<store::Block>, Error>, cid: &Cid) -> Answer {
    match result {
        Ok(Some(block)) => {
            assert_eq!(block.cid(), *cid, "a block answered for another CID");
            Answer::Block(block.bytes().clone())
        }
        Ok(None) => Answer::Missing,
        Err(Error::Corrupt { cid: c }) if c == *cid => Answer::Corrupt,
        Err(e) => Answer::Other(e.to_string()),
    }
}

/// A CID of `bytes` in one of several shapes: mostly the usual one.
fn cid_of(bytes: &[u8], shape: u8) -> Cid {
    match shape % 8 {
        0 => Cid::new_v1(0x55, Code::Sha2_256.digest(bytes)),
        // Codecs of two varint bytes, whose keys sort in another order
        // than the codecs (0x81 is `81 01`, 0x100 `80 02`, 0x181 `81 03`).
        1 => Cid::new_v1(0x81, Code::Sha2_256.digest(bytes)),
        2 => Cid::new_v1(0x100, Code::Sha2_256.digest(bytes)),
        3 => Cid::new_v1(0x181, Code::Sha2_256.digest(bytes)),
        _ => Cid::new_v1(0x71, Code::Sha2_256.digest(bytes)),
    }
}

/// One block of the test: its bytes, CID shape, and how it is kept.
#[derive(Debug, Clone)]
struct Case {
    seed: u32,
    shape: u8,
    /// 0: stored and asked for; 1: stored, not asked for; 2: never
    /// stored, asked for; 3: stored with other bytes, asked for.
    kind: u8,
    /// How many places ask for it (when asked for at all).
    asks: u8,
}

fn cases() -> impl Strategy<Value = Vec<Case>> {
    prop::collection::vec(
        (any::<u32>(), any::<u8>(), 0u8..10, 1u8..3).prop_map(|(seed, shape, k, asks)| Case {
            seed,
            shape,
            // Mostly stored blocks, a third of them not asked for.
            kind: match k {
                0..=4 => 0,
                5..=7 => 1,
                8 => 2,
                _ => 3,
            },
            asks,
        }),
        0..600,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn blocks_read_together_match_point_reads(
        cases in cases(),
        // Stored blocks asked for by nobody, all at once: thick runs of
        // them make scans stop short of the blocks asked for.
        unasked in 0usize..400,
        shuffle in any::<u64>(),
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let store = Store::new(MemoryKv::new());
            let mut stored = Vec::new();
            let mut corrupt = Vec::new();
            let mut asked: Vec<Cid> = Vec::new();
            let mut seen = std::collections::HashSet::new();
            for case in &cases {
                let bytes = Bytes::from(format!("block {} {}", case.seed, case.shape));
                let cid = cid_of(&bytes, case.shape);
                if !seen.insert(cid) {
                    continue;
                }
                match case.kind {
                    0 | 1 => stored.push((cid, bytes)),
                    3 => corrupt.push(cid),
                    _ => {}
                }
                if case.kind != 1 {
                    asked.extend(std::iter::repeat_n(cid, usize::from(case.asks)));
                }
            }
            for n in 0..unasked {
                let bytes = Bytes::from(format!("unasked {n}"));
                stored.push((cid_of(&bytes, 7), bytes));
            }
            store.put_blocks(&stored).await.unwrap();
            let damaged = corrupt
                .iter()
                .map(|cid| WriteOp::Put(keycodec::records::block_key(&cid.to_bytes()), Bytes::from_static(b"other bytes")))
                .collect();
            store.kv().write(damaged).await.unwrap();
            // The places in an order of their own.
            let mut state = shuffle | 1;
            for i in (1..asked.len()).rev() {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                asked.swap(i, (state % (i as u64 + 1)) as usize);
            }

            let mut got: BTreeMap<usize, Answer> = BTreeMap::new();
            store
                .each_block(asked.len(), |i| asked[i], |i, result| -> Result<(), Error> {
                    let previous = got.insert(i, answer(result, &asked[i]));
                    assert!(previous.is_none(), "place {i} answered twice");
                    Ok(())
                })
                .await
                .unwrap();
            prop_assert_eq!(got.len(), asked.len(), "every place answered once");
            for (i, cid) in asked.iter().enumerate() {
                let expected = answer(store.get_block(cid).await, cid);
                prop_assert_eq!(&got[&i], &expected, "place {} ({})", i, cid);
            }
            Ok(())
        })?;
    }
}

/// The callback's own error.
#[derive(Debug, PartialEq, Eq)]
enum Stop {
    Asked,
    Store(String),
}

impl From<Error> for Stop {
    fn from(e: Error) -> Self {
        Self::Store(e.to_string())
    }
}

/// The first error the callback returns ends the reads and is returned.
#[tokio::test]
async fn an_error_of_the_callback_stops_the_reads() {
    let store = Store::new(MemoryKv::new());
    let blocks: Vec<(Cid, Bytes)> = (0..300)
        .map(|n| {
            let bytes = Bytes::from(format!("b{n}"));
            (cid_of(&bytes, 7), bytes)
        })
        .collect();
    store.put_blocks(&blocks).await.unwrap();
    let mut calls = 0;
    let result: Result<(), Stop> = store
        .each_block(
            blocks.len(),
            |i| blocks[i].0,
            |_, _| {
                calls += 1;
                if calls == 10 {
                    Err(Stop::Asked)
                } else {
                    Ok(())
                }
            },
        )
        .await;
    assert_eq!(result, Err(Stop::Asked));
    assert_eq!(calls, 10);
}
