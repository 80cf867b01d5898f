//! CAR v1 export and import: `@ipld/car` reads our files; export is
//! deterministic; import reproduces the repository exactly (also from an
//! incremental `since` file, and from a file that repeats its blocks under
//! another codec); bad files are rejected and change nothing.

use crate::common;

use repo::{Error, Repos, Write};
use serde_json::json;
use store::{Kv as _, MemoryKv};

const DID: &str = "did:web:car.example";

async fn populated() -> (Repos<MemoryKv>, Vec<rkey::Tid>) {
    let repos = common::repos();
    let repo = repos.create(DID).await.unwrap();
    let mut revs = vec![repo.head().await.unwrap().rev];
    for batch in 0..6 {
        let writes = (0..50)
            .map(|i| Write::Update {
                collection: ["app.bsky.feed.post", "app.bsky.feed.like"][i % 2].into(),
                rkey: format!("r{batch}-{i:03}"),
                // Some records are identical: their block is written once.
                value: json!({ "n": i % 7, "link": { "$link": "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm" } }),
                swap_record: None,
            })
            .collect();
        revs.push(repo.apply_writes(writes, None).await.unwrap().rev);
    }
    repo.apply_writes(
        vec![Write::Delete {
            collection: "app.bsky.feed.post".into(),
            rkey: "r0-000".into(),
            swap_record: None,
        }],
        None,
    )
    .await
    .unwrap();
    (repos, revs)
}

async fn export(repos: &Repos<MemoryKv>, since: Option<rkey::Tid>) -> Vec<u8> {
    let repo = repos.open(DID).await.unwrap();
    let (out, report) = repo.export_car(Vec::new(), since, |_| {}).await.unwrap();
    assert_eq!(report.commit, repo.head().await.unwrap().commit);
    out
}

async fn count_blocks(car: &[u8]) -> usize {
    let mut reader = iroh_car::CarReader::new(car).await.unwrap();
    let mut n = 0;
    while reader.next_block().await.unwrap().is_some() {
        n += 1;
    }
    n
}

/// A CAR's roots and its blocks in file order.
async fn car_blocks(car: &[u8]) -> (Vec<cid::Cid>, Vec<(cid::Cid, Vec<u8>)>) {
    let mut reader = iroh_car::CarReader::new(car).await.unwrap();
    let roots = reader.header().roots().to_vec();
    let mut blocks = Vec::new();
    while let Some(block) = reader.next_block().await.unwrap() {
        blocks.push(block);
    }
    (roots, blocks)
}

async fn all_records(repos: &Repos<MemoryKv>) -> Vec<(String, String, serde_json::Value)> {
    let repo = repos.open(DID).await.unwrap();
    let mut out = Vec::new();
    for (collection, _) in repo.collections().await {
        for (rkey, r) in repo
            .list_records(&collection, None, false, usize::MAX)
            .await
            .unwrap()
        {
            out.push((collection.clone(), rkey, r.to_json()));
        }
    }
    out
}

#[test]
fn ipld_car_reads_the_export() {
    common::rt().block_on(async {
        let (repos, _) = populated().await;
        let car = export(&repos, None).await;
        let dir = testkit::tempdir("car");
        let path = dir.path().join("repo.car");
        std::fs::write(&path, &car).unwrap();
        let answer = testkit::run_node("car-read.mjs", &format!("{}\n", path.display()));
        let oracle: serde_json::Value = serde_json::from_str(&answer[0]).unwrap();
        let head = repos.open(DID).await.unwrap().head().await.unwrap();
        assert_eq!(oracle["roots"], json!([head.commit.to_string()]));
        let blocks = oracle["blocks"].as_array().unwrap();
        assert_eq!(
            blocks[0],
            json!(head.commit.to_string()),
            "the commit comes first"
        );
        assert_eq!(oracle["verified"], json!(blocks.len()));
        assert_eq!(oracle["decoded"], json!(blocks.len()));
        // 7 distinct record values, at least one shard, the commit.
        assert!(blocks.len() > 8);
        let mut distinct = blocks.clone();
        distinct.sort_by_key(|b| b.to_string());
        distinct.dedup();
        assert_eq!(distinct.len(), blocks.len(), "each block once");
    });
}

