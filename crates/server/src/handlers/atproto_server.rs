//! `com.atproto.server.*`: accounts and sessions (`createAccount`,
//! `createSession`, `getSession`, `refreshSession`, `deleteSession`,
//! `describeServer`).

use std::sync::Arc;

use accounts::{
    account::{Account, Status},
    storage::NewAccount,
    tokens::{ACCESS_SCOPE, TokenError},
};
use axum::{
    Json,
    body::Bytes,
    extract::{State, rejection::BytesRejection},
    http::{HeaderMap, StatusCode},
};
use serde::Deserialize;
use serde_json::{Value, json};
use store::Kv;

use super::request::{Result, bearer, body};
use crate::{
    app::{App, Sessions},
    error::XrpcError,
};

/// The message of every failed login, whether the account exists or not.
const BAD_LOGIN: &str = "Invalid identifier or password";

fn sessions<K>(app: &App<K>) -> Result<&Sessions> {
    app.config.sessions.as_ref().ok_or_else(|| {
        XrpcError::new(
            StatusCode::NOT_IMPLEMENTED,
            "MethodNotImplemented",
            "this server has no accounts: start it with a JWT secret (serve --jwt-secret-file)",
        )
    })
}

fn accounts_error(e: accounts::Error) -> XrpcError {
    use accounts::Error as E;
    match e {
        E::InvalidHandle { .. } => {
            XrpcError::new(StatusCode::BAD_REQUEST, "InvalidHandle", e.to_string())
        }
        E::HandleTaken(_) => {
            XrpcError::new(StatusCode::BAD_REQUEST, "HandleNotAvailable", e.to_string())
        }
        E::InvalidDid { .. } | E::DidTaken(_) | E::InvalidPassword(_) => {
            XrpcError::invalid(e.to_string())
        }
        E::AccountNotFound(_) => {
            XrpcError::new(StatusCode::BAD_REQUEST, "AccountNotFound", e.to_string())
        }
        other => XrpcError::internal(other.to_string()),
    }
}

