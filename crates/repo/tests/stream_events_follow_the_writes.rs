//! Each commit stores one stream event per record operation, in Jetstream's
//! shape: creates and updates with the record (AT Protocol JSON: links and
//! bytes as `$link` and `$bytes`) and its CID, deletes with neither, the
//! commit's rev, times strictly increasing in commit order; compared with
//! what the writes were, write by write. Each is stored with its zstd
//! frame, which decompresses with the stream's dictionary to the JSON.

use crate::common;

use repo::Write;
use serde_json::{Value, json};

const DID: &str = "did:example:stream";

#[test]
fn stream_events_follow_the_writes() {
    common::rt().block_on(async {
        let repos = common::repos();
        let repo = repos.create(DID).await.unwrap();
        let note = |text: &str| json!({"text": text, "data": {"$bytes": "aGk"}});
        let batches: Vec<Vec<Write>> = vec![
            vec![Write::Create {
                collection: "app.test.note".into(),
                rkey: Some("a".into()),
                value: note("first"),
            }],
            vec![
                Write::Create {
                    collection: "app.test.note".into(),
                    rkey: Some("b".into()),
                    value: note("second"),
                },
                Write::Update {
                    collection: "app.test.note".into(),
                    rkey: "a".into(),
                    value: note("first, edited"),
                    swap_record: None,
                },
            ],
            vec![Write::Delete {
                collection: "app.test.note".into(),
                rkey: "b".into(),
                swap_record: None,
            }],
        ];
        // What each event must say, made from the writes themselves.
        let mut expected = Vec::new();
        for batch in batches {
            let result = repo.apply_writes(batch.clone(), None).await.unwrap();
            for (write, done) in batch.iter().zip(&result.results) {
                let (operation, collection, rkey, value) = match write {
                    Write::Create {
                        collection,
                        rkey,
                        value,
                    } => ("create", collection, rkey.clone().unwrap(), Some(value)),
                    Write::Update {
                        collection,
                        rkey,
                        value,
                        ..
                    } => ("update", collection, rkey.clone(), Some(value)),
                    Write::Delete {
                        collection, rkey, ..
                    } => ("delete", collection, rkey.clone(), None),
                };
                let mut commit = json!({"rev": result.rev.to_string(), "operation": operation,
                                        "collection": collection, "rkey": rkey});
                if let Some(value) = value {
                    let mut record = value.clone();
                    record["$type"] = json!(collection);
                    commit["record"] = record;
                    commit["cid"] = json!(done.cid.unwrap().to_string());
                }
                expected.push(json!({"did": DID, "kind": "commit", "commit": commit}));
            }
        }
        let stored = repos.store().stream_events(0, usize::MAX).await.unwrap();
        assert_eq!(stored.len(), expected.len());
        let mut last = 0;
        let mut decompressor =
            zstd::bulk::Decompressor::with_dictionary(repo::stream_dictionary()).unwrap();
        for ((time, stored), want) in stored.iter().zip(&expected) {
            let (bytes, frame) = repo::stream_event_forms(stored).unwrap();
            // The frame is the JSON, compressed with the stream's dictionary.
            assert_eq!(decompressor.decompress(&frame, 1 << 20).unwrap(), bytes);
            assert!(frame.len() < bytes.len());
            let mut event: Value = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(event["time_us"], json!(time));
            assert!(*time > last, "times increase");
            last = *time;
            event.as_object_mut().unwrap().remove("time_us");
            assert_eq!(&event, want);
            // Jetstream's field order: did, time_us, kind, commit.
            let text = std::str::from_utf8(&bytes).unwrap();
            assert!(
                text.starts_with(&format!(
                    "{{\"did\":\"{DID}\",\"time_us\":{time},\"kind\":\"commit\",\"commit\":{{"
                )),
                "{text}"
            );
        }
    });
}
