//! `com.atproto.server.*` sessions: `createSession`, `getSession`,
//! `refreshSession`, `deleteSession` and `describeServer` (accounts,
//! invite codes and app passwords are in `atproto_accounts`).

use std::sync::Arc;

use accounts::{
    account::{Account, Status},
    login_limits::{self, Refusal},
    sessions::Session,
};
use axum::{
    Extension, Json,
    body::Bytes,
    extract::{State, rejection::BytesRejection},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde::Deserialize;
use serde_json::{Value, json};
use store::Kv;

use super::{
    request::{Result, bearer, body},
    session::{accounts_error, open_session, session_account, session_json, sessions, token_error},
};
use crate::{app::App, connections::ClientIp, error::XrpcError};

/// The message of every failed login, whether the account exists or not.
const BAD_LOGIN: &str = "Invalid identifier or password";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreateSessionInput {
    identifier: String,
    password: String,
}

/// A `429 RateLimitExceeded` with the `ratelimit-*` headers the reference
/// PDS sends.
fn rate_limited(refusal: Refusal, now: u64) -> Response {
    let mut response = XrpcError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "RateLimitExceeded",
        "too many failed logins: try again later",
    )
    .into_response();
    let limit = refusal.limit;
    let headers = response.headers_mut();
    let mut set = |name: &'static str, value: String| {
        if let Ok(v) = HeaderValue::from_str(&value) {
            headers.insert(name, v);
        }
    };
    set("ratelimit-limit", limit.failures.to_string());
    set("ratelimit-remaining", "0".to_owned());
    set("ratelimit-reset", refusal.reset_at.to_string());
    set(
        "ratelimit-policy",
        format!("{};w={}", limit.failures, limit.window_secs),
    );
    set(
        header::RETRY_AFTER.as_str(),
        refusal.reset_at.saturating_sub(now).max(1).to_string(),
    );
    response
}

/// `com.atproto.server.createSession`: with the account's password or
/// one of its app passwords.
pub(crate) async fn create_session<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    client: Option<Extension<ClientIp>>,
    raw: std::result::Result<Bytes, BytesRejection>,
) -> Result<Response> {
    let sessions = sessions(&app)?;
    let (input, _): (CreateSessionInput, _) = body(raw)?;
    let account_key = format!("account:{}", input.identifier.to_ascii_lowercase());
    let address_key = client.map(|Extension(ClientIp(ip))| format!("address:{ip}"));
    let mut keys = vec![(account_key.as_str(), login_limits::PER_ACCOUNT)];
    if let Some(address) = &address_key {
        keys.push((address.as_str(), login_limits::PER_ADDRESS));
    }
    let now = (sessions.clock)();
    if let Err(refusal) = app.login_limits.check(&keys, now) {
        return Ok(rate_limited(refusal, now));
    }
    let account = app
        .accounts
        .find(&input.identifier)
        .await
        .map_err(accounts_error)?;
    let app_passwords = match &account {
        Some(a) if accounts::app_passwords::looks_like_app_password(&input.password) => app
            .accounts
            .app_passwords(&a.did)
            .await
            .map_err(accounts_error)?,
        _ => Vec::new(),
    };
    let password = input.password;
    // An unknown account costs the same hash as a wrong password.
    let found = app
        .hashing(move || match account {
            Some(a) if a.password_matches(&password) => Some((a, None)),
            Some(a) => app_passwords
                .into_iter()
                .find(|p| p.matches(&password))
                .map(|p| (a, Some(p.name))),
            None => {
                accounts::password::verify_against_nothing(&password);
                None
            }
        })
        .await?;
    let Some((account, app_password)) = found else {
        app.login_limits.fail(&keys, now);
        return Err(XrpcError::new(
            StatusCode::UNAUTHORIZED,
            "AuthenticationRequired",
            BAD_LOGIN,
        ));
    };
    if account.status == Status::Takendown {
        return Err(XrpcError::new(
            StatusCode::UNAUTHORIZED,
            "AccountTakedown",
            "this account has been taken down",
        ));
    }
    Ok(Json(open_session(&app, &account, app_password, None).await?).into_response())
}

/// `com.atproto.server.getSession`.
pub(crate) async fn get_session<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
) -> Result<Json<Value>> {
    let (account, _) = session_account(&app, &headers, false).await?;
    Ok(Json(session_json(&app, &account).await?))
}

/// The refresh token in `headers`, verified and still open: its account,
/// id and session.
async fn refresh_claims<K: Kv + 'static>(
    app: &App<K>,
    headers: &HeaderMap,
) -> Result<(Account, String, Session)> {
    let sessions = sessions(app)?;
    let now = (sessions.clock)();
    let token = bearer(headers)
        .and_then(|t| std::str::from_utf8(t).ok())
        .ok_or_else(|| {
            XrpcError::auth("this request needs an Authorization: Bearer <refreshJwt> header")
        })?;
    let claims = sessions
        .tokens
        .verify_refresh(token, now)
        .map_err(token_error)?;
    let jti = claims.jti.unwrap_or_default();
    let Some(session) = app
        .accounts
        .session(&jti, &claims.sub, now)
        .await
        .map_err(accounts_error)?
    else {
        return Err(XrpcError::new(
            StatusCode::BAD_REQUEST,
            "ExpiredToken",
            "this session has ended (logged out, refreshed long ago, or its app password revoked): log in again",
        ));
    };
    let account = app
        .accounts
        .by_did(&claims.sub)
        .await
        .map_err(accounts_error)?
        .ok_or_else(|| XrpcError::auth("the token's account no longer exists"))?;
    Ok((account, jti, session))
}

/// `com.atproto.server.refreshSession`: a new pair for a refresh token,
/// of the same scope.
pub(crate) async fn refresh_session<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
) -> Result<Json<Value>> {
    let (account, old, session) = refresh_claims(&app, &headers).await?;
    if account.status == Status::Takendown {
        return Err(XrpcError::new(
            StatusCode::UNAUTHORIZED,
            "AccountTakedown",
            "this account has been taken down",
        ));
    }
    Ok(Json(
        open_session(&app, &account, session.app_password, Some(&old)).await?,
    ))
}

/// `com.atproto.server.deleteSession`: logs out (the refresh token stops
/// working; access tokens run out within their lifetime).
pub(crate) async fn delete_session<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
) -> Result<Json<Value>> {
    let (_, jti, _) = refresh_claims(&app, &headers).await?;
    app.accounts
        .close_session(&jti)
        .await
        .map_err(accounts_error)?;
    Ok(Json(json!({})))
}

/// `com.atproto.server.describeServer`.
pub(crate) async fn describe_server<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
) -> Result<Json<Value>> {
    let sessions = sessions(&app)?;
    let policy = &sessions.policy;
    let domains: Vec<String> = policy
        .handle_domains
        .iter()
        .map(|d| format!(".{}", d.trim_start_matches('.')))
        .collect();
    Ok(Json(json!({
        "did": sessions.tokens.server_did(),
        "availableUserDomains": domains,
        "inviteCodeRequired": !policy.open_registration,
    })))
}
