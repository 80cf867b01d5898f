//! `com.atproto.sync.subscribeRepos`: every commit as a `#commit` frame,
//! in sequence, with its ops and a CAR slice of its blocks; a cursor
//! resumes exactly after it; a future cursor gets `FutureCursor`; events
//! past retention are gone and an older cursor is told so.

use crate::common;

use std::time::Duration;

use common::{DID, TestServer};
use repo::Frame;
use serde_json::json;

/// The next `n` frames.
async fn frames(socket: &mut common::Socket, n: usize) -> Vec<Frame> {
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        out.push(
            common::next_frame(socket)
                .await
                .expect("the stream is open"),
        );
    }
    out
}

fn commit(frame: &Frame) -> &repo::CommitEvent {
    match frame {
        Frame::Commit(c) => c,
        other => panic!("not a commit: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commits_stream_in_order_and_resume_from_a_cursor() {
    let srv = TestServer::memory().await;
    let post = "app.x.post";
    let create = |rkey: &str, text: &str| json!({"repo": DID, "collection": post, "rkey": rkey, "record": {"text": text}});
    let mut acked = Vec::new();
    for body in [create("r1", "one"), create("r2", "two")] {
        let (s, out) = srv.post("com.atproto.repo.createRecord", &body).await;
        assert_eq!(s, 200, "{out}");
        acked.push(out);
    }
    let (s, _) = srv
        .post("com.atproto.repo.putRecord", &create("r1", "one, edited"))
        .await;
    assert_eq!(s, 200);
    let (s, _) = srv
        .post(
            "com.atproto.repo.deleteRecord",
            &json!({"repo": DID, "collection": post, "rkey": "r2"}),
        )
        .await;
    assert_eq!(s, 200);
    let (s, batch) = srv
        .post(
            "com.atproto.repo.applyWrites",
            &json!({"repo": DID, "writes": [
                {"$type": "com.atproto.repo.applyWrites#create", "collection": post, "rkey": "r3", "value": {"text": "three"}},
                {"$type": "com.atproto.repo.applyWrites#delete", "collection": post, "rkey": "r1"},
            ]}),
        )
        .await;
    assert_eq!(s, 200, "{batch}");

    // The repository's creation by its first write, then the five writes.
    let mut socket = common::subscribe(srv.addr(), Some(0)).await;
    let all = frames(&mut socket, 6).await;
    let events: Vec<&repo::CommitEvent> = all.iter().map(commit).collect();
    assert_eq!(
        events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5, 6]
    );
    let ops: Vec<Vec<(&str, &str, bool, bool)>> = events
        .iter()
        .map(|e| {
            e.ops
                .iter()
                .map(|o| {
                    (
                        o.action.as_str(),
                        o.path.as_str(),
                        o.cid.is_some(),
                        o.prev.is_some(),
                    )
                })
                .collect()
        })
        .collect();
    assert_eq!(
        ops,
        vec![
            vec![],
            vec![("create", "app.x.post/r1", true, false)],
            vec![("create", "app.x.post/r2", true, false)],
            vec![("update", "app.x.post/r1", true, true)],
            vec![("delete", "app.x.post/r2", false, true)],
            vec![
                ("create", "app.x.post/r3", true, false),
                ("delete", "app.x.post/r1", false, true)
            ],
        ]
    );
    for (i, event) in events.iter().enumerate() {
        assert_eq!(event.repo, DID);
        assert!(!event.rebase && !event.too_big && event.blobs.is_empty());
        assert!(
            event.time.parse::<jiff::Timestamp>().is_ok(),
            "{}",
            event.time
        );
        // `since` is the previous commit's rev.
        let since = i.checked_sub(1).map(|p| events[p].rev.clone());
        assert_eq!(event.since, since);
        // The CAR slice: rooted at the commit, holding it and every new record.
        let mut car = iroh_car::CarReader::new(&event.blocks[..]).await.unwrap();
        assert_eq!(car.header().roots(), [event.commit]);
        let mut cids = Vec::new();
        while let Some((cid, _)) = car.next_block().await.unwrap() {
            cids.push(cid);
        }
        assert!(cids.contains(&event.commit));
        for op in &event.ops {
            if let Some(cid) = op.cid {
                assert!(cids.contains(&cid), "record {cid} of {}", op.path);
            }
        }
    }
    // The acknowledged commits are the events' commits.
    assert_eq!(acked[0]["commit"]["cid"], events[1].commit.to_string());
    assert_eq!(batch["commit"]["cid"], events[5].commit.to_string());

    // Live: a new commit arrives on the open stream.
    let (s, _) = srv
        .post("com.atproto.repo.createRecord", &create("r4", "four"))
        .await;
    assert_eq!(s, 200);
    let live = frames(&mut socket, 1).await;
    assert_eq!(commit(&live[0]).seq, 7);

    // A cursor resumes right after it.
    let mut resumed = common::subscribe(srv.addr(), Some(4)).await;
    let next = frames(&mut resumed, 3).await;
    assert_eq!(
        next.iter().map(|f| commit(f).seq).collect::<Vec<_>>(),
        [5, 6, 7]
    );

    // A cursor ahead of the newest event.
    let mut future = common::subscribe(srv.addr(), Some(1000)).await;
    match &frames(&mut future, 1).await[0] {
        Frame::Error { error, .. } => assert_eq!(error, "FutureCursor"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_past_retention_are_gone_and_an_old_cursor_is_told() {
    let kv = store::MemoryKv::new();
    let srv = TestServer::start(kv.clone(), common::config()).await;
    for i in 0..5 {
        let (s, _) = srv
            .post(
                "com.atproto.repo.createRecord",
                &json!({"repo": DID, "collection": "app.x.post", "record": {"i": i}}),
            )
            .await;
        assert_eq!(s, 200);
    }
    // Six events (the creation and five writes); keep the newest two.
    let store = store::Store::new(kv);
    let deleted = server::prune_events(&store, server::Retention::Count(2), 0)
        .await
        .unwrap();
    assert_eq!(deleted, 4);
    let mut socket = common::subscribe(srv.addr(), Some(0)).await;
    let got = frames(&mut socket, 3).await;
    match &got[0] {
        Frame::Info { name, .. } => assert_eq!(name, "OutdatedCursor"),
        other => panic!("{other:?}"),
    }
    assert_eq!((commit(&got[1]).seq, commit(&got[2]).seq), (5, 6));
    assert_eq!(
        "72h".parse(),
        Ok(server::Retention::Age(Duration::from_secs(72 * 3600)))
    );
    assert_eq!("100".parse(), Ok(server::Retention::Count(100)));
    assert!("soon".parse::<server::Retention>().is_err());
}
