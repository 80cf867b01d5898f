//! `fields=` on `listRecords` and `queryRecords` (a datarepo addition)
//! keeps only those paths of each value; `dev.datarepo.aggregateRecords`
//! answers `stats` as `datarepo query --stats` prints it, with the mean,
//! and `groupBy` (with `stats` per group) in pages; a bad path, or no
//! aggregate asked, is a 400 naming it.

use crate::common;

use common::TestServer;
use serde_json::{Value, json};

const DID: &str = "did:web:fields.example";
const POST: &str = "app.bsky.feed.post";
const LANGS: [&str; 3] = ["en", "fr", "en"];

#[tokio::test]
async fn fields_and_stats() {
    let s = TestServer::memory().await;
    let likes = [5_i64, -2, 9, 9, 0, 13];
    for (i, n) in likes.iter().enumerate() {
        let (status, out) = s
            .post(
                "com.atproto.repo.createRecord",
                &json!({"repo": DID, "collection": POST, "rkey": format!("p{i}"),
                        "record": {"$type": POST, "text": format!("post {i}"), "likes": n,
                                   "lang": LANGS[i % 3]}}),
            )
            .await;
        assert_eq!(status, 200, "{out}");
    }
    for (path, kind) in [
        ("likes", "integer"),
        ("lang", "keyword"),
        ("text", "keyword"),
    ] {
        let (status, out) = s
            .post(
                "dev.datarepo.addIndex",
                &json!({"repo": DID, "collection": POST, "path": path, "kind": kind}),
            )
            .await;
        assert_eq!(status, 200, "{out}");
    }

    let values = |page: &Value| -> Vec<Value> {
        page["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["value"].clone())
            .collect()
    };
    let (status, page) = s
        .get(
            "com.atproto.repo.listRecords",
            &[("repo", DID), ("collection", POST), ("fields", "text")],
        )
        .await;
    assert_eq!(status, 200, "{page}");
    let want: Vec<Value> = (0..likes.len())
        .map(|i| json!({"text": format!("post {i}")}))
        .collect();
    assert_eq!(values(&page), want);

    let (status, page) = s
        .get(
            "dev.datarepo.queryRecords",
            &[
                ("repo", DID),
                ("collection", POST),
                ("where", "likes > 4"),
                ("fields", "likes"),
            ],
        )
        .await;
    assert_eq!(status, 200, "{page}");
    let want: Vec<Value> = likes
        .iter()
        .filter(|n| **n > 4)
        .map(|n| json!({"likes": n}))
        .collect();
    assert_eq!(values(&page), want);

    let (status, stats) = s
        .get(
            "dev.datarepo.aggregateRecords",
            &[
                ("repo", DID),
                ("collection", POST),
                ("where", "likes >= 0"),
                ("stats", "likes"),
            ],
        )
        .await;
    assert_eq!(status, 200, "{stats}");
    let kept: Vec<i64> = likes.iter().copied().filter(|n| *n >= 0).collect();
    assert_eq!(stats["count"], kept.len());
    assert_eq!(stats["sum"], kept.iter().sum::<i64>());
    assert_eq!(stats["min"], *kept.iter().min().unwrap());
    assert_eq!(stats["max"], *kept.iter().max().unwrap());
    assert_eq!(
        stats["avg"].as_f64().unwrap(),
        kept.iter().sum::<i64>() as f64 / kept.len() as f64
    );

    // sort=likes&order=desc: by value, ties by record key.
    let (status, page) = s
        .get(
            "dev.datarepo.queryRecords",
            &[
                ("repo", DID),
                ("collection", POST),
                ("sort", "likes"),
                ("order", "desc"),
                ("fields", "likes"),
            ],
        )
        .await;
    assert_eq!(status, 200, "{page}");
    let mut by_likes: Vec<(i64, String)> = likes
        .iter()
        .enumerate()
        .map(|(i, n)| (*n, format!("p{i}")))
        .collect();
    by_likes.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let want: Vec<Value> = by_likes.iter().map(|(n, _)| json!({"likes": n})).collect();
    assert_eq!(values(&page), want);
    let uris: Vec<String> = page["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r["uri"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        uris,
        by_likes.iter().map(|(_, k)| k.clone()).collect::<Vec<_>>()
    );

    // groupBy=lang with stats of likes, a group per page.
    let mut groups = Vec::new();
    let mut cursor = String::new();
    loop {
        let mut q = vec![
            ("repo", DID),
            ("collection", POST),
            ("groupBy", "lang"),
            ("stats", "likes"),
            ("limit", "1"),
        ];
        if !cursor.is_empty() {
            q.push(("cursor", &cursor));
        }
        let (status, page) = s.get("dev.datarepo.aggregateRecords", &q).await;
        assert_eq!(status, 200, "{page}");
        groups.extend(page["groups"].as_array().unwrap().iter().cloned());
        match page["cursor"].as_str() {
            Some(c) => cursor = c.to_owned(),
            None => break,
        }
    }
    let group = |lang: &str| {
        let of: Vec<i64> = (0..likes.len())
            .filter(|i| LANGS[i % 3] == lang)
            .map(|i| likes[i])
            .collect();
        let sum: i64 = of.iter().sum();
        json!({"key": [lang], "count": of.len(), "stats": {"count": of.len(), "sum": sum,
               "min": of.iter().min(), "max": of.iter().max(),
               "avg": sum as f64 / of.len() as f64}})
    };
    assert_eq!(groups, vec![group("en"), group("fr")]);
    // groupBy is an array: repeated, one group per pair of values.
    let (status, page) = s
        .get(
            "dev.datarepo.aggregateRecords",
            &[
                ("repo", DID),
                ("collection", POST),
                ("groupBy", "lang"),
                ("groupBy", "text"),
            ],
        )
        .await;
    assert_eq!(status, 200, "{page}");
    let mut pairs: Vec<Value> = (0..likes.len())
        .map(|i| json!({"key": [LANGS[i % 3], format!("post {i}")], "count": 1}))
        .collect();
    pairs.sort_by_key(|g| g["key"].to_string());
    assert_eq!(page["groups"], json!(pairs));

    // histogram=likes, width 5: buckets [5k, 5k+5) from the lowest value's
    // to the highest's.
    let (status, out) = s
        .get(
            "dev.datarepo.aggregateRecords",
            &[
                ("repo", DID),
                ("collection", POST),
                ("histogram", "likes"),
                ("interval", "5"),
            ],
        )
        .await;
    assert_eq!(status, 200, "{out}");
    let floor = |v: i64| v.div_euclid(5) * 5;
    let (lo, hi) = (
        floor(*likes.iter().min().unwrap()),
        floor(*likes.iter().max().unwrap()),
    );
    let want: Vec<Value> = (lo..=hi)
        .step_by(5)
        .map(|start| {
            let count = likes.iter().filter(|v| floor(**v) == start).count();
            json!({"start": start, "count": count})
        })
        .collect();
    assert_eq!(out, json!({"buckets": want}));

    for (method, query, words) in [
        (
            "com.atproto.repo.listRecords",
            vec![("fields", "a..b")],
            "not a record path",
        ),
        ("dev.datarepo.aggregateRecords", vec![], "stats=PATH"),
        (
            "dev.datarepo.queryRecords",
            vec![("sort", "likes"), ("order", "up")],
            "asc or desc",
        ),
    ] {
        let mut q = vec![("repo", DID), ("collection", POST)];
        q.extend(query);
        let (status, body) = s.get(method, &q).await;
        assert_eq!(status, 400, "{method}: {body}");
        assert!(body["message"].as_str().unwrap().contains(words), "{body}");
    }
    s.stop().await;
}
