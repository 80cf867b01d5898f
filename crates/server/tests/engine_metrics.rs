//! `/metrics` exports SlateDB's own metrics next to the server's, as one
//! well-formed OpenMetrics exposition that follows the engine's state.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};

use common::{DID, TestServer, config, sample, slate};
use serde_json::json;

const POST: &str = "app.bsky.feed.post";
const WRITES: u64 = 20;

/// Checks the exposition's shape: it ends with `# EOF`, no family is
/// described twice, every sample belongs to the family described last,
/// and every histogram's buckets are cumulative and end in `+Inf` equal to
/// its `_count`.
fn check_well_formed(text: &str) {
    assert!(text.ends_with("# EOF\n"), "no # EOF at the end");
    let mut described = BTreeSet::new();
    let mut current: Option<(String, String)> = None;
    let mut buckets: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut last_bound: BTreeMap<String, String> = BTreeMap::new();
    let mut counts: BTreeMap<String, f64> = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            assert!(described.insert(name.to_owned()), "{name} described twice");
            current = Some((name.to_owned(), kind.to_owned()));
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let (name, kind) = current.as_ref().expect("a sample before any # TYPE");
        let (series, value) = line.rsplit_once(' ').unwrap();
        let value: f64 = value.parse().unwrap();
        let sample_name = series.split('{').next().unwrap();
        assert!(
            sample_name.starts_with(name.as_str()),
            "{sample_name} under the family {name}"
        );
        if kind == "histogram" {
            // Series: the sample's labels without `le`.
            let labels = series
                .split_once('{')
                .map_or("", |(_, l)| l.trim_end_matches('}'));
            let others: Vec<&str> = labels
                .split(',')
                .filter(|l| !l.starts_with("le=") && !l.is_empty())
                .collect();
            let key = format!("{name}{{{}}}", others.join(","));
            if sample_name.ends_with("_bucket") {
                buckets.entry(key.clone()).or_default().push(value);
                let bound = labels
                    .split(',')
                    .find_map(|l| l.strip_prefix("le="))
                    .expect("a bucket has an le label");
                last_bound.insert(key.clone(), bound.to_owned());
                if labels.contains(r#"le="+Inf""#) {
                    let series_buckets = &buckets[&key];
                    assert!(
                        series_buckets.windows(2).all(|w| w[0] <= w[1]),
                        "{key}: buckets not cumulative: {series_buckets:?}"
                    );
                }
            } else if sample_name.ends_with("_count") {
                counts.insert(key, value);
            }
        }
    }
    for (key, count) in &counts {
        let last = buckets.get(key).and_then(|b| b.last());
        assert_eq!(last, Some(count), "{key}: +Inf bucket is not the count");
        assert_eq!(
            last_bound.get(key).map(String::as_str),
            Some(r#""+Inf""#),
            "{key}: the last bucket is not le=\"+Inf\""
        );
    }
    assert!(!counts.is_empty() || !text.contains("histogram"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_include_the_storage_engines() {
    let dir = testkit::tempdir("engine-metrics");
    let srv = TestServer::start(slate(dir.path()).await, config()).await;

    let before = srv.scrape().await;
    check_well_formed(&before);
    let batches = |text: &str| {
        sample(text, "datarepo_slatedb_db_write_batch_count_total", "")
            .expect("SlateDB's write batch counter is exported")
    };
    let batches_before = batches(&before);
    assert!(
        sample(&before, "datarepo_slatedb_db_l0_sst_count", "").is_some(),
        "SlateDB's L0 gauge is exported"
    );

    for i in 0..WRITES {
        let (status, _) = srv
            .post(
                "com.atproto.repo.createRecord",
                &json!({"repo": DID, "collection": POST, "record": {"i": i}}),
            )
            .await;
        assert_eq!(status, 200);
    }

    let after = srv.scrape().await;
    check_well_formed(&after);
    // Every acknowledged create is a commit, one atomic SlateDB batch.
    let batches_after = batches(&after);
    assert!(
        batches_after - batches_before >= WRITES as f64,
        "{batches_before} -> {batches_after} write batches for {WRITES} commits"
    );
    // The server's own metrics are still there.
    assert_eq!(
        sample(
            &after,
            "datarepo_http_requests_total",
            r#"method="com.atproto.repo.createRecord",status="200""#
        ),
        Some(WRITES as f64)
    );
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_in_memory_store_exports_no_engine_metrics() {
    let srv = TestServer::memory().await;
    let text = srv.scrape().await;
    check_well_formed(&text);
    assert!(!text.contains("slatedb"), "{text}");
    srv.stop().await;
}
