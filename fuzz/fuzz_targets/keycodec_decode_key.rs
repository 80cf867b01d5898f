//! Any bytes: `decode_key` returns a value or an error, and a decoded key
//! re-encodes to the same bytes.
#![no_main]

use keycodec::records::{self, DecodedKey};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(decoded) = records::decode_key(data) else {
        return;
    };
    let again = match &decoded {
        DecodedKey::Block { cid } => records::block_key(cid),
        DecodedKey::Head { repo } => records::head_key(repo),
        DecodedKey::CommitLog { repo, rev } => records::commit_log_key(repo, *rev),
        DecodedKey::RecordIndex {
            repo,
            collection,
            rkey,
        } => records::record_index_key(repo, collection, rkey),
        DecodedKey::Collection { repo, collection } => records::collection_key(repo, collection),
        DecodedKey::Bitmap { txkey } => records::bitmap_key(txkey),
        DecodedKey::BlockDelta { cid } => records::block_delta_key(cid),
        DecodedKey::FieldIndex {
            repo,
            collection,
            path,
        } => records::field_index_key(repo, collection, path),
        DecodedKey::Column { scope, rkey } => records::column_key(*scope, rkey),
        DecodedKey::ColumnRkey { scope, column } => records::column_rkey_key(*scope, *column),
        DecodedKey::KeywordRow { scope, path, value } => {
            records::keyword_row_key(*scope, path, value)
        }
        DecodedKey::KeywordValue { scope, path, row } => {
            records::keyword_value_key(*scope, path, *row)
        }
        _ => return,
    };
    assert_eq!(again, data);
});
