//! `dev.datarepo.queryRecords`, `countRecords`, `topValues` and
//! `aggregateRecords`: queries over the field indexes.

use std::sync::Arc;

use axum::{
    Json,
    extract::{Query, RawQuery, State, rejection::QueryRejection},
    http::{HeaderMap, StatusCode},
};
use repo::record_uri;
use serde::Deserialize;
use serde_json::{Value, json};
use store::Kv;

use super::request::{Result, page_limit, query};
use crate::{app::App, error::XrpcError};

/// Runs a query in its turn (at most `max_concurrent_queries` at once) and
/// within its budget (`query_timeout`).
async fn bounded_query<K: Kv, T>(
    app: &App<K>,
    query: impl Future<Output = std::result::Result<T, repo::Error>>,
) -> Result<T> {
    let _turn = app
        .queries
        .acquire()
        .await
        .map_err(|_| XrpcError::internal("the query pool is closed"))?;
    let budget = app.config.limits.query_timeout;
    match tokio::time::timeout(budget, query).await {
        Ok(result) => Ok(result?),
        Err(_) => Err(XrpcError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "QueryTimeout",
            format!(
                "the query ran longer than its {budget:?} budget (serve --query-timeout-secs) \
                 and was abandoned; narrow it (fewer values, a smaller range, a where on a \
                 rarer value)"
            ),
        )),
    }
}

/// `order`: `asc` (the default) or `desc`; whether descending.
pub(super) fn descending(order: Option<&str>) -> Result<bool> {
    match order {
        None | Some("asc") => Ok(false),
        Some("desc") => Ok(true),
        Some(other) => Err(XrpcError::invalid(format!("order {other:?}: asc or desc"))),
    }
}

/// One page of matching records: ordered by the indexed path `sort`
/// (descending with `descending`) when given, else by record key
/// (backwards with `reverse`).
#[allow(clippy::too_many_arguments)]
pub(super) async fn records_page<K: Kv + 'static>(
    app: &App<K>,
    repo: &repo::Repository<K>,
    collection: &str,
    where_: Option<&str>,
    sort: Option<&str>,
    (descending, reverse): (bool, bool),
    cursor: Option<&str>,
    limit: usize,
) -> Result<repo::QueryPage> {
    match sort {
        Some(path) => {
            bounded_query(
                app,
                repo.query_sorted(collection, where_, path, descending, cursor, limit),
            )
            .await
        }
        None => bounded_query(app, repo.query(collection, where_, cursor, reverse, limit)).await,
    }
}

#[derive(Deserialize)]
pub(crate) struct QueryRecordsParams {
    repo: String,
    collection: String,
    #[serde(rename = "where")]
    where_: Option<String>,
    limit: Option<i64>,
    cursor: Option<String>,
    reverse: Option<bool>,
    /// Record paths to keep of each value.
    fields: Option<String>,
    /// An indexed path to order the records by.
    sort: Option<String>,
    /// `asc` (the default) or `desc`, with `sort`.
    order: Option<String>,
}

/// `dev.datarepo.queryRecords`: listRecords' shape, filtered by `where`.
pub(crate) async fn query_records<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<QueryRecordsParams>, QueryRejection>,
) -> Result<Json<Value>> {
    app.authorize_read(&headers).await?;
    let p = query(params)?;
    let limit = page_limit(p.limit, 50, app.config.limits.max_page)?;
    let fields = super::request::record_fields(p.fields.as_deref())?;
    let repo = app.repo(&p.repo).await?;
    let where_ = p.where_.as_deref().filter(|w| !w.trim().is_empty());
    let descending = descending(p.order.as_deref())?;
    let page = records_page(
        &app,
        &repo,
        &p.collection,
        where_,
        p.sort.as_deref(),
        (descending, p.reverse.unwrap_or(false)),
        p.cursor.as_deref(),
        limit,
    )
    .await?;
    let records: Vec<Value> = page
        .records
        .iter()
        .map(|(rkey, r)| {
            json!({
                "uri": record_uri(repo.id(), &p.collection, rkey),
                "cid": r.cid().to_string(),
                "value": r.to_json_fields(fields.as_ref()),
            })
        })
        .collect();
    let mut out = json!({ "records": records });
    if let Some(cursor) = page.cursor {
        out["cursor"] = json!(cursor);
    }
    Ok(Json(out))
}

#[derive(Deserialize)]
pub(crate) struct CountRecordsParams {
    repo: String,
    collection: String,
    #[serde(rename = "where")]
    where_: Option<String>,
}

