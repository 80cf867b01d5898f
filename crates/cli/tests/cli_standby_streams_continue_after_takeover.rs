//! Consumers of a standby's streams (the firehose and the Jetstream-
//! compatible stream) keep their connection when the standby takes over
//! from a killed writer, and read every commit once, in order: those the
//! old writer acknowledged, then the new writer's.

use crate::common::{
    self,
    ha::{self, create, wait_for_writer},
};

use std::time::Duration;

use futures_util::StreamExt;
use tokio_tungstenite::tungstenite::Message;

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect(url: String) -> Socket {
    tokio_tungstenite::connect_async(url).await.unwrap().0
}

/// The next message of `socket`; the test fails if the connection ends.
async fn next(socket: &mut Socket) -> Message {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(60), socket.next())
            .await
            .expect("a message within 60 s")
            .expect("the connection stays open")
            .expect("the connection stays open");
        if matches!(message, Message::Binary(_) | Message::Text(_)) {
            return message;
        }
    }
}

/// Acknowledged commits' revs, writing `n` records through `port`.
fn write(port: u16, n: usize, tag: &str) -> Vec<String> {
    (0..n)
        .map(|i| {
            let answer = create(port, &format!("{tag}-{i}"), Duration::from_secs(30)).unwrap();
            assert_eq!(answer.status, 200, "{}", answer.body);
            answer.json()["commit"]["rev"].as_str().unwrap().to_owned()
        })
        .collect()
}

#[test]
fn a_standbys_streams_continue_across_its_takeover() {
    // Bound whole: its temporary directory lives as long as the test.
    let Some(mut pair) = ha::start_pair("standby-streams", &["--refresh-ms", "100"]) else {
        return;
    };
    let (wport, sport) = (pair.wport, pair.sport);

    let rt = common::rt();
    // Every event from the start, on one connection each.
    let (mut firehose, mut jetstream) = rt.block_on(async {
        (
            connect(format!(
                "ws://127.0.0.1:{sport}/xrpc/com.atproto.sync.subscribeRepos?cursor=0"
            ))
            .await,
            connect(format!("ws://127.0.0.1:{sport}/subscribe?cursor=0")).await,
        )
    });
    let mut acked = write(wport, 10, "before");
    pair.writer.0.kill().unwrap();
    pair.writer.0.wait().unwrap();
    assert!(
        wait_for_writer(sport),
        "the standby did not take over within 30 s"
    );
    acked.extend(write(sport, 10, "after"));

    rt.block_on(async {
        // The firehose: the repository's first commit, then one per write,
        // sequence numbers consecutive from 1.
        let mut revs = Vec::new();
        for expected_seq in 1..=u64::try_from(acked.len()).unwrap() + 1 {
            let Message::Binary(bytes) = next(&mut firehose).await else {
                panic!("the firehose sends binary frames");
            };
            match repo::decode_frame(&bytes).unwrap() {
                repo::Frame::Commit(c) => {
                    assert_eq!(c.seq, expected_seq);
                    if !c.ops.is_empty() {
                        revs.push(c.rev);
                    }
                }
                other => panic!("not a commit: {other:?}"),
            }
        }
        assert_eq!(revs, acked, "the firehose across the takeover");

        // The Jetstream-compatible stream: one event per write, in order,
        // its times increasing.
        let mut revs = Vec::new();
        let mut last_time = 0;
        while revs.len() < acked.len() {
            let Message::Text(text) = next(&mut jetstream).await else {
                panic!("the stream sends text frames");
            };
            let event: serde_json::Value = serde_json::from_str(&text).unwrap();
            let time = event["time_us"].as_u64().unwrap();
            assert!(time > last_time, "{event}");
            last_time = time;
            if event["kind"] == "commit" {
                revs.push(event["commit"]["rev"].as_str().unwrap().to_owned());
            }
        }
        assert_eq!(
            revs, acked,
            "the Jetstream-compatible stream across the takeover"
        );
    });
    assert!(
        pair.standby.terminate(),
        "the new writer did not stop cleanly"
    );
}