/// A fresh random id for a refresh token (128 bits, hex).
fn new_jti(sessions: &Sessions) -> String {
    let mut bytes = [0u8; 32];
    (sessions.random)(&mut bytes);
    bytes[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// A new pair of tokens for `account`, its refresh token stored (in place
/// of `replacing`'s, on a refresh); the body `createSession`,
/// `createAccount` and `refreshSession` answer.
async fn open_session<K: Kv + 'static>(
    app: &App<K>,
    account: &Account,
    replacing: Option<&str>,
) -> Result<Value> {
    let sessions = sessions(app)?;
    let now = (sessions.clock)();
    let jti = new_jti(sessions);
    let pair = sessions
        .tokens
        .issue(&account.did, ACCESS_SCOPE, &jti, now)
        .map_err(|e| XrpcError::internal(e.to_string()))?;
    let exp = pair.refresh_claims.exp;
    match replacing {
        None => app.accounts.open_session(&jti, &account.did, exp).await,
        Some(old) => {
            app.accounts
                .rotate_session(old, &jti, &account.did, exp, now)
                .await
        }
    }
    .map_err(accounts_error)?;
    let mut out = session_json(account);
    out["accessJwt"] = pair.access.into();
    out["refreshJwt"] = pair.refresh.into();
    Ok(out)
}

/// `{did, handle, email?, active, status?}`.
fn session_json(account: &Account) -> Value {
    let mut out = json!({
        "did": account.did,
        "handle": account.handle,
        "active": account.status == Status::Active,
    });
    if let Some(email) = &account.email {
        out["email"] = email.clone().into();
    }
    if account.status != Status::Active {
        out["status"] = account.status.as_str().into();
    }
    out
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreateAccountInput {
    handle: String,
    password: String,
    email: Option<String>,
    did: Option<String>,
}

/// `com.atproto.server.createAccount`: with the admin token.
pub(crate) async fn create_account<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    raw: std::result::Result<Bytes, BytesRejection>,
) -> Result<Json<Value>> {
    let sessions = sessions(&app)?;
    app.check_token(&headers, "account creation")?;
    let (input, _): (CreateAccountInput, _) = body(raw)?;
    let handle = accounts::account::normalize_handle(&input.handle).map_err(accounts_error)?;
    let did = input.did.unwrap_or_else(|| format!("did:web:{handle}"));
    let salt = accounts::password::salt(|bytes| (sessions.random)(bytes));
    let created_at =
        jiff::Timestamp::from_second(i64::try_from((sessions.clock)()).unwrap_or(i64::MAX))
            .map(|t| t.to_string())
            .unwrap_or_default();
    // Argon2id takes tens of milliseconds: off the request threads.
    let password = input.password;
    let password_hash = app
        .hashing(move || accounts::password::hash(&password, salt))
        .await?
        .map_err(accounts_error)?;
    let account = app
        .accounts
        .create(NewAccount {
            did: &did,
            handle: &handle,
            email: input.email.as_deref(),
            password_hash,
            created_at: &created_at,
        })
        .await
        .map_err(accounts_error)?;
    // The account's repository: created now (signed, with a key of its
    // own, when the server has a key directory), or an existing one.
    app.repo_for_write(&account.did).await?;
    Ok(Json(open_session(&app, &account, None).await?))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreateSessionInput {
    identifier: String,
    password: String,
}

/// `com.atproto.server.createSession`.
pub(crate) async fn create_session<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    raw: std::result::Result<Bytes, BytesRejection>,
) -> Result<Json<Value>> {
    sessions(&app)?;
    let (input, _): (CreateSessionInput, _) = body(raw)?;
    let account = app
        .accounts
        .find(&input.identifier)
        .await
        .map_err(accounts_error)?;
    let password = input.password;
    // An unknown account costs the same hash as a wrong password.
    let found = app
        .hashing(move || match account {
            Some(a) if a.password_matches(&password) => Some(a),
            Some(_) => None,
            None => {
                accounts::password::verify_against_nothing(&password);
                None
            }
        })
        .await?;
    let Some(account) = found else {
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
    Ok(Json(open_session(&app, &account, None).await?))
}

/// The account of the access token in `headers`.
async fn session_account<K: Kv + 'static>(app: &App<K>, headers: &HeaderMap) -> Result<Account> {
    let sessions = sessions(app)?;
    let token = bearer(headers)
        .and_then(|t| std::str::from_utf8(t).ok())
        .ok_or_else(|| {
            XrpcError::auth("this request needs an Authorization: Bearer <accessJwt> header")
        })?;
    let claims = sessions
        .tokens
        .verify_access(token, (sessions.clock)())
        .map_err(token_error)?;
    app.accounts
        .by_did(&claims.sub)
        .await
        .map_err(accounts_error)?
        .ok_or_else(|| XrpcError::auth("the token's account no longer exists"))
}

pub(crate) fn token_error(e: TokenError) -> XrpcError {
    match e {
        TokenError::Expired => XrpcError::new(
            StatusCode::BAD_REQUEST,
            "ExpiredToken",
            "the token has expired",
        ),
        TokenError::Invalid(why) => XrpcError::new(StatusCode::BAD_REQUEST, "InvalidToken", why),
    }
}

/// `com.atproto.server.getSession`.
pub(crate) async fn get_session<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
) -> Result<Json<Value>> {
    let account = session_account(&app, &headers).await?;
    Ok(Json(session_json(&account)))
}

/// The refresh token in `headers`, verified and still open: its account
/// and id.
async fn refresh_claims<K: Kv + 'static>(
    app: &App<K>,
    headers: &HeaderMap,
) -> Result<(Account, String)> {
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
    if !app
        .accounts
        .session_open(&jti, &claims.sub, now)
        .await
        .map_err(accounts_error)?
    {
        return Err(XrpcError::new(
            StatusCode::BAD_REQUEST,
            "ExpiredToken",
            "this session has ended (logged out, or refreshed long ago): log in again",
        ));
    }
    let account = app
        .accounts
        .by_did(&claims.sub)
        .await
        .map_err(accounts_error)?
        .ok_or_else(|| XrpcError::auth("the token's account no longer exists"))?;
    Ok((account, jti))
}

/// `com.atproto.server.refreshSession`: a new pair for a refresh token.
pub(crate) async fn refresh_session<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
) -> Result<Json<Value>> {
    let (account, old) = refresh_claims(&app, &headers).await?;
    Ok(Json(open_session(&app, &account, Some(&old)).await?))
}

/// `com.atproto.server.deleteSession`: logs out (the refresh token stops
/// working; access tokens run out within their lifetime).
pub(crate) async fn delete_session<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
) -> Result<Json<Value>> {
    let (_, jti) = refresh_claims(&app, &headers).await?;
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
    Ok(Json(json!({
        "did": sessions.tokens.server_did(),
        "availableUserDomains": [],
        "inviteCodeRequired": true,
    })))
}
