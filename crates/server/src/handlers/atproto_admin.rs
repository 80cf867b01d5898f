//! `com.atproto.admin.*` for the operator (the admin token):
//! `getAccountInfo`, `updateAccountPassword` and `updateSubjectStatus`
//! (take an account down or deactivate it, and back), and the account's
//! own `com.atproto.server.deactivateAccount` / `activateAccount`.

use std::sync::Arc;

use accounts::account::Status;
use axum::{
    Json,
    body::Bytes,
    extract::{Query, State, rejection::BytesRejection, rejection::QueryRejection},
    http::HeaderMap,
};
use serde::Deserialize;
use serde_json::{Value, json};
use store::Kv;

use super::{
    request::{Result, body, query},
    session::{accounts_error, hash_password, session_account, sessions},
};
use crate::{app::App, error::XrpcError};

#[derive(Deserialize)]
pub(crate) struct AccountParams {
    did: String,
}

/// `com.atproto.admin.getAccountInfo?did=`: `{did, handle, email?,
/// indexedAt, status}` (`status` a datarepo addition).
pub(crate) async fn get_account_info<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<AccountParams>, QueryRejection>,
) -> Result<Json<Value>> {
    sessions(&app)?;
    app.check_token(&headers, "account administration")?;
    let params = query(params)?;
    let account = app
        .accounts
        .find(&params.did)
        .await
        .map_err(accounts_error)?
        .ok_or_else(|| accounts_error(accounts::Error::AccountNotFound(params.did.clone())))?;
    let mut out = account.to_json();
    out["indexedAt"] = account.created_at.clone().into();
    Ok(Json(out))
}

#[derive(Deserialize)]
pub(crate) struct UpdatePasswordInput {
    did: String,
    password: String,
}

/// `com.atproto.admin.updateAccountPassword {did, password}`: a reset;
/// every session of the account ends.
pub(crate) async fn update_account_password<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    raw: std::result::Result<Bytes, BytesRejection>,
) -> Result<Json<Value>> {
    sessions(&app)?;
    app.check_token(&headers, "account administration")?;
    let (input, _): (UpdatePasswordInput, _) = body(raw)?;
    let hash = hash_password(&app, input.password).await?;
    app.accounts
        .set_password_hash(&input.did, hash)
        .await
        .map_err(accounts_error)?;
    Ok(Json(json!({})))
}

#[derive(Deserialize)]
pub(crate) struct Applied {
    applied: bool,
}

#[derive(Deserialize)]
pub(crate) struct Subject {
    did: String,
}

#[derive(Deserialize)]
pub(crate) struct UpdateSubjectStatusInput {
    subject: Subject,
    takedown: Option<Applied>,
    deactivated: Option<Applied>,
}

/// `com.atproto.admin.updateSubjectStatus` for a repository subject
/// (`{subject: {$type: "com.atproto.admin.defs#repoRef", did}, takedown?:
/// {applied}, deactivated?: {applied}}`): a takedown ends every session
/// and refuses logins, writes and reads until lifted.
pub(crate) async fn update_subject_status<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    raw: std::result::Result<Bytes, BytesRejection>,
) -> Result<Json<Value>> {
    sessions(&app)?;
    app.check_token(&headers, "account administration")?;
    let (input, _): (UpdateSubjectStatusInput, _) = body(raw)?;
    let did = input.subject.did;
    let current = app
        .accounts
        .by_did(&did)
        .await
        .map_err(accounts_error)?
        .ok_or_else(|| accounts_error(accounts::Error::AccountNotFound(did.clone())))?
        .status;
    let status = match (&input.takedown, &input.deactivated) {
        (Some(Applied { applied: true }), _) => Status::Takendown,
        (_, Some(Applied { applied: true })) => Status::Deactivated,
        (Some(Applied { applied: false }), _) if current == Status::Takendown => Status::Active,
        (_, Some(Applied { applied: false })) if current == Status::Deactivated => Status::Active,
        (None, None) => {
            return Err(XrpcError::invalid(
                "say what to change: takedown or deactivated, {\"applied\": true|false}",
            ));
        }
        _ => current,
    };
    app.accounts
        .set_status(&did, status, Some(announce_status(&app, &did, status)))
        .await
        .map_err(accounts_error)?;
    tracing::info!(%did, status = status.as_str(), "account status changed by the operator");
    let mut out = json!({
        "subject": {"$type": "com.atproto.admin.defs#repoRef", "did": did},
    });
    if input.takedown.is_some() {
        out["takedown"] = json!({"applied": status == Status::Takendown});
    }
    if input.deactivated.is_some() {
        out["deactivated"] = json!({"applied": status == Status::Deactivated});
    }
    Ok(Json(out))
}

/// `com.atproto.server.deactivateAccount` (the account's own full
/// session): its repository stops taking writes and reads as
/// `RepoDeactivated` until it activates again.
pub(crate) async fn deactivate_account<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
) -> Result<Json<Value>> {
    own_status(&app, &headers, Status::Deactivated).await
}

/// `com.atproto.server.activateAccount`: undoes a deactivation (not a
/// takedown, which only the operator lifts).
pub(crate) async fn activate_account<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
) -> Result<Json<Value>> {
    own_status(&app, &headers, Status::Active).await
}

async fn own_status<K: Kv + 'static>(
    app: &App<K>,
    headers: &HeaderMap,
    status: Status,
) -> Result<Json<Value>> {
    let (account, _) = session_account(app, headers, true).await?;
    if account.status == Status::Takendown {
        return Err(XrpcError::new(
            axum::http::StatusCode::UNAUTHORIZED,
            "AccountTakedown",
            "this account has been taken down",
        ));
    }
    app.accounts
        .set_status(
            &account.did,
            status,
            Some(announce_status(app, &account.did, status)),
        )
        .await
        .map_err(accounts_error)?;
    Ok(Json(json!({})))
}

/// The stream event announcing the account `did`'s new `status`.
fn announce_status<K: Kv>(app: &App<K>, did: &str, status: Status) -> store::StreamEvents {
    repo::account_stream_events(
        did,
        vec![repo::AccountChange::status(status.as_str())],
        app.repos.now_micros(),
    )
}
