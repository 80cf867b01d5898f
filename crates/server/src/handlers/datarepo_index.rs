//! `dev.datarepo.*` index management: declaring, dropping and rebuilding
//! field indexes, and the jobs that build them.

use std::sync::Arc;

use axum::{
    Json,
    body::Bytes,
    extract::{Query, State, rejection::BytesRejection, rejection::QueryRejection},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
};
use serde::Deserialize;
use serde_json::{Value, json};
use store::Kv;

use super::request::{Result, body, query};
use crate::{app::App, error::XrpcError, jobs};

#[derive(Deserialize)]
pub(crate) struct ListIndexesParams {
    repo: String,
    collection: Option<String>,
}

/// `dev.datarepo.listIndexes` → `{"indexes": [{"collection", "path", "kind"}]}`.
pub(crate) async fn list_indexes<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<ListIndexesParams>, QueryRejection>,
) -> Result<Json<Value>> {
    app.authorize_read(&headers).await?;
    let p = query(params)?;
    let repo = app.repo(&p.repo).await?;
    let list = repo.indexes(p.collection.as_deref()).await?;
    let indexes: Vec<Value> = list
        .iter()
        .map(|d| json!({"collection": d.collection, "path": d.path, "kind": d.kind.name()}))
        .collect();
    Ok(Json(json!({ "indexes": indexes })))
}

#[derive(Deserialize)]
pub(crate) struct AddIndexInput {
    repo: String,
    collection: String,
    path: String,
    kind: String,
}

/// `dev.datarepo.addIndex` (write token) → `{collection, path, kind, records}`.
pub(crate) async fn add_index<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    raw: std::result::Result<Bytes, BytesRejection>,
) -> Result<Response> {
    let writer = app.authorize_write(&headers).await?;
    let (input, _): (AddIndexInput, _) = body(raw)?;
    writer.may_write(&input.repo)?;
    let kind: repo::IndexKind = input.kind.parse().map_err(XrpcError::invalid)?;
    let repo = app.repo(&input.repo).await?;
    let (collection, path) = (input.collection, input.path);
    let params = json!({"collection": collection, "path": path, "kind": kind.name()});
    let job = app.jobs.start("addIndex", repo.id(), params);
    // In a task of its own: a client that goes away does not cut a build short.
    let running = Arc::clone(&job);
    tokio::spawn(async move {
        let _finished = jobs::Job::ensure_finished(&running);
        let built = repo
            .add_index(&collection, &path, kind, |p| running.index_progress(p))
            .await;
        running.finish(built.map_err(XrpcError::from).map(|records| {
            json!({"collection": collection, "path": path, "kind": kind.name(), "records": records})
        }));
    });
    job_answer(&app, &job).await
}

/// The answer of a request that started `job`: its result (with `job`, its
/// id) or error when it ends within `job_answer_wait`, else `202` with the
/// job as `getJob` describes it.
async fn job_answer<K>(app: &App<K>, job: &jobs::Job) -> Result<Response> {
    match job.outcome_within(app.config.limits.job_answer_wait).await {
        Some(Ok(mut result)) => {
            result["job"] = json!(job.id());
            Ok(Json(result).into_response())
        }
        Some(Err(e)) => Err(e),
        None => Ok((StatusCode::ACCEPTED, Json(json!({"job": job.describe()}))).into_response()),
    }
}

/// `dev.datarepo.checkToken` (GET): `{"writes": true}` when the request's
/// token authorizes writes, `401` otherwise; what the web interface asks
/// to say whether the token it was given is the server's.
pub(crate) async fn check_token<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
) -> Result<Json<Value>> {
    app.authorize_write(&headers).await?;
    Ok(Json(json!({ "writes": true })))
}

#[derive(Deserialize)]
pub(crate) struct GetJobParams {
    id: String,
}

/// `dev.datarepo.getJob?id=` → the job (`JobNotFound` once forgotten).
pub(crate) async fn get_job<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<GetJobParams>, QueryRejection>,
) -> Result<Json<Value>> {
    app.authorize_read(&headers).await?;
    let p = query(params)?;
    let job = app.jobs.get(&p.id).ok_or_else(|| {
        XrpcError::new(
            StatusCode::BAD_REQUEST,
            "JobNotFound",
            format!(
                "no job {:?}: jobs are kept in the server's memory (the last 100 finished), \
                 and a restart forgets them",
                p.id
            ),
        )
    })?;
    Ok(Json(job.describe()))
}

#[derive(Deserialize)]
pub(crate) struct ListJobsParams {
    repo: Option<String>,
}

/// `dev.datarepo.listJobs[?repo=]` → `{jobs: [...]}`, newest first.
pub(crate) async fn list_jobs<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<ListJobsParams>, QueryRejection>,
) -> Result<Json<Value>> {
    app.authorize_read(&headers).await?;
    let p = query(params)?;
    let jobs: Vec<Value> = app
        .jobs
        .list(p.repo.as_deref())
        .iter()
        .map(|j| j.describe())
        .collect();
    Ok(Json(json!({ "jobs": jobs })))
}

#[derive(Deserialize)]
pub(crate) struct DropIndexInput {
    repo: String,
    collection: String,
    path: String,
}

/// `dev.datarepo.dropIndex` (write token) → `{}`.
pub(crate) async fn drop_index<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    raw: std::result::Result<Bytes, BytesRejection>,
) -> Result<Json<Value>> {
    let writer = app.authorize_write(&headers).await?;
    let (input, _): (DropIndexInput, _) = body(raw)?;
    writer.may_write(&input.repo)?;
    let repo = app.repo(&input.repo).await?;
    tokio::spawn(async move { repo.drop_index(&input.collection, &input.path).await })
        .await
        .map_err(|e| XrpcError::internal(format!("index drop task failed: {e}")))??;
    Ok(Json(json!({})))
}

#[derive(Deserialize)]
pub(crate) struct RebuildIndexesInput {
    repo: String,
}

/// `dev.datarepo.rebuildIndexes` (write token) → `{rebuilt: true,
/// records}`, as `datarepo index rebuild`: every field index of the
/// repository built again from its records.
pub(crate) async fn rebuild_indexes<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    raw: std::result::Result<Bytes, BytesRejection>,
) -> Result<Response> {
    let writer = app.authorize_write(&headers).await?;
    let (input, _): (RebuildIndexesInput, _) = body(raw)?;
    writer.may_write(&input.repo)?;
    let repo = app.repo(&input.repo).await?;
    let job = app.jobs.start("rebuildIndexes", repo.id(), json!({}));
    let running = Arc::clone(&job);
    tokio::spawn(async move {
        let _finished = jobs::Job::ensure_finished(&running);
        let rebuilt = repo
            .rebuild_indexes(|p| running.progress(p.records, Some(p.total)))
            .await;
        running.finish(
            rebuilt
                .map_err(XrpcError::from)
                .map(|records| json!({ "rebuilt": true, "records": records })),
        );
    });
    job_answer(&app, &job).await
}