#[test]
fn import_reproduces_the_repository() {
    common::rt().block_on(async {
        let (repos, _) = populated().await;
        let car = export(&repos, None).await;
        assert_eq!(car, export(&repos, None).await, "export is deterministic");
        let fresh = common::repos();
        let report = fresh.import_car(&car[..], Some(DID)).await.unwrap();
        assert_eq!(report.records, 299);
        // Every block of the file is reached and stored once.
        assert_eq!(report.unreachable, 0);
        assert_eq!(report.blocks, count_blocks(&car).await as u64);
        let (a, b) = (
            repos.open(DID).await.unwrap(),
            fresh.open(DID).await.unwrap(),
        );
        assert_eq!(a.head().await.unwrap(), b.head().await.unwrap());
        assert_eq!(all_records(&repos).await, all_records(&fresh).await);
        assert_eq!(export(&fresh, None).await, car, "re-export is identical");
        // The imported repository takes new writes.
        b.apply_writes(
            vec![Write::Create {
                collection: "app.bsky.feed.post".into(),
                rkey: None,
                value: json!({}),
            }],
            None,
        )
        .await
        .unwrap();
    });
}

#[test]
fn incremental_export_applies_on_the_older_copy() {
    common::rt().block_on(async {
        let (repos, revs) = populated().await;
        let repo = repos.open(DID).await.unwrap();
        // An older copy: a full export, before two more commits.
        let old_car = export(&repos, None).await;
        let base = repo.head().await.unwrap().rev;
        for i in 0..2 {
            repo.apply_writes(
                vec![Write::Update {
                    collection: "app.bsky.feed.post".into(),
                    rkey: format!("late-{i}"),
                    value: json!({ "late": i }),
                    swap_record: None,
                }],
                None,
            )
            .await
            .unwrap();
        }
        let since = export(&repos, Some(base)).await;
        let full = export(&repos, None).await;
        // The head commit, the two new records and the shards on their
        // paths; not the older records and shards.
        let (since_blocks, full_blocks) = (count_blocks(&since).await, count_blocks(&full).await);
        assert!(
            since_blocks < full_blocks / 2,
            "{since_blocks} blocks since, {full_blocks} in all"
        );

        // The incremental file alone lacks the older blocks.
        let fresh = common::repos();
        let err = fresh.import_car(&since[..], None).await.unwrap_err();
        assert!(matches!(err, Error::InvalidCar(_)), "{err}");
        assert!(fresh.list().await.unwrap().is_empty());

        // On the older copy it brings it up to date.
        let copy = common::repos();
        copy.import_car(&old_car[..], None).await.unwrap();
        copy.import_car(&since[..], Some(DID)).await.unwrap();
        assert_eq!(
            copy.open(DID).await.unwrap().head().await.unwrap(),
            repo.head().await.unwrap()
        );
        assert_eq!(all_records(&copy).await, all_records(&repos).await);

        // An older file does not move a repository backwards.
        let err = copy.import_car(&old_car[..], None).await.unwrap_err();
        assert!(err.to_string().contains("not newer"), "{err}");
        assert!(repo.commit_at(revs[1]).await.is_ok());
    });
}

#[test]
fn bad_files_are_rejected_and_change_nothing() {
    common::rt().block_on(async {
        let (repos, _) = populated().await;
        let car = export(&repos, None).await;
        let target = common::repos();
        let mut cases: Vec<(&str, Vec<u8>)> = vec![
            ("empty", Vec::new()),
            ("not a CAR", b"hello world".to_vec()),
            ("truncated", car[..car.len() - 10].to_vec()),
            ("truncated header", car[..5].to_vec()),
        ];
        for offset in [car.len() / 3, car.len() / 2, car.len() - 3] {
            let mut tampered = car.clone();
            tampered[offset] ^= 0x01;
            cases.push(("tampered", tampered));
        }
        for (what, bytes) in cases {
            let err = target.import_car(&bytes[..], None).await.unwrap_err();
            assert!(
                matches!(err, Error::InvalidCar(_)),
                "{what}: expected InvalidCar, got {err}"
            );
            assert!(
                target.list().await.unwrap().is_empty(),
                "{what}: nothing written"
            );
        }
        let err = target
            .import_car(&car[..], Some("did:web:other.example"))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("did:web:other.example"), "{err}");
    });
}

#[test]
fn record_proof_holds_the_path_and_the_record() {
    common::rt().block_on(async {
        let (repos, _) = populated().await;
        let repo = repos.open(DID).await.unwrap();
        let (car, found) = repo
            .export_record_car(Vec::new(), "app.bsky.feed.like", "r3-001")
            .await
            .unwrap();
        let want = repo
            .get_record("app.bsky.feed.like", "r3-001")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found, Some(want.cid()));
        // The proof alone answers the lookup: import it into a store that
        // has nothing else, and read the record through the Pail.
        let mut reader = iroh_car::CarReader::new(&car[..]).await.unwrap();
        let blocks = store::MemoryKv::new();
        let proof = store::Store::new(blocks);
        let mut all = Vec::new();
        while let Some((cid, bytes)) = reader.next_block().await.unwrap() {
            all.push((cid, bytes::Bytes::from(bytes)));
        }
        proof.put_blocks(&all).await.unwrap();
        let head = repo.head().await.unwrap();
        assert_eq!(all[0].0, head.commit);
        assert!(
            all.len() < 10,
            "a path, not the repository: {} blocks",
            all.len()
        );
        let got = pail::get(&proof, head.data, "app.bsky.feed.like/r3-001")
            .await
            .unwrap();
        assert_eq!(got, Some(want.cid()));
        assert!(proof.get_block(&want.cid()).await.unwrap().is_some());
        let (_, absent) = repo
            .export_record_car(Vec::new(), "app.bsky.feed.like", "nope")
            .await
            .unwrap();
        assert_eq!(absent, None);
    });
}

