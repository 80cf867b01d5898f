//! `app.bsky.actor.getProfile`, for accounts hosted here: enough for the
//! SDKs' login (which fetch the profile) and `send_post`. Every other
//! `app.bsky.*` method answers `MethodNotImplemented`.

use std::sync::Arc;

use axum::{
    Json,
    extract::{Query, State, rejection::QueryRejection},
    http::{HeaderMap, StatusCode},
};
use serde::Deserialize;
use serde_json::{Value, json};
use store::Kv;

use super::request::{Result, query};
use crate::{app::App, error::XrpcError};

#[derive(Deserialize)]
pub(crate) struct ProfileParams {
    actor: String,
}

/// `app.bsky.actor.getProfile?actor=HANDLE|DID` → a minimal
/// `profileViewDetailed`: `did`, `handle`, and `displayName` and
/// `description` from the account's `app.bsky.actor.profile/self` record
/// when it has one, and `avatar`: the `getBlob` URL of its avatar blob.
pub(crate) async fn get_profile<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<ProfileParams>, QueryRejection>,
) -> Result<Json<Value>> {
    app.authorize_read(&headers).await?;
    let params = query(params)?;
    let account = app
        .accounts
        .find(&params.actor)
        .await
        .map_err(|e| XrpcError::internal(e.to_string()))?
        .ok_or_else(|| {
            XrpcError::new(
                StatusCode::BAD_REQUEST,
                "InvalidRequest",
                format!(
                    "Profile not found: no account {} on this server",
                    params.actor
                ),
            )
        })?;
    let mut out = json!({"did": account.did, "handle": account.handle});
    let repo = app.repos.open(&account.did).await.ok();
    if let Some(repo) = repo
        && let Ok(Some(record)) = repo.get_record("app.bsky.actor.profile", "self").await
    {
        let value = record.to_json();
        for field in ["displayName", "description"] {
            if let Some(v) = value.get(field).filter(|v| v.is_string()) {
                out[field] = v.clone();
            }
        }
        // The avatar blob, as a URL clients can fetch: its getBlob here.
        let url = app
            .config
            .sessions
            .as_ref()
            .and_then(|s| s.policy.public_url.as_deref());
        if let Some(cid) = value
            .get("avatar")
            .and_then(|a| a.get("ref"))
            .and_then(|r| r.get("$link"))
            .and_then(Value::as_str)
            && let Some(url) = url
        {
            out["avatar"] = format!(
                "{}/xrpc/com.atproto.sync.getBlob?did={}&cid={cid}",
                url.trim_end_matches('/'),
                account.did
            )
            .into();
        }
    }
    Ok(Json(out))
}
