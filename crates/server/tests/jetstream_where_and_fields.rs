//! `/subscribe?where=EXPR&fields=a,b.c`: a connection is sent the events
//! whose record satisfies the expression — exactly the records
//! `dev.datarepo.queryRecords` answers for it from the field indexes — and
//! deletes (which carry no record); `fields` cuts each record down to the
//! paths named; a bad expression or path is refused before the upgrade
//! with the parser's message, and an `options_update` may change both.

use crate::common;

use std::{collections::BTreeSet, time::Duration};

use common::TestServer;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

const DID: &str = "did:web:where.test";
const POST: &str = "app.bsky.feed.post";

const LANGS: [&str; 3] = ["en", "ja", "pt"];

async fn connect(s: &TestServer, query: &str) -> common::Socket {
    let url = format!("ws://{}/subscribe?{query}", s.addr());
    tokio_tungstenite::connect_async(url).await.unwrap().0
}

/// Every event until half a second passes without one.
async fn drain(socket: &mut common::Socket) -> Vec<Value> {
    let mut events = Vec::new();
    while let Ok(Some(Ok(message))) =
        tokio::time::timeout(Duration::from_millis(500), socket.next()).await
    {
        if let Message::Text(text) = message {
            events.push(serde_json::from_str(&text).unwrap());
        }
    }
    events
}

/// The record keys `queryRecords` answers for `filter`, every page.
async fn queried(s: &TestServer, filter: &str) -> BTreeSet<String> {
    let mut rkeys = BTreeSet::new();
    let mut cursor = String::new();
    loop {
        let mut query = vec![("repo", DID), ("collection", POST), ("where", filter)];
        query.push(("limit", "100"));
        if !cursor.is_empty() {
            query.push(("cursor", &cursor));
        }
        let (status, page) = s.get("dev.datarepo.queryRecords", &query).await;
        assert_eq!(status, 200, "{filter}: {page}");
        for r in page["records"].as_array().unwrap() {
            let uri = r["uri"].as_str().unwrap();
            rkeys.insert(uri.rsplit('/').next().unwrap().to_owned());
        }
        match page["cursor"].as_str() {
            Some(c) => cursor = c.to_owned(),
            None => return rkeys,
        }
    }
}

#[tokio::test]
async fn where_sends_what_a_query_answers_and_fields_cut_records() {
    let s = TestServer::memory().await;
    // 60 posts; every value a small generator draws, some paths absent.
    let mut state = 0x2545_f491_u64;
    let mut draw = |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    for i in 0..60 {
        let mut record = json!({"$type": POST, "text": format!("post {i}"),
            "embed": {"images": [{"alt": format!("alt {i}"), "size": i}]}});
        if draw(5) > 0 {
            let langs: Vec<&str> = (0..1 + draw(2)).map(|_| LANGS[draw(3) as usize]).collect();
            record["langs"] = json!(langs);
        }
        if draw(4) > 0 {
            record["likes"] = json!(draw(30) as i64 - 5);
        }
        if draw(4) > 0 {
            let zone = ["Z", "+09:00", ".000Z"][draw(3) as usize];
            record["createdAt"] = json!(format!("2026-01-{:02}T12:00:00{zone}", 1 + draw(28)));
        }
        let (status, body) = s
            .post(
                "com.atproto.repo.createRecord",
                &json!({"repo": DID, "collection": POST, "rkey": format!("p{i:02}"), "record": record}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }
    // Indexes built over the records there, kept by the commits after.
    for (path, kind) in [
        ("langs", "keyword"),
        ("likes", "integer"),
        ("createdAt", "datetime"),
    ] {
        let (status, body) = s
            .post(
                "dev.datarepo.addIndex",
                &json!({"repo": DID, "collection": POST, "path": path, "kind": kind}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }
    let (status, body) = s
        .post(
            "com.atproto.repo.deleteRecord",
            &json!({"repo": DID, "collection": POST, "rkey": "p00"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");

    for filter in [
        r#"langs = "ja""#,
        r#"langs = "ja" and likes >= 10"#,
        r#"not langs exists or likes < 0"#,
        r#"createdAt >= "2026-01-15T00:00:00Z" and langs in ["en", "pt"]"#,
        r#"createdAt = "2026-01-10T03:00:00Z" or likes != 3"#,
    ] {
        // The query answers for the records there now; the stream
        // replays every creation, so p00 (deleted) is asked of the
        // stream alone, from its record's JSON.
        let mut want = queried(&s, filter).await;
        let encoded: String = form_urlencoded::byte_serialize(filter.as_bytes()).collect();
        let mut socket = connect(&s, &format!("cursor=0&where={encoded}")).await;
        let events = drain(&mut socket).await;
        drop(socket);
        let mut created = BTreeSet::new();
        let mut deletes = 0;
        for e in &events {
            let rkey = e["commit"]["rkey"].as_str().unwrap().to_owned();
            match e["commit"]["operation"].as_str().unwrap() {
                "create" if rkey != "p00" => assert!(created.insert(rkey), "{e}"),
                "create" => {}
                "delete" => deletes += 1,
                other => panic!("{other}: {e}"),
            }
        }
        want.remove("p00");
        assert_eq!(created, want, "{filter}");
        assert_eq!(deletes, 1, "deletes pass every where: {filter}");
    }

    // fields: only the paths named, inside their objects and arrays.
    let mut socket = connect(
        &s,
        "cursor=0&fields=text,embed.images.alt&where=likes%20%3E%3D%2020",
    )
    .await;
    let events = drain(&mut socket).await;
    assert!(!events.is_empty());
    for e in events
        .iter()
        .filter(|e| e["commit"]["operation"] == "create")
    {
        let record = &e["commit"]["record"];
        let i: u64 = e["commit"]["rkey"].as_str().unwrap()[1..].parse().unwrap();
        assert_eq!(
            record,
            &json!({"text": format!("post {i}"), "embed": {"images": [{"alt": format!("alt {i}")}]}}),
            "{e}"
        );
    }

    // An options_update changes both.
    socket
        .send(Message::text(
            json!({"type": "options_update", "payload": {"where": "likes = 7", "fields": ["likes"]}})
                .to_string(),
        ))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    for (rkey, likes) in [("q1", 6), ("q2", 7)] {
        let (status, body) = s
            .post(
                "com.atproto.repo.createRecord",
                &json!({"repo": DID, "collection": POST, "rkey": rkey,
                        "record": {"$type": POST, "text": rkey, "likes": likes}}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }
    let events = drain(&mut socket).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["commit"]["rkey"], "q2");
    assert_eq!(events[0]["commit"]["record"], json!({"likes": 7}));
    drop(socket);

    // Refused before the upgrade, with the parser's words.
    for (query, words) in [
        ("where=likes%20%3E", "where: at position"),
        (
            "where=text%20%3E%20%22abc%22",
            "only integers and AT Protocol datetimes",
        ),
        ("fields=a..b", "not a record path"),
    ] {
        let (status, body) = s.get_path(&format!("/subscribe?{query}")).await;
        assert_eq!(status, 400, "{query}: {body}");
        assert!(
            body["message"].as_str().unwrap().contains(words),
            "{query}: {body}"
        );
    }
    s.stop().await;
}
