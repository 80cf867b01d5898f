//! The service itself: health, metrics, and answers for what is not here.

use std::sync::Arc;

use axum::{
    Json,
    extract::{Query, State},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
};
use serde_json::json;
use store::Kv;

use crate::{
    app::{App, content_type},
    error::XrpcError,
};

/// The health check: the version and the server's role (`writer`,
/// `standby`, `replica`; a standby also names the writer). With
/// `?writer=true` it answers `503` unless this server takes writes now, so
/// that a load balancer can send writes to the writer alone.
pub(crate) async fn health<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    Query(query): Query<HealthQuery>,
) -> Response {
    let role = app.roles.role();
    let mut body = json!({ "version": env!("CARGO_PKG_VERSION"), "role": role.name() });
    if let crate::role::Role::Standby {
        writer: Some(address),
    } = &role
    {
        body["writer"] = json!(address);
    }
    let status = if query.writer && !app.roles.may_acknowledge() {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    };
    (status, Json(body)).into_response()
}

#[derive(Debug, Default, serde::Deserialize)]
pub(crate) struct HealthQuery {
    #[serde(default)]
    writer: bool,
}

/// Prometheus metrics: a read like the others (`--private-reads` covers it).
pub(crate) async fn metrics<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
) -> Response {
    if let Err(e) = app.authorize_read(&headers).await {
        return e.into_response();
    }
    let gauge = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    app.metrics
        .firehose_subscribers
        .set(gauge(app.firehose.subscribers()));
    app.metrics
        .firehose_buffered_bytes
        .set(gauge(app.firehose.live.held_bytes()));
    (
        [content_type(
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        app.metrics.encode(),
    )
        .into_response()
}

pub(crate) async fn not_implemented(
    axum::extract::Path(method): axum::extract::Path<String>,
) -> XrpcError {
    XrpcError::new(
        StatusCode::NOT_IMPLEMENTED,
        "MethodNotImplemented",
        format!("this server does not implement {method}"),
    )
}

/// A known method asked with the wrong HTTP method: answered as the
/// reference PDS answers it (400 `InvalidRequest`, "Incorrect HTTP method"),
/// naming the method it takes.
pub(crate) async fn wrong_http_method(
    method: axum::http::Method,
    uri: axum::http::Uri,
) -> XrpcError {
    let expected = if method == axum::http::Method::GET {
        "POST"
    } else {
        "GET"
    };
    XrpcError::new(
        StatusCode::BAD_REQUEST,
        "InvalidRequest",
        format!(
            "Incorrect HTTP method: {} takes {expected}, not {method}",
            uri.path().trim_start_matches("/xrpc/")
        ),
    )
}

pub(crate) async fn not_found() -> XrpcError {
    XrpcError::new(
        StatusCode::NOT_FOUND,
        "NotFound",
        "no such endpoint (XRPC methods are under /xrpc/)",
    )
}
