//! Blobs over HTTP: `com.atproto.repo.uploadBlob`,
//! `com.atproto.sync.getBlob` and `com.atproto.sync.listBlobs`.

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use axum::{
    Json,
    body::Body,
    extract::{Query, State, rejection::QueryRejection},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use cid::Cid;
use serde::Deserialize;
use serde_json::{Value, json};
use store::{BlobError, Kv};

use super::{
    access::Writer,
    request::{Result, parse_cid, query},
};
use crate::{app::App, error::XrpcError};

#[derive(Deserialize)]
pub(crate) struct UploadParams {
    repo: Option<String>,
}

/// Uploads in this process so far: each one's temporary object's name.
static UPLOADS: AtomicU64 = AtomicU64::new(0);

fn blob_error(e: BlobError) -> XrpcError {
    match e {
        BlobError::TooLarge { max } => XrpcError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "BlobTooLarge",
            format!(
                "the blob is larger than this server takes ({max} bytes, serve --max-blob-bytes)"
            ),
        ),
        BlobError::Body(why) => XrpcError::invalid(format!("the upload was cut off: {why}")),
        BlobError::NotFound(cid) => not_found(&cid.to_string()),
        e @ (BlobError::Store(_) | BlobError::Damaged { .. }) => {
            tracing::error!(error = %e, "blob storage failed");
            XrpcError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "InternalServerError",
                e.to_string(),
            )
        }
    }
}

fn not_found(cid: &str) -> XrpcError {
    XrpcError::new(
        StatusCode::NOT_FOUND,
        "BlobNotFound",
        format!("Blob not found: {cid}"),
    )
}

/// `com.atproto.repo.uploadBlob`: the raw body, stored as a temporary blob
/// of the session's repository (or, with the admin token, of `?repo=`);
/// `{blob: {$type: "blob", ref: {$link}, mimeType, size}}`.
pub(crate) async fn upload_blob<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<UploadParams>, QueryRejection>,
    body: Body,
) -> Result<Json<Value>> {
    let writer = app.authorize_write(&headers).await?;
    let params = query(params)?;
    let repo_id = match (&writer, params.repo) {
        (Writer::Account(did), None) => did.clone(),
        (_, Some(repo)) => {
            writer.may_write(&repo)?;
            repo
        }
        (Writer::Admin, None) => {
            return Err(XrpcError::invalid(
                "with the admin token, name the repository the blob is for: uploadBlob?repo=DID",
            ));
        }
    };
    let max = app.config.limits.max_blob_bytes;
    let claimed_len = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(len) = claimed_len
        && len > max
    {
        return Err(blob_error(BlobError::TooLarge { max }));
    }
    let repo = app.repo_for_write(&repo_id).await?;
    let name = format!(
        "{}-{}",
        std::process::id(),
        UPLOADS.fetch_add(1, Ordering::Relaxed)
    );
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let (cid, info) = repo
        .store_blob(body.into_data_stream(), max, content_type, &name)
        .await
        .map_err(|e| match e {
            repo::Error::Blob(e) => blob_error(e),
            other => other.into(),
        })?;
    Ok(Json(json!({"blob": {
        "$type": "blob",
        "ref": {"$link": cid.to_string()},
        "mimeType": info.mime_type,
        "size": info.size,
    }})))
}

#[derive(Deserialize)]
pub(crate) struct GetBlobParams {
    did: String,
    cid: String,
}

/// The byte range a `Range` header asks of a blob of `size` bytes: `None`
/// for the whole blob, `Err` when it cannot be satisfied.
fn requested_range(
    headers: &HeaderMap,
    size: u64,
) -> std::result::Result<Option<std::ops::Range<u64>>, ()> {
    let Some(value) = headers.get(header::RANGE).and_then(|v| v.to_str().ok()) else {
        return Ok(None);
    };
    // One range of bytes; anything else is served whole, as RFC 9110 allows.
    let Some(spec) = value.trim().strip_prefix("bytes=") else {
        return Ok(None);
    };
    if spec.contains(',') {
        return Ok(None);
    }
    let Some((start, end)) = spec.split_once('-') else {
        return Ok(None);
    };
    let (start, end) = (start.trim(), end.trim());
    let range = if start.is_empty() {
        // The last `end` bytes.
        let n: u64 = end.parse().map_err(|_| ())?;
        if n == 0 {
            return Err(());
        }
        size.saturating_sub(n)..size
    } else {
        let first: u64 = start.parse().map_err(|_| ())?;
        let last = if end.is_empty() {
            size.saturating_sub(1)
        } else {
            end.parse::<u64>()
                .map_err(|_| ())?
                .min(size.saturating_sub(1))
        };
        if first >= size || last < first {
            return Err(());
        }
        first..last + 1
    };
    Ok(Some(range))
}

