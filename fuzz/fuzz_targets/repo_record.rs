//! Any bytes as a record: as JSON, `Record::from_json` accepts or rejects
//! without panicking, and an accepted record's block reads back as the same
//! record; as a block, `Record::from_block` accepts only canonical maps.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(data)
        && let Ok(record) = repo::Record::from_json("com.example.fuzz", value)
    {
        let again = repo::Record::from_block(record.block().clone()).unwrap();
        assert_eq!(again.to_json(), record.to_json());
    }
    let block = store::Block::new(0x71, bytes::Bytes::copy_from_slice(data));
    if let Ok(record) = repo::Record::from_block(block) {
        assert_eq!(record.bytes().as_ref(), data);
        let _ = record.to_json();
    }
});
