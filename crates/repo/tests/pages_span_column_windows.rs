//! Pages of a filtered query over more records than one roaring container
//! holds (2^16 columns), with matches few and far apart: a page evaluates
//! the filter a window of columns at a time, so its pages must cross
//! windows without losing or repeating a record, both ways, and counts
//! must equal the model's. Compared with the records' own values (a
//! `BTreeMap` of what was written).

use crate::common;

use std::collections::BTreeMap;

use repo::{IndexKind, Write};
use serde_json::{Value, json};

const COLLECTION: &str = "app.test.post";
const DID: &str = "did:example:windows";
/// Past two containers' worth of columns.
const RECORDS: u64 = 140_000;

fn rkey(i: u64) -> String {
    format!("r{i:07}")
}

/// A record whose `kind` and words make a few records rare, and where
/// they are (clustered at the ends, spread through the middle).
fn record(i: u64) -> Value {
    let rare = i % 9_973 == 5 || i < 3 || i + 4 > RECORDS;
    let late = i > 131_072 && i.is_multiple_of(97);
    json!({
        "kind": if rare { "rare" } else { "common" },
        "text": format!("{} {}", if rare { "needle hay" } else { "hay" }, if late { "late" } else { "early" }),
        "n": i,
    })
}

/// Every page of `where_` at `limit` a page, by cursor, in one direction.
async fn pages(
    repo: &repo::Repository<store::MemoryKv>,
    where_: &str,
    reverse: bool,
    limit: usize,
) -> Vec<String> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = repo
            .query(COLLECTION, Some(where_), cursor.as_deref(), reverse, limit)
            .await
            .unwrap();
        assert!(page.records.len() <= limit);
        out.extend(page.records.into_iter().map(|(k, _)| k));
        assert!(out.len() <= RECORDS as usize, "{where_}: pages repeat");
        match page.cursor {
            Some(c) => cursor = Some(c),
            None => return out,
        }
    }
}

#[test]
fn pages_cross_column_windows_both_ways() {
    common::rt().block_on(async {
        let repos = common::repos();
        let repo = repos.create(DID).await.unwrap();
        let mut model: BTreeMap<String, Value> = BTreeMap::new();
        let ids: Vec<u64> = (0..RECORDS).collect();
        for chunk in ids.chunks(20_000) {
            let writes = chunk
                .iter()
                .map(|i| {
                    model.insert(rkey(*i), record(*i));
                    Write::Create {
                        collection: COLLECTION.into(),
                        rkey: Some(rkey(*i)),
                        value: record(*i),
                    }
                })
                .collect();
            repo.apply_writes(writes, None).await.unwrap();
        }
        // Built over the records (packed columns), then written past
        // (columns given out one at a time) and deleted from.
        repo.add_index(COLLECTION, "kind", IndexKind::Keyword, |_| {})
            .await
            .unwrap();
        repo.add_index(COLLECTION, "text", IndexKind::Text, |_| {})
            .await
            .unwrap();
        let mut writes = Vec::new();
        for i in [RECORDS, RECORDS + 1] {
            let value = json!({"kind": "rare", "text": "needle late", "n": i});
            model.insert(rkey(i), value.clone());
            writes.push(Write::Create {
                collection: COLLECTION.into(),
                rkey: Some(rkey(i)),
                value,
            });
        }
        for i in [1, 9_973 * 3 + 5, RECORDS - 2] {
            model.remove(&rkey(i));
            writes.push(Write::Delete {
                collection: COLLECTION.into(),
                rkey: rkey(i),
                swap_record: None,
            });
        }
        repo.apply_writes(writes, None).await.unwrap();

        type Verdict = fn(&Value) -> bool;
        let queries: [(&str, Verdict); 5] = [
            (r#"kind = "rare""#, |v| v["kind"] == "rare"),
            (r#"text matches "needle late""#, |v| {
                v["text"].as_str().unwrap().contains("needle")
                    && v["text"].as_str().unwrap().contains("late")
            }),
            (r#"text matches "late""#, |v| {
                v["text"].as_str().unwrap().contains("late")
            }),
            (r#"kind = "rare" and not text matches "early""#, |v| {
                v["kind"] == "rare" && !v["text"].as_str().unwrap().contains("early")
            }),
            (r#"kind = "nothing""#, |_| false),
        ];
        for (where_, verdict) in queries {
            let want: Vec<String> = model
                .iter()
                .filter(|(_, v)| verdict(v))
                .map(|(k, _)| k.clone())
                .collect();
            assert_eq!(
                repo.count(COLLECTION, Some(where_)).await.unwrap(),
                want.len() as u64,
                "count of {where_}"
            );
            for limit in [1, 4, 1000] {
                assert_eq!(
                    pages(&repo, where_, false, limit).await,
                    want,
                    "{where_}, {limit} a page"
                );
                let mut back = pages(&repo, where_, true, limit).await;
                back.reverse();
                assert_eq!(back, want, "{where_} reversed, {limit} a page");
            }
        }
    });
}
