//! The `dev.datarepo.*` index endpoints: addIndex / listIndexes /
//! dropIndex, queryRecords (listRecords' shape and paging), countRecords,
//! topValues, and their errors (`InvalidRequest` naming the position or
//! path; writes need the token).

use crate::common;

use common::{DID, TestServer};
use serde_json::{Value, json};

const POST: &str = "app.bsky.feed.post";

async fn create(server: &TestServer, rkey: &str, record: Value) {
    let (status, body) = server
        .post(
            "com.atproto.repo.createRecord",
            &json!({"repo": DID, "collection": POST, "rkey": rkey, "record": record}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn index_endpoints_answer_as_documented() {
    let server = TestServer::memory().await;
    // Ten posts: langs alternate, likes 0..9; created before the index.
    for i in 0..10 {
        let lang = if i % 3 == 0 { "fr" } else { "en" };
        create(
            &server,
            &format!("p{i}"),
            json!({"langs": [lang], "likes": i}),
        )
        .await;
    }
    let (status, body) = server
        .post(
            "dev.datarepo.addIndex",
            &json!({"repo": DID, "collection": POST, "path": "langs", "kind": "keyword"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    // The build's job id beside what the build answers (`index_builds_are_jobs.rs`).
    let mut body = body;
    assert!(body["job"].is_string(), "{body}");
    body.as_object_mut().unwrap().remove("job");
    assert_eq!(
        body,
        json!({"collection": POST, "path": "langs", "kind": "keyword", "records": 10})
    );
    let (status, _) = server
        .post(
            "dev.datarepo.addIndex",
            &json!({"repo": DID, "collection": POST, "path": "likes", "kind": "integer"}),
        )
        .await;
    assert_eq!(status, 200);
    // Adding it twice is an error.
    let (status, body) = server
        .post(
            "dev.datarepo.addIndex",
            &json!({"repo": DID, "collection": POST, "path": "likes", "kind": "integer"}),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"], "InvalidRequest");

    // Commits after the build are indexed too.
    create(&server, "p10", json!({"langs": ["fr"], "likes": 10})).await;

    let (_, body) = server
        .get(
            "dev.datarepo.listIndexes",
            &[("repo", DID), ("collection", POST)],
        )
        .await;
    assert_eq!(
        body,
        json!({"indexes": [
            {"collection": POST, "path": "langs", "kind": "keyword"},
            {"collection": POST, "path": "likes", "kind": "integer"},
        ]})
    );

    // fr: p0 p3 p6 p9 p10; with likes >= 5: p6 p9 p10.
    let filter = r#"langs = "fr" and likes >= 5"#;
    let (status, body) = server
        .get(
            "dev.datarepo.countRecords",
            &[("repo", DID), ("collection", POST), ("where", filter)],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, json!({"count": 3}));

    let (_, page) = server
        .get(
            "dev.datarepo.queryRecords",
            &[
                ("repo", DID),
                ("collection", POST),
                ("where", filter),
                ("limit", "2"),
            ],
        )
        .await;
    let uris: Vec<&str> = page["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(
        uris,
        [
            format!("at://{DID}/{POST}/p10"),
            format!("at://{DID}/{POST}/p6")
        ]
    );
    assert_eq!(page["records"][0]["value"]["likes"], 10);
    assert!(page["records"][0]["cid"].is_string());
    let cursor = page["cursor"].as_str().unwrap();
    let (_, page) = server
        .get(
            "dev.datarepo.queryRecords",
            &[
                ("repo", DID),
                ("collection", POST),
                ("where", filter),
                ("limit", "2"),
                ("cursor", cursor),
            ],
        )
        .await;
    assert_eq!(page["records"].as_array().unwrap().len(), 1);
    assert_eq!(page["records"][0]["uri"], format!("at://{DID}/{POST}/p9"));
    assert!(page.get("cursor").is_none(), "{page}");

    let (_, body) = server
        .get(
            "dev.datarepo.topValues",
            &[("repo", DID), ("collection", POST), ("path", "langs")],
        )
        .await;
    assert_eq!(
        body,
        json!({"top": [{"value": "en", "count": 6}, {"value": "fr", "count": 5}]})
    );
    let (_, body) = server
        .get(
            "dev.datarepo.topValues",
            &[
                ("repo", DID),
                ("collection", POST),
                ("path", "langs"),
                ("where", "likes < 3"),
                ("limit", "1"),
            ],
        )
        .await;
    assert_eq!(body, json!({"top": [{"value": "en", "count": 2}]}));

    // Errors name what is wrong.
    for (filter, says) in [
        ("langs = ", "at position 8"),
        (
            "lang = \"en\"",
            "datarepo index add app.bsky.feed.post lang",
        ),
        ("langs > \"en\"", "keyword index"),
        ("likes = \"x\"", "integer"),
    ] {
        let (status, body) = server
            .get(
                "dev.datarepo.countRecords",
                &[("repo", DID), ("collection", POST), ("where", filter)],
            )
            .await;
        assert_eq!(status, 400, "{filter}: {body}");
        assert_eq!(body["error"], "InvalidRequest");
        assert!(
            body["message"].as_str().unwrap().contains(says),
            "{filter}: {body}"
        );
    }

    // Writes need the token.
    let (status, _) = server
        .post_raw(
            "dev.datarepo.dropIndex",
            serde_json::to_vec(&json!({"repo": DID, "collection": POST, "path": "likes"})).unwrap(),
            None,
        )
        .await;
    assert_eq!(status, 401);
    let (status, body) = server
        .post(
            "dev.datarepo.dropIndex",
            &json!({"repo": DID, "collection": POST, "path": "likes"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = server
        .get(
            "dev.datarepo.countRecords",
            &[("repo", DID), ("collection", POST), ("where", "likes > 1")],
        )
        .await;
    assert_eq!(status, 400, "{body}");
    server.stop().await;
}
