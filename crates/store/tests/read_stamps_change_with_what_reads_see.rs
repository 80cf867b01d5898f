//! [`Kv::read_stamp`]: a handle's stamp stays the same while nothing new
//! is visible to its reads (so what was read under it may be kept), and
//! has changed by the time a read can see a new write: after a write of
//! its own (the writer, the in-memory store), and for a reader once its
//! refresh shows it the writer's.

use crate::common;

use std::time::Duration;

use store::{Kv, Location, MemoryKv, SlateKv};

/// Two stamps with no write between them are equal; a write changes it.
async fn own_writes_change_the_stamp(kv: &impl Kv) {
    let before = kv.read_stamp().expect("this store stamps its reads");
    assert_eq!(kv.read_stamp(), Some(before));
    assert_eq!(kv.get(b"k").await.unwrap(), None);
    assert_eq!(kv.read_stamp(), Some(before), "a read changed the stamp");
    for i in 0..3u8 {
        let stamp = kv.read_stamp();
        common::durable_put(kv, b"k".to_vec(), vec![i]).await;
        assert_ne!(kv.read_stamp(), stamp, "write {i} left the stamp as it was");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stamps_follow_writes() {
    {
        own_writes_change_the_stamp(&MemoryKv::new()).await;

        let dir = testkit::tempdir("read-stamps");
        let location = Location::Local(dir.path().to_path_buf());
        let writer = SlateKv::open(&location).await.unwrap();
        own_writes_change_the_stamp(&writer).await;

        let reader = SlateKv::open_reader(&location, Duration::from_millis(20))
            .await
            .unwrap();
        let before = reader.read_stamp().expect("a reader stamps its reads");
        let value = reader.get(b"k").await.unwrap();
        assert_eq!(value.as_deref(), Some(&[2u8][..]));
        // Past several refreshes with nothing new: the same stamp.
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(reader.read_stamp(), Some(before));
        assert!(before.trust_micros().is_some(), "a reader's stamp settles");

        common::durable_put(&writer, b"k".to_vec(), vec![3]).await;
        let mut seen = false;
        for _ in 0..500 {
            // Checked in this order: a read that sees the write must find
            // the stamp already changed.
            let value = reader.get(b"k").await.unwrap();
            if value.as_deref() == Some(&[3u8][..]) {
                assert_ne!(reader.read_stamp(), Some(before));
                seen = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(seen, "the reader never saw the write");
        reader.close().await.unwrap();
        writer.close().await.unwrap();
    }
}
