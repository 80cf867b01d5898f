//! What the account and session endpoints share: the server's session
//! configuration, opening a session (its tokens and the body answered),
//! the account of an access token, and how account errors are answered.

use accounts::{
    account::{Account, Status},
    sessions::Session,
    tokens::{ACCESS_SCOPE, APP_PASS_SCOPE, Claims, TokenError},
};
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};
use store::Kv;

use super::request::{Result, bearer};
use crate::{
    app::{App, Sessions},
    error::XrpcError,
};

pub(super) fn sessions<K>(app: &App<K>) -> Result<&Sessions> {
    app.config.sessions.as_ref().ok_or_else(|| {
        XrpcError::new(
            StatusCode::NOT_IMPLEMENTED,
            "MethodNotImplemented",
            "this server has no accounts: start it with a JWT secret (serve --jwt-secret-file)",
        )
    })
}

pub(super) fn accounts_error(e: accounts::Error) -> XrpcError {
    use accounts::Error as E;
    match e {
        E::InvalidHandle { .. } => {
            XrpcError::new(StatusCode::BAD_REQUEST, "InvalidHandle", e.to_string())
        }
        E::HandleTaken(_) => {
            XrpcError::new(StatusCode::BAD_REQUEST, "HandleNotAvailable", e.to_string())
        }
        E::InvalidInviteCode => {
            XrpcError::new(StatusCode::BAD_REQUEST, "InvalidInviteCode", e.to_string())
        }
        E::InvalidDid { .. }
        | E::DidTaken(_)
        | E::InvalidPassword(_)
        | E::AppPasswordExists(_)
        | E::AppPasswordNotFound(_)
        | E::TooManyAppPasswords(_) => XrpcError::invalid(e.to_string()),
        E::AccountNotFound(_) => {
            XrpcError::new(StatusCode::BAD_REQUEST, "AccountNotFound", e.to_string())
        }
        other => XrpcError::internal(other.to_string()),
    }
}

/// `n` fresh random bytes (at most 32).
pub(super) fn random_bytes<const N: usize>(sessions: &Sessions) -> [u8; N] {
    let mut bytes = [0u8; 32];
    (sessions.random)(&mut bytes);
    let mut out = [0u8; N];
    out.copy_from_slice(&bytes[..N]);
    out
}

/// Now as RFC 3339, by the injected clock.
pub(super) fn now_rfc3339(sessions: &Sessions) -> String {
    jiff::Timestamp::from_second(i64::try_from((sessions.clock)()).unwrap_or(i64::MAX))
        .map(|t| t.to_string())
        .unwrap_or_default()
}

/// A new pair of tokens for `account` (of the app password scope when
/// `app_password` names one), its refresh token stored (in place of
/// `replacing`'s, on a refresh); the body `createSession`, `createAccount`
/// and `refreshSession` answer.
pub(super) async fn open_session<K: Kv + 'static>(
    app: &App<K>,
    account: &Account,
    app_password: Option<String>,
    replacing: Option<&str>,
) -> Result<Value> {
    let sessions = sessions(app)?;
    let now = (sessions.clock)();
    let jti: String = random_bytes::<16>(sessions)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let scope = if app_password.is_some() {
        APP_PASS_SCOPE
    } else {
        ACCESS_SCOPE
    };
    let pair = sessions
        .tokens
        .issue(&account.did, scope, &jti, now)
        .map_err(|e| XrpcError::internal(e.to_string()))?;
    let session = Session {
        did: account.did.clone(),
        exp: pair.refresh_claims.exp,
        app_password,
    };
    match replacing {
        None => app.accounts.open_session(&jti, &session).await,
        Some(old) => app.accounts.rotate_session(old, &jti, &session, now).await,
    }
    .map_err(accounts_error)?;
    let mut out = session_json(app, account).await?;
    out["accessJwt"] = pair.access.into();
    out["refreshJwt"] = pair.refresh.into();
    Ok(out)
}

/// `{did, handle, email?, active, status?, didDoc?}`.
pub(super) async fn session_json<K: Kv + 'static>(
    app: &App<K>,
    account: &Account,
) -> Result<Value> {
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
    if let Some(doc) = app.did_document(account).await? {
        out["didDoc"] = doc;
    }
    Ok(out)
}

/// The account of the access token in `headers` and the token's claims;
/// with `full_scope`, an app password's session is refused (it cannot
/// manage the account).
pub(super) async fn session_account<K: Kv + 'static>(
    app: &App<K>,
    headers: &HeaderMap,
    full_scope: bool,
) -> Result<(Account, Claims)> {
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
    if full_scope && claims.scope != ACCESS_SCOPE {
        return Err(XrpcError::new(
            StatusCode::BAD_REQUEST,
            "InvalidToken",
            "a session made with an app password cannot manage the account: log in with the account's password",
        ));
    }
    let account = app
        .accounts
        .by_did(&claims.sub)
        .await
        .map_err(accounts_error)?
        .ok_or_else(|| XrpcError::auth("the token's account no longer exists"))?;
    Ok((account, claims))
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

/// The Argon2id hash of `password` with a fresh salt, computed on the
/// bounded hashing pool (tens of milliseconds: off the request threads).
pub(super) async fn hash_password<K: Kv + 'static>(
    app: &App<K>,
    password: String,
) -> Result<String> {
    let random = &sessions(app)?.random;
    let salt = accounts::password::salt(|bytes| random(bytes));
    app.hashing(move || accounts::password::hash(&password, salt))
        .await?
        .map_err(accounts_error)
}
