//! The datetime index takes every datetime the reference's strict check
//! takes, years before 1000 and the last day of 9999 included (it used to
//! skip them silently while the Lexicon validator accepted them), and
//! query literals take the same ones; a datetime without a time zone names
//! no instant and is not indexed.

use crate::common;

use repo::{IndexKind, Write};
use serde_json::json;

const DID: &str = "did:web:calendar";
const COLLECTION: &str = "app.test.event";

#[test]
fn early_and_late_datetimes_are_indexed_and_queried() {
    common::rt().block_on(async {
        let repos = common::repos();
        let repo = repos.create(DID).await.unwrap();
        let times = [
            ("early", "0999-06-15T12:00:00Z"),
            ("late", "9999-12-31T23:30:00Z"),
            ("offset", "9999-12-31T23:30:00+05:00"),
            ("usual", "2024-01-01T00:00:00Z"),
            ("zoneless", "2024-01-01T00:00:00"),
        ];
        repo.apply_writes(
            times
                .iter()
                .map(|(rkey, t)| Write::Create {
                    collection: COLLECTION.into(),
                    rkey: Some((*rkey).into()),
                    value: json!({ "at": t }),
                })
                .collect(),
            None,
        )
        .await
        .unwrap();
        repo.add_index(COLLECTION, "at", IndexKind::Datetime, |_| {})
            .await
            .unwrap();
        let keys = |q: &'static str| {
            let repo = repo.clone();
            async move {
                repo.query(COLLECTION, Some(q), None, false, 100)
                    .await
                    .unwrap()
                    .records
                    .into_iter()
                    .map(|(k, _)| k)
                    .collect::<Vec<_>>()
            }
        };
        assert_eq!(
            keys("at exists").await,
            ["early", "late", "offset", "usual"]
        );
        assert_eq!(keys(r#"at < "1000-01-01T00:00:00Z""#).await, ["early"]);
        assert_eq!(keys(r#"at = "0999-06-15T13:00:00+01:00""#).await, ["early"]);
        assert_eq!(keys(r#"at > "9999-12-31T23:00:00Z""#).await, ["late"]);
        // +05:00: 18:30 UTC on the last day.
        assert_eq!(
            keys(r#"at >= "9999-12-31T18:30:00Z" and at < "9999-12-31T23:00:00Z""#).await,
            ["offset"]
        );
        // A literal without a time zone is refused, as a record's such value
        // is not indexed.
        let refused = repo
            .query(COLLECTION, Some(r#"at = "2024-01-01T00:00:00""#), None, false, 10)
            .await;
        assert!(
            matches!(refused, Err(repo::Error::InvalidQuery(ref m)) if m.contains("not an AT Protocol datetime")),
            "{refused:?}"
        );
        assert_eq!(repo.index_differences().await.unwrap(), Vec::<String>::new());
    });
}
