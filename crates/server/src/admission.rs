//! What a write request must pass before its body is read: the token, and a
//! share of the memory all request bodies in flight may hold together.
//!
//! Write handlers read the whole body before they run, so without this a
//! client with no token could make the server buffer `max_body_bytes` per
//! connection. Here the token is checked from the headers alone, and the
//! body's declared length (or, for a chunked body, the most it may be) is
//! reserved from a byte budget; past the budget the request is answered
//! `503` with `Retry-After` at once, its body never read.

use std::sync::Arc;

use axum::{
    extract::{Request, State},
    http::{HeaderValue, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use store::Kv;

use crate::{app::App, error::XrpcError};

/// Seconds a client refused for the budget is told to wait.
const RETRY_AFTER_SECS: u32 = 1;

/// Authorizes a write from its headers, then reserves its body's bytes for
/// as long as the request runs.
pub(crate) async fn admit_write<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    request: Request,
    next: Next,
) -> Response {
    if let Err(e) = app.authorize_write(request.headers()).await {
        return e.into_response();
    }
    let max = app.config.limits.max_body_bytes;
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(n) = declared
        && n > max as u64
    {
        return XrpcError::too_large(format!(
            "the request body is {n} bytes; this server accepts at most {max} (--max-body-bytes)"
        ))
        .into_response();
    }
    // A body without a length may be as long as the limit allows.
    let want = declared.map_or(max as u64, |n| n).max(1);
    let want = u32::try_from(want)
        .unwrap_or(u32::MAX)
        .min(app.body_budget.total);
    let Ok(permit) = Arc::clone(&app.body_budget.bytes).try_acquire_many_owned(want) else {
        let mut response = XrpcError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "ServerBusy",
            format!(
                "request bodies in flight already hold this server's budget of {} bytes \
                 (--max-inflight-body-bytes); retry in {RETRY_AFTER_SECS} s",
                app.body_budget.total
            ),
        )
        .into_response();
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
        return response;
    };
    let response = next.run(request).await;
    drop(permit);
    response
}
