//! The blob layouts under the record-index type's reserved bits: a
//! record's blob references (`0x42`) and a repository's blob (`0x43`),
//! byte for byte as `docs/storage-keys.md` draws them.

use std::borrow::Cow;

use keycodec::records::{
    DecodedKey, RecordType, blob_key, blobs_range, decode_key, record_blobs_key,
    repo_record_blobs_range, repo_record_index_range,
};

#[test]
fn blob_key_bytes_are_pinned() {
    assert_eq!(
        record_blobs_key("r", "a.b.c", "x"),
        [&[0x01, 0x42][..], b"r\x00a.b.c\x00x\x00"].concat()
    );
    assert_eq!(
        blob_key("r", "bafkreiab"),
        [&[0x01, 0x43][..], b"r\x00bafkreiab\x00"].concat()
    );
}

#[test]
fn each_decodes_and_stays_out_of_the_record_index() {
    assert_eq!(
        decode_key(&record_blobs_key("r", "a.b.c", "x")).unwrap(),
        DecodedKey::RecordBlobs {
            repo: Cow::Borrowed("r"),
            collection: Cow::Borrowed("a.b.c"),
            rkey: Cow::Borrowed("x"),
        }
    );
    let key = blob_key("r", "bafkreiab");
    let blob = decode_key(&key).unwrap();
    assert_eq!(
        blob,
        DecodedKey::Blob {
            repo: Cow::Borrowed("r"),
            cid: Cow::Borrowed("bafkreiab"),
        }
    );
    assert_eq!(blob.record_type(), RecordType::RecordIndex);
    // A repository's ranges hold its own keys only.
    assert!(blobs_range("r").contains(&blob_key("r", "bafkreiab")));
    assert!(!blobs_range("r").contains(&blob_key("r2", "bafkreiab")));
    assert!(repo_record_blobs_range("r").contains(&record_blobs_key("r", "a.b.c", "x")));
    assert!(!repo_record_index_range("r").contains(&record_blobs_key("r", "a.b.c", "x")));
    assert!(!repo_record_index_range("r").contains(&blob_key("r", "bafkreiab")));
}