#[test]
fn the_same_bytes_under_another_codec_are_another_block() {
    common::rt().block_on(async {
        let (repos, _) = populated().await;
        let car = export(&repos, None).await;
        let (roots, blocks) = car_blocks(&car).await;
        // Every block again after the originals, as raw (0x55): same bytes
        // and digest, different CIDs, which the tree does not name.
        let mut out = iroh_car::CarWriter::new(iroh_car::CarHeader::new_v1(roots), Vec::new());
        for (cid, bytes) in &blocks {
            out.write(*cid, bytes).await.unwrap();
        }
        for (cid, bytes) in &blocks {
            out.write(cid::Cid::new_v1(0x55, *cid.hash()), bytes)
                .await
                .unwrap();
        }
        let doubled = out.finish().await.unwrap();

        let plain = common::repos().import_car(&car[..], None).await.unwrap();
        let fresh = common::repos();
        let report = fresh.import_car(&doubled[..], None).await.unwrap();
        assert_eq!(report.unreachable - plain.unreachable, blocks.len() as u64);
        assert_eq!(report.blocks, plain.blocks);
        assert_eq!(all_records(&repos).await, all_records(&fresh).await);
        assert_eq!(export(&fresh, None).await, car);
    });
}

#[test]
fn a_block_the_file_gives_again_is_imported_once() {
    common::rt().block_on(async {
        let (repos, _) = populated().await;
        let car = export(&repos, None).await;
        let (roots, blocks) = car_blocks(&car).await;
        // Every third block again right after itself, then every block
        // again at the end: repeats next to and far from the first copy.
        let mut out = iroh_car::CarWriter::new(iroh_car::CarHeader::new_v1(roots), Vec::new());
        for (i, (cid, bytes)) in blocks.iter().enumerate() {
            out.write(*cid, bytes).await.unwrap();
            if i % 3 == 0 {
                out.write(*cid, bytes).await.unwrap();
            }
        }
        for (cid, bytes) in &blocks {
            out.write(*cid, bytes).await.unwrap();
        }
        let repeated = out.finish().await.unwrap();

        let plain = common::repos().import_car(&car[..], None).await.unwrap();
        let fresh = common::repos();
        let report = fresh.import_car(&repeated[..], None).await.unwrap();
        assert_eq!(report.blocks, plain.blocks);
        assert_eq!(report.unreachable, plain.unreachable);
        assert_eq!(all_records(&repos).await, all_records(&fresh).await);
        assert_eq!(export(&fresh, None).await, car);
        let options = repo::VerifyOptions {
            unsigned_ok: true,
            ..repo::VerifyOptions::default()
        };
        let verified = repo::verify_car(&repeated[..], &options).await.unwrap();
        let expected = repo::verify_car(&car[..], &options).await.unwrap();
        assert_eq!(
            (verified.blocks, verified.shards, verified.records),
            (expected.blocks, expected.shards, expected.records)
        );
    });
}

#[test]
fn an_export_reads_the_tree_whatever_the_record_counts_say() {
    common::rt().block_on(async {
        let (repos, _) = populated().await;
        let car = export(&repos, None).await;
        let collections: Vec<String> = repos
            .open(DID)
            .await
            .unwrap()
            .collections()
            .await
            .into_iter()
            .map(|(c, _)| c)
            .collect();
        // Counts only size the export's set of written CIDs: absurd ones
        // and unreadable ones change nothing in the file.
        for damage in [
            collections
                .iter()
                .map(|c| store::record_count_op(DID, c, u64::MAX))
                .collect::<Vec<_>>(),
            collections
                .iter()
                .map(|c| {
                    store::WriteOp::Put(
                        keycodec::records::record_count_key(DID, c),
                        bytes::Bytes::from_static(b"not a count"),
                    )
                })
                .collect(),
        ] {
            repos
                .store()
                .kv()
                .apply(damage)
                .await
                .unwrap()
                .wait()
                .await
                .unwrap();
            assert_eq!(export(&repos, None).await, car);
        }
    });
}
