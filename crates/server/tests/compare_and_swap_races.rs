//! Compare-and-swap writes racing each other: of many writes that name the
//! same current record (`swapRecord`) or the same head (`swapCommit`),
//! exactly one lands; every other is refused with `InvalidSwap` and
//! changes nothing.

use crate::common;

use std::sync::Arc;

use common::{DID, TestServer};
use serde_json::{Value, json};

const RACERS: usize = 8;
const POST: &str = "app.bsky.feed.post";

async fn race(
    server: &Arc<TestServer>,
    method: &'static str,
    bodies: Vec<Value>,
) -> Vec<(u16, Value)> {
    let tasks: Vec<_> = bodies
        .into_iter()
        .map(|body| {
            let server = Arc::clone(server);
            tokio::spawn(async move { server.post(method, &body).await })
        })
        .collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

fn one_winner(results: &[(u16, Value)]) -> usize {
    let winners: Vec<usize> = results
        .iter()
        .enumerate()
        .filter(|(_, (status, _))| *status == 200)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(winners.len(), 1, "{results:?}");
    for (status, body) in results.iter().filter(|(s, _)| *s != 200) {
        assert_eq!(*status, 400, "{body}");
        assert_eq!(body["error"], "InvalidSwap", "{body}");
    }
    winners[0]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_write_wins_each_compare_and_swap_race() {
    let server = Arc::new(TestServer::memory().await);
    let (status, created) = server
        .post(
            "com.atproto.repo.createRecord",
            &json!({"repo": DID, "collection": POST, "rkey": "r", "record": {"text": "start"}}),
        )
        .await;
    assert_eq!(status, 200);
    for round in 0..10 {
        // swapRecord: every racer names the record's current CID.
        let (_, current) = server
            .get(
                "com.atproto.repo.getRecord",
                &[("repo", DID), ("collection", POST), ("rkey", "r")],
            )
            .await;
        let cid = current["cid"].as_str().unwrap().to_owned();
        let bodies = (0..RACERS)
            .map(|i| {
                json!({"repo": DID, "collection": POST, "rkey": "r", "swapRecord": cid,
                            "record": {"text": format!("round {round} racer {i}")}})
            })
            .collect();
        let results = race(&server, "com.atproto.repo.putRecord", bodies).await;
        let winner = one_winner(&results);
        let (_, now) = server
            .get(
                "com.atproto.repo.getRecord",
                &[("repo", DID), ("collection", POST), ("rkey", "r")],
            )
            .await;
        assert_eq!(
            now["value"]["text"],
            format!("round {round} racer {winner}")
        );

        // swapCommit: every racer names the current head.
        let (_, head) = server
            .get("com.atproto.sync.getLatestCommit", &[("did", DID)])
            .await;
        let head = head["cid"].as_str().unwrap().to_owned();
        let bodies = (0..RACERS)
            .map(|i| {
                json!({"repo": DID, "swapCommit": head, "writes": [{
                "$type": "com.atproto.repo.applyWrites#create", "collection": POST,
                "rkey": format!("c{round}-{i}"), "value": {"text": "x"}}]})
            })
            .collect();
        let results = race(&server, "com.atproto.repo.applyWrites", bodies).await;
        let winner = one_winner(&results);
        for i in 0..RACERS {
            let (status, _) = server
                .get(
                    "com.atproto.repo.getRecord",
                    &[
                        ("repo", DID),
                        ("collection", POST),
                        ("rkey", &format!("c{round}-{i}")),
                    ],
                )
                .await;
            assert_eq!(status == 200, i == winner, "round {round} racer {i}");
        }
    }
    drop(created);
}
