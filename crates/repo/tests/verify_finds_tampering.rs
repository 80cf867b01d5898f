//! `verify_car` fails on any change to an exported CAR: every byte of every
//! block flipped in turn is caught and the error names that block; a CAR
//! whose commit is re-signed with another key fails against the original
//! key; an unsigned history fails; an incremental export verifies only as
//! incremental.

use crate::common;

use std::sync::Arc;

use repo::{Curve, Error, PublicKey, Repository, SigningKey, VerifyOptions, verify_car};
use store::MemoryKv;

struct Signed {
    _dir: testkit::TempDir,
    key: PublicKey,
    repo: Arc<Repository<MemoryKv>>,
    _repos: repo::Repos<MemoryKv>,
}

async fn signed_repo() -> Signed {
    let dir = testkit::tempdir("verify");
    let file = dir.path().join("k.key");
    let key = Arc::new(SigningKey::generate(Curve::K256, |b| b.fill(0x21)));
    key.write_new_file(&file).unwrap();
    let repos = common::repos();
    let repo = repos
        .create_signed("did:web:a", Arc::clone(&key), file)
        .await
        .unwrap();
    for batch in 0..3 {
        let writes = (0..2)
            .map(|i| repo::Write::Create {
                collection: "app.x.post".into(),
                rkey: Some(format!("b{batch}r{i}")),
                value: serde_json::json!({"text": format!("{batch}/{i}")}),
            })
            .collect();
        repo.apply_writes(writes, None).await.unwrap();
    }
    Signed {
        _dir: dir,
        key: *key.public_key(),
        repo,
        _repos: repos,
    }
}

fn options(keys: &[PublicKey]) -> VerifyOptions {
    VerifyOptions {
        keys: keys.to_vec(),
        ..VerifyOptions::default()
    }
}

/// Each block's CID and where its bytes are in the file.
async fn block_spans(car: &[u8]) -> Vec<(cid::Cid, std::ops::Range<usize>)> {
    let mut reader = iroh_car::CarReader::new(car).await.unwrap();
    let mut spans = Vec::new();
    while let Some((cid, bytes)) = reader.next_block().await.unwrap() {
        let at = car
            .windows(bytes.len())
            .position(|w| w == &bytes[..])
            .unwrap();
        spans.push((cid, at..at + bytes.len()));
    }
    spans
}

#[test]
fn every_flipped_byte_of_every_block_is_named() {
    common::rt().block_on(async {
        let signed = signed_repo().await;
        let (car, _) = signed
            .repo
            .export_history_car(Vec::new(), |_| {})
            .await
            .unwrap();
        let report = verify_car(&car[..], &options(&[signed.key])).await.unwrap();
        assert_eq!(report.commits.len(), 4);
        // The head names 6 records; the older commits' (one-shard) trees
        // name 4, 2 and 0.
        assert_eq!((report.records, report.history_records), (6, 6));
        let spans = block_spans(&car).await;
        // A commit, shards, records, the declarations block.
        assert!(spans.len() >= 8, "{}", spans.len());
        for (cid, span) in spans {
            for at in span {
                let mut tampered = car.clone();
                tampered[at] ^= 0x01;
                let err = verify_car(&tampered[..], &options(&[signed.key]))
                    .await
                    .unwrap_err();
                assert!(
                    err.to_string().contains(&cid.to_string()),
                    "byte {at} of {cid}: {err}"
                );
            }
        }
    });
}

#[test]
fn a_commit_signed_again_by_another_key_fails_against_the_original() {
    common::rt().block_on(async {
        let signed = signed_repo().await;
        let (car, _) = signed
            .repo
            .export_car(Vec::new(), None, |_| {})
            .await
            .unwrap();
        let spans = block_spans(&car).await;
        let (root, span) = spans[0].clone();
        let commit = repo::CommitData::decode(root, &car[span]).unwrap();
        let other = SigningKey::generate(Curve::K256, |b| b.fill(0x55));
        let forged = commit.signed(&other).encode();

        // The same file with the forged commit as its root.
        let header = iroh_car::CarHeader::new_v1(vec![forged.cid()]);
        let mut writer = iroh_car::CarWriter::new(header, Vec::new());
        writer.write(forged.cid(), forged.bytes()).await.unwrap();
        let mut reader = iroh_car::CarReader::new(&car[..]).await.unwrap();
        reader.next_block().await.unwrap();
        while let Some((cid, bytes)) = reader.next_block().await.unwrap() {
            writer.write(cid, bytes).await.unwrap();
        }
        let forged_car = writer.finish().await.unwrap();

        let err = verify_car(&forged_car[..], &options(&[signed.key]))
            .await
            .unwrap_err();
        assert!(
            matches!(err, Error::Untrusted { commit, .. } if commit == forged.cid()),
            "{err}"
        );
        // The forger's own key verifies it: the signature is all that differs.
        verify_car(&forged_car[..], &options(&[*other.public_key()]))
            .await
            .unwrap();
    });
}

#[test]
fn unsigned_histories_and_incremental_exports() {
    common::rt().block_on(async {
        let repos = common::repos();
        let unsigned = repos.create("did:web:u").await.unwrap();
        unsigned
            .apply_writes(common::posts("app.x.post", 2), None)
            .await
            .unwrap();
        let (car, _) = unsigned.export_car(Vec::new(), None, |_| {}).await.unwrap();
        let key = *SigningKey::generate(Curve::P256, |b| b.fill(1)).public_key();
        let err = verify_car(&car[..], &options(&[key])).await.unwrap_err();
        assert!(err.to_string().contains("not signed"), "{err}");

        let signed = signed_repo().await;
        let log = signed.repo.log(10).await.unwrap();
        let since = log[2].commit.rev;
        let (car, _) = signed
            .repo
            .export_car(Vec::new(), Some(since), |_| {})
            .await
            .unwrap();
        let err = verify_car(&car[..], &options(&[signed.key]))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("is not in the file"), "{err}");
        let report = verify_car(
            &car[..],
            &VerifyOptions {
                keys: vec![signed.key],
                incremental: true,
                ..VerifyOptions::default()
            },
        )
        .await
        .unwrap();
        assert_eq!(report.commits.len(), 2);
        assert!(report.absent > 0);
    });
}

#[test]
fn record_proofs_show_presence_and_absence() {
    common::rt().block_on(async {
        let signed = signed_repo().await;
        for (rkey, present) in [("b1r0", true), ("nope", false)] {
            let (proof, found) = signed
                .repo
                .export_record_car(Vec::new(), "app.x.post", rkey)
                .await
                .unwrap();
            assert_eq!(found.is_some(), present);
            let proven =
                repo::verify_record(&proof[..], "did:web:a", "app.x.post", rkey, &[signed.key])
                    .await
                    .unwrap();
            assert_eq!(proven.cid, found);
            let other = *SigningKey::generate(Curve::K256, |b| b.fill(9)).public_key();
            assert!(
                repo::verify_record(&proof[..], "did:web:a", "app.x.post", rkey, &[other])
                    .await
                    .is_err()
            );
        }
    });
}
