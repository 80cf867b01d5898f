//! A read-only replica serves the firehose of what its writer stores: it
//! replays from a cursor and delivers new commits as its reader finds them.

use crate::common;

use std::{sync::Arc, time::Duration};

use common::{DID, TestServer};
use repo::Frame;
use serde_json::json;
use server::Config;
use store::SlateKv;

async fn next_commit(socket: &mut common::Socket) -> Box<repo::CommitEvent> {
    match common::next_frame(socket).await {
        Some(Frame::Commit(event)) => event,
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_streams_its_writers_commits() {
    let dir = testkit::tempdir("replica-firehose");
    let kv = SlateKv::open_local(dir.path()).await.unwrap();
    let writer = TestServer::start(kv.clone(), common::config()).await;
    let write = |rkey: &str| json!({"repo": DID, "collection": "app.test.r", "rkey": rkey, "record": {"k": rkey}});
    let (s, first) = writer
        .post("com.atproto.repo.putRecord", &write("first"))
        .await;
    assert_eq!(s, 200);

    let reader = SlateKv::open_reader(
        &store::Location::Local(dir.path().to_owned()),
        Duration::from_millis(50),
    )
    .await
    .unwrap();
    let repos = Arc::new(repo::Repos::new(
        Arc::new(store::Store::new(reader.clone())),
        common::env(),
    ));
    let replica = TestServer::start_repos(
        repos,
        Config {
            read_only: true,
            ..common::config()
        },
    )
    .await;
    let mut socket = common::subscribe(replica.addr(), Some(0)).await;
    // Replayed: the repository's creation and the first write.
    assert_eq!(next_commit(&mut socket).await.seq, 1);
    let replayed = next_commit(&mut socket).await;
    assert_eq!(replayed.commit.to_string(), first["commit"]["cid"]);

    // Live: a commit made on the writer after the replica started.
    let (s, second) = writer
        .post("com.atproto.repo.putRecord", &write("second"))
        .await;
    assert_eq!(s, 200);
    let live = next_commit(&mut socket).await;
    assert_eq!(live.seq, 3);
    assert_eq!(live.commit.to_string(), second["commit"]["cid"]);

    drop(socket);
    replica.stop().await;
    writer.stop().await;
    reader.close().await.unwrap();
    kv.close().await.unwrap();
}
