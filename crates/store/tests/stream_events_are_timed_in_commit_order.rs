//! A commit's stream events are stored in its atomic batch under times
//! that increase strictly in the order commits land, whatever the writers'
//! clocks say (equal, or going backwards): each commit's first event is at
//! its clock or just after the newest event, each next one a microsecond
//! later. They read back in order from any time, survive a reopen (the
//! newest time is read from the store), and retention deletes through a
//! time.

use crate::common;

use std::sync::Arc;

use bytes::Bytes;
use common::block;
use store::{Block, Commit, Head, SlateKv, Store, StreamEvents};

fn commit(repo: &str, expected: Option<cid::Cid>, n: u64, now: u64, count: usize) -> Commit {
    let (c, bytes) = block(5000 + n);
    Commit {
        repo: repo.into(),
        expected,
        head: Head { commit: c, rev: n },
        blocks: vec![Block::verify(c, bytes).unwrap()],
        records: Vec::new(),
        collections: Vec::new(),
        index: Vec::new(),
        history: store::LogChange::default(),
        event: None,
        stream: Some(StreamEvents {
            now_micros: now,
            count,
            encode: Arc::new(move |i, time| Bytes::from(format!("commit {n} event {i} at {time}"))),
        }),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_events_are_timed_in_commit_order() {
    {
        let dir = testkit::tempdir("stream-events");
        let store = Store::new(SlateKv::open_local(dir.path()).await.unwrap());
        // (clock, events) per commit: the clock stands still and goes back.
        let plan = [
            (1_000u64, 2usize),
            (1_000, 1),
            (500, 3),
            (2_000, 1),
            (2_000, 0),
            (1_999, 2),
        ];
        let mut heads = std::collections::HashMap::new();
        let mut expected = Vec::new();
        let mut newest: Option<u64> = None;
        for (n, (now, count)) in plan.iter().enumerate() {
            let repo = if n % 2 == 0 {
                "did:example:a"
            } else {
                "did:example:b"
            };
            let c = commit(repo, heads.get(repo).copied(), n as u64, *now, *count);
            let head = c.head.commit;
            store.commit(c).await.unwrap();
            heads.insert(repo, head);
            // The model: the later of the clock and just after the newest.
            let first = newest.map_or(*now, |t| (*now).max(t + 1));
            for i in 0..*count {
                let time = first + i as u64;
                expected.push((time, format!("commit {n} event {i} at {time}")));
                newest = Some(time);
            }
        }
        let read = |after| {
            let store = &store;
            async move {
                store
                    .stream_events(after, usize::MAX)
                    .await
                    .unwrap()
                    .into_iter()
                    .map(|(t, b)| (t, String::from_utf8(b.to_vec()).unwrap()))
                    .collect::<Vec<_>>()
            }
        };
        assert_eq!(read(0).await, expected);
        let times: Vec<u64> = expected.iter().map(|(t, _)| *t).collect();
        assert!(times.windows(2).all(|w| w[0] < w[1]), "{times:?}");
        // From any cursor: exactly the events after it.
        for (k, (t, _)) in expected.iter().enumerate() {
            assert_eq!(read(*t).await, expected[k + 1..].to_vec());
        }
        assert_eq!(store.newest_stream_time().await.unwrap(), newest);
        assert_eq!(store.oldest_stream_time().await.unwrap(), Some(times[0]));

        // Reopened: the next commit's events still come after the newest.
        drop(store);
        let store = Store::new(SlateKv::open_local(dir.path()).await.unwrap());
        store
            .commit(commit(
                "did:example:a",
                heads.get("did:example:a").copied(),
                99,
                1,
                1,
            ))
            .await
            .unwrap();
        let after = store.stream_events(newest.unwrap(), 10).await.unwrap();
        assert_eq!(after.len(), 1);
        assert_eq!(after[0].0, newest.unwrap() + 1);

        // Retention: through the fourth event.
        let deleted = store.delete_stream_events_through(times[3]).await.unwrap();
        assert_eq!(deleted, 4);
        assert_eq!(store.oldest_stream_time().await.unwrap(), Some(times[4]));
    }
}
