//! `com.atproto.sync.*`: repositories as CAR files, latest commits and
//! the repository list.

use std::sync::Arc;

use axum::{
    Json,
    body::Body,
    extract::{Query, State, rejection::QueryRejection},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
};
use repo::record_uri;
use serde::Deserialize;
use serde_json::{Value, json};
use store::Kv;

use super::request::{Result, query};
use crate::{
    app::{App, content_type},
    error::XrpcError,
};

const CAR: &str = "application/vnd.ipld.car";

#[derive(Deserialize)]
pub(crate) struct DidParams {
    did: String,
    since: Option<String>,
}

/// Streams a CAR body produced by `write` into the response.
fn car_response<F, Fut>(write: F) -> Response
where
    F: FnOnce(tokio::io::DuplexStream) -> Fut,
    Fut: Future<Output = std::result::Result<(), repo::Error>> + Send + 'static,
{
    let (writer, reader) = tokio::io::duplex(64 * 1024);
    let task = write(writer);
    tokio::spawn(async move {
        if let Err(e) = task.await {
            // The status is already sent: the client sees a truncated CAR.
            tracing::warn!(error = %e, "CAR stream failed");
        }
    });
    let body = Body::from_stream(tokio_util::io::ReaderStream::new(reader));
    ([content_type(CAR)], body).into_response()
}

pub(crate) async fn get_repo<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<DidParams>, QueryRejection>,
) -> Result<Response> {
    app.authorize_read(&headers).await?;
    let p = query(params)?;
    let since = p
        .since
        .as_deref()
        .map(|s| {
            rkey::Tid::parse(s)
                .map_err(|e| XrpcError::invalid(format!("since: {s:?} is not a rev: {e}")))
        })
        .transpose()?;
    let repo = app.repo(&p.did).await?;
    if let Some(rev) = since {
        // Fail before the status line if the rev is unknown.
        repo.commit_at(rev).await?;
    }
    Ok(car_response(move |out| async move {
        repo.export_car(out, since, |_| {}).await.map(|_| ())
    }))
}

#[derive(Deserialize)]
pub(crate) struct SyncRecordParams {
    did: String,
    collection: String,
    rkey: String,
}

pub(crate) async fn sync_get_record<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<SyncRecordParams>, QueryRejection>,
) -> Result<Response> {
    app.authorize_read(&headers).await?;
    let p = query(params)?;
    rkey::validate_nsid(&p.collection).map_err(|e| XrpcError::invalid(e.to_string()))?;
    rkey::validate_record_key(&p.rkey).map_err(|e| XrpcError::invalid(e.to_string()))?;
    let repo = app.repo(&p.did).await?;
    let (car, found) = repo
        .export_record_car(Vec::new(), &p.collection, &p.rkey)
        .await?;
    if found.is_none() {
        return Err(XrpcError::new(
            StatusCode::BAD_REQUEST,
            "RecordNotFound",
            format!(
                "record not found: {}",
                record_uri(repo.id(), &p.collection, &p.rkey)
            ),
        ));
    }
    Ok(([content_type(CAR)], car).into_response())
}

#[derive(Deserialize)]
pub(crate) struct LatestCommitParams {
    did: String,
}

pub(crate) async fn get_latest_commit<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<LatestCommitParams>, QueryRejection>,
) -> Result<Json<Value>> {
    app.authorize_read(&headers).await?;
    let p = query(params)?;
    let repo = app.repo(&p.did).await?;
    let head = repo.head().await?;
    Ok(Json(
        json!({ "cid": head.commit.to_string(), "rev": head.rev.to_string() }),
    ))
}

#[derive(Deserialize)]
pub(crate) struct ListReposParams {
    limit: Option<i64>,
    cursor: Option<String>,
}

pub(crate) async fn list_repos<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<ListReposParams>, QueryRejection>,
) -> Result<Json<Value>> {
    app.authorize_read(&headers).await?;
    let p = query(params)?;
    let limit = match p.limit {
        None => 500,
        Some(n @ 1..=1000) => usize::try_from(n).unwrap_or(500),
        Some(n) => {
            return Err(XrpcError::invalid(format!(
                "limit {n} is out of range (1 to 1000)"
            )));
        }
    };
    let all = app.repos.list().await?;
    let mut page: Vec<_> = all
        .into_iter()
        .filter(|(id, _)| p.cursor.as_deref().is_none_or(|c| id.as_str() > c))
        .take(limit + 1)
        .collect();
    let more = page.len() > limit;
    page.truncate(limit);
    let mut repos: Vec<Value> = Vec::with_capacity(page.len());
    for (id, head) in &page {
        let mut repo = json!({
            "did": id,
            "head": head.commit.to_string(),
            "rev": rkey::Tid::from_u64(head.rev).to_string(),
            "active": true,
        });
        // An account deactivated or taken down: as the reference says it.
        let status = app
            .accounts
            .status(id)
            .await
            .map_err(|e| XrpcError::internal(e.to_string()))?;
        if let Some(status) = status.filter(|s| *s != accounts::account::Status::Active) {
            repo["active"] = false.into();
            repo["status"] = status.as_str().into();
        }
        repos.push(repo);
    }
    let mut out = json!({ "repos": repos });
    if more && let Some((last, _)) = page.last() {
        out["cursor"] = json!(last);
    }
    Ok(Json(out))
}