/// `dev.datarepo.countRecords` → `{"count"}`.
pub(crate) async fn count_records<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<CountRecordsParams>, QueryRejection>,
) -> Result<Json<Value>> {
    app.authorize_read(&headers).await?;
    let p = query(params)?;
    let repo = app.repo(&p.repo).await?;
    let n = bounded_query(
        &app,
        repo.count(
            &p.collection,
            p.where_.as_deref().filter(|w| !w.trim().is_empty()),
        ),
    )
    .await?;
    Ok(Json(json!({ "count": n })))
}

#[derive(Deserialize)]
pub(crate) struct TopValuesParams {
    repo: String,
    collection: String,
    path: String,
    #[serde(rename = "where")]
    where_: Option<String>,
    limit: Option<i64>,
}

/// `dev.datarepo.topValues` → `{"top": [{"value", "count"}]}`.
pub(crate) async fn top_values<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<TopValuesParams>, QueryRejection>,
) -> Result<Json<Value>> {
    app.authorize_read(&headers).await?;
    let p = query(params)?;
    let limit = page_limit(p.limit, 10, app.config.limits.max_page)?;
    let repo = app.repo(&p.repo).await?;
    let top = bounded_query(
        &app,
        repo.top_values(
            &p.collection,
            &p.path,
            p.where_.as_deref().filter(|w| !w.trim().is_empty()),
            limit,
        ),
    )
    .await?;
    let top: Vec<Value> = top
        .iter()
        .map(|t| json!({"value": t.value.to_json(), "count": t.count}))
        .collect();
    Ok(Json(json!({ "top": top })))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AggregateRecordsParams {
    repo: String,
    collection: String,
    #[serde(rename = "where")]
    where_: Option<String>,
    stats: Option<String>,
    // `groupBy` is an array (repeated, or comma-separated): read from the
    // raw query string, which a struct field cannot hold.
    histogram: Option<String>,
    interval: Option<String>,
    from: Option<String>,
    to: Option<String>,
    limit: Option<i64>,
    cursor: Option<String>,
}

/// `dev.datarepo.aggregateRecords`: `stats=PATH` → `{"count", "sum",
/// "min", "max", "avg"}`; `groupBy=P1&groupBy=P2` (or `P1,P2`; with
/// `stats`, per group) →
/// `{"groups": [{"key", "count", "stats"?}], "cursor"?}`; `histogram=PATH
/// &interval=I[&from&to]` → `{"buckets": [{"start", "count"}]}`; as
/// `datarepo query --stats` / `--group-by` / `--histogram` print them.
pub(crate) async fn aggregate_records<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
    params: std::result::Result<Query<AggregateRecordsParams>, QueryRejection>,
) -> Result<axum::response::Response> {
    use axum::response::IntoResponse;
    app.authorize_read(&headers).await?;
    let p = query(params)?;
    let group_by: Vec<String> = form_urlencoded::parse(raw.unwrap_or_default().as_bytes())
        .filter(|(k, _)| k == "groupBy")
        .flat_map(|(_, v)| {
            v.split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect();
    let where_ = p.where_.as_deref().filter(|w| !w.trim().is_empty());
    let json = |text: String| {
        (
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            text,
        )
            .into_response()
    };
    if let Some(path) = &p.histogram {
        let Some(interval) = &p.interval else {
            return Err(XrpcError::invalid(
                "histogram needs an interval (1d, 1h, 1mo, …; a width for integers)",
            ));
        };
        let repo = app.repo(&p.repo).await?;
        let (kind, buckets) = bounded_query(
            &app,
            repo.histogram(
                &p.collection,
                path,
                where_,
                interval,
                p.from.as_deref(),
                p.to.as_deref(),
            ),
        )
        .await?;
        return Ok(json(repo::buckets_json(kind, &buckets).to_string()));
    }
    if !group_by.is_empty() {
        let paths = group_by;
        let limit = page_limit(p.limit, 50, app.config.limits.max_page)?;
        let repo = app.repo(&p.repo).await?;
        let groups = bounded_query(
            &app,
            repo.group_by(&p.collection, &paths, where_, p.stats.as_deref()),
        )
        .await?;
        let (page, next) =
            repo::groups_page(&groups, p.cursor.as_deref(), limit).map_err(XrpcError::invalid)?;
        return Ok(json(repo::groups_json_text(page, next.as_deref())));
    }
    let Some(path) = p.stats else {
        return Err(XrpcError::invalid(
            "say what to aggregate: stats=PATH, groupBy=PATH[,PATH] or histogram=PATH&interval=I",
        ));
    };
    let repo = app.repo(&p.repo).await?;
    let stats = bounded_query(&app, repo.stats(&p.collection, &path, where_)).await?;
    // Written as text: the sum may pass 64 bits.
    Ok(json(stats.to_json_text()))
}