/// `com.atproto.sync.getBlob?did=&cid=`: the bytes of a blob the
/// repository's records refer to, with their stored type; `Range` works.
pub(crate) async fn get_blob<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<GetBlobParams>, QueryRejection>,
) -> Result<Response> {
    app.authorize_read(&headers).await?;
    let p = query(params)?;
    let cid: Cid = parse_cid(&p.cid, "cid")?;
    let repo = app.repo(&p.did).await?;
    let info = repo
        .blob(&cid)
        .await?
        .filter(|b| b.refs > 0)
        .ok_or_else(|| not_found(&p.cid))?;
    let etag = format!("\"{cid}\"");
    if headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"))
    {
        return Ok(StatusCode::NOT_MODIFIED.into_response());
    }
    let range = match requested_range(&headers, info.size) {
        Ok(range) => range,
        Err(()) => {
            let mut refused = XrpcError::new(
                StatusCode::RANGE_NOT_SATISFIABLE,
                "InvalidRequest",
                format!("the blob is {} bytes", info.size),
            )
            .into_response();
            if let Ok(v) = HeaderValue::from_str(&format!("bytes */{}", info.size)) {
                refused.headers_mut().insert(header::CONTENT_RANGE, v);
            }
            return Ok(refused);
        }
    };
    let partial = range.is_some();
    let bytes = app
        .repos
        .store()
        .kv()
        .blobs()
        .get(&cid, range)
        .await
        .map_err(blob_error)?;
    let mut response = Response::new(Body::from_stream(bytes.stream));
    *response.status_mut() = if partial {
        StatusCode::PARTIAL_CONTENT
    } else {
        StatusCode::OK
    };
    let h = response.headers_mut();
    let mut set = |name: header::HeaderName, value: String| {
        if let Ok(v) = HeaderValue::from_str(&value) {
            h.insert(name, v);
        }
    };
    set(header::CONTENT_TYPE, info.mime_type.clone());
    set(
        header::CONTENT_LENGTH,
        (bytes.range.end - bytes.range.start).to_string(),
    );
    set(
        header::CONTENT_SECURITY_POLICY,
        "default-src 'none'; sandbox".to_owned(),
    );
    set(header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_owned());
    set(header::CONTENT_DISPOSITION, "attachment".to_owned());
    set(header::ETAG, etag);
    set(header::ACCEPT_RANGES, "bytes".to_owned());
    set(
        header::CACHE_CONTROL,
        "private, max-age=31536000, immutable".to_owned(),
    );
    if partial {
        set(
            header::CONTENT_RANGE,
            format!(
                "bytes {}-{}/{}",
                bytes.range.start,
                bytes.range.end - 1,
                bytes.size
            ),
        );
    }
    Ok(response)
}

#[derive(Deserialize)]
pub(crate) struct ListBlobsParams {
    did: String,
    since: Option<String>,
    limit: Option<i64>,
    cursor: Option<String>,
}

/// `com.atproto.sync.listBlobs?did=&since=&limit=&cursor=`: `{cids,
/// cursor?}`, the blobs the repository's records refer to, in CID order
/// (`since`: first referred to by a commit after that rev).
pub(crate) async fn list_blobs<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<ListBlobsParams>, QueryRejection>,
) -> Result<Json<Value>> {
    app.authorize_read(&headers).await?;
    let p = query(params)?;
    let limit = super::request::page_limit(p.limit, 500, 1000)?;
    let since = match p.since.as_deref() {
        None => None,
        Some(rev) => Some(
            rkey::Tid::parse(rev)
                .map_err(|e| XrpcError::invalid(format!("since: {e}")))?
                .as_u64(),
        ),
    };
    let repo = app.repo(&p.did).await?;
    let mut cids = Vec::new();
    let mut after = p.cursor.clone();
    let mut more = false;
    'pages: loop {
        let page = repo.list_blobs(after.as_deref(), 1000).await?;
        let full = page.len() == 1000;
        for (cid, info) in page {
            after = Some(cid.clone());
            if info.refs == 0 || since.is_some_and(|s| info.first_rev.is_none_or(|r| r <= s)) {
                continue;
            }
            if cids.len() == limit {
                more = true;
                break 'pages;
            }
            cids.push(cid);
        }
        if !full {
            break;
        }
    }
    let mut out = json!({ "cids": cids });
    if more && let Some(last) = out["cids"].as_array().and_then(|c| c.last()).cloned() {
        out["cursor"] = last;
    }
    Ok(Json(out))
}
