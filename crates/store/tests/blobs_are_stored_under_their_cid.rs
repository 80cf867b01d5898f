//! Blob bytes: stored under their CID (raw, sha2-256) beside the database
//! (`blobs/` next to `db/` in a local store), read back whole or by range;
//! an upload over the limit or cut off leaves nothing, neither under a CID
//! nor as a temporary object.

use bytes::Bytes;
use futures::{StreamExt, stream};
use store::{BlobError, Kv, Location, MemoryKv, SlateKv, blob_cid};

fn chunks(bytes: &[u8], size: usize) -> Vec<Result<Bytes, std::io::Error>> {
    bytes
        .chunks(size)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect()
}

async fn read_all(
    blobs: &store::Blobs,
    cid: &cid::Cid,
    range: Option<std::ops::Range<u64>>,
) -> Vec<u8> {
    let got = blobs.get(cid, range).await.unwrap();
    let parts: Vec<Bytes> = got.stream.map(Result::unwrap).collect().await;
    parts.concat()
}

fn files_under(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path.display().to_string());
        }
    }
    out
}

#[tokio::test]
async fn a_blob_is_stored_under_its_cid_and_read_by_range() {
    let bytes: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let blobs = MemoryKv::new().blobs();
    let stored = blobs
        .put(stream::iter(chunks(&bytes, 65_536)), 10 << 20, "t1")
        .await
        .unwrap();
    assert_eq!(stored.cid, blob_cid(&bytes));
    assert_eq!(stored.cid.codec(), 0x55);
    assert!(stored.cid.to_string().starts_with("bafkrei"));
    assert_eq!(stored.size, bytes.len() as u64);
    assert_eq!(&stored.head[..], &bytes[..store::SNIFF_BYTES]);
    assert_eq!(read_all(&blobs, &stored.cid, None).await, bytes);
    assert_eq!(
        read_all(&blobs, &stored.cid, Some(1000..2000)).await,
        &bytes[1000..2000]
    );
    assert_eq!(
        blobs.size(&stored.cid).await.unwrap(),
        Some(bytes.len() as u64)
    );
    blobs.delete(&stored.cid).await.unwrap();
    assert!(matches!(
        blobs.get(&stored.cid, None).await,
        Err(BlobError::NotFound(_))
    ));
}

#[tokio::test]
async fn uploads_over_the_limit_or_cut_off_leave_nothing() {
    let dir = testkit::tempdir("blobs-local");
    let kv = SlateKv::open(&Location::Local(dir.path().to_owned()))
        .await
        .unwrap();
    let blobs = kv.blobs();
    let bytes = vec![7u8; 200_000];
    let too_large = blobs
        .put(stream::iter(chunks(&bytes, 10_000)), 100_000, "big")
        .await;
    assert!(
        matches!(too_large, Err(BlobError::TooLarge { max: 100_000 })),
        "{too_large:?}"
    );
    let mut cut: Vec<Result<Bytes, std::io::Error>> = chunks(&bytes[..50_000], 10_000);
    cut.push(Err(std::io::Error::other("the client went away")));
    let cut_off = blobs.put(stream::iter(cut), 1 << 20, "cut").await;
    assert!(matches!(cut_off, Err(BlobError::Body(_))), "{cut_off:?}");
    assert!(
        files_under(&dir.path().join("blobs")).is_empty(),
        "{:?}",
        files_under(&dir.path().join("blobs"))
    );
    // A whole one lands as blobs/<cid>, beside the database.
    let stored = blobs
        .put(stream::iter(chunks(&bytes, 10_000)), 1 << 20, "whole")
        .await
        .unwrap();
    let file = dir.path().join("blobs").join(stored.cid.to_string());
    assert_eq!(std::fs::read(&file).unwrap(), bytes);
    assert!(dir.path().join("db").is_dir());
    assert_eq!(
        files_under(&dir.path().join("blobs")),
        [file.display().to_string()]
    );
    // Larger than one write and in many small chunks: written as it
    // arrives, whole under its CID.
    let large: Vec<u8> = (0..3_000_000u32).map(|i| (i * 13 % 251) as u8).collect();
    let stored = blobs
        .put(stream::iter(chunks(&large, 1000)), 10 << 20, "large")
        .await
        .unwrap();
    assert_eq!(stored.cid, blob_cid(&large));
    let large_file = dir.path().join("blobs").join(stored.cid.to_string());
    assert_eq!(std::fs::read(&large_file).unwrap(), large);
    // Cut off after part of it was written: its staging file goes too.
    let mut cut = chunks(&large[..2_500_000], 100_000);
    cut.push(Err(std::io::Error::other("the client went away")));
    let cut_off = blobs.put(stream::iter(cut), 10 << 20, "cut-large").await;
    assert!(matches!(cut_off, Err(BlobError::Body(_))), "{cut_off:?}");
    let mut want = vec![file.display().to_string(), large_file.display().to_string()];
    want.sort();
    let mut got = files_under(&dir.path().join("blobs"));
    got.sort();
    assert_eq!(got, want);
    kv.close().await.unwrap();
}
