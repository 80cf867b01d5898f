//! `com.atproto.server.*` accounts: `createAccount`, invite codes
//! (`createInviteCode`, `createInviteCodes`) and app passwords
//! (`createAppPassword`, `listAppPasswords`, `revokeAppPassword`).

use std::sync::Arc;

use accounts::{
    app_passwords::{AppPassword, generate_app_password},
    invites::InviteCode,
    storage::NewAccount,
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

use super::{
    request::{Result, bearer, body},
    session::{
        accounts_error, hash_password, now_rfc3339, open_session, random_bytes, session_account,
        sessions,
    },
};
use crate::{app::App, error::XrpcError};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreateAccountInput {
    handle: String,
    password: String,
    email: Option<String>,
    did: Option<String>,
    invite_code: Option<String>,
}

/// `com.atproto.server.createAccount`: with the admin token, with an
/// invite code, or by anyone on a server with open registration. Only the
/// admin may name the DID (attaching an existing repository).
pub(crate) async fn create_account<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    raw: std::result::Result<Bytes, BytesRejection>,
) -> Result<Json<Value>> {
    let sessions = sessions(&app)?;
    let admin = if bearer(&headers).is_some() {
        app.check_token(&headers, "account creation")?;
        true
    } else {
        false
    };
    let (input, _): (CreateAccountInput, _) = body(raw)?;
    let handle = accounts::account::normalize_handle(&input.handle).map_err(accounts_error)?;
    let domains = &sessions.policy.handle_domains;
    if !domains.is_empty()
        && !domains
            .iter()
            .any(|d| handle.ends_with(&format!(".{}", d.trim_start_matches('.'))))
    {
        return Err(XrpcError::new(
            StatusCode::BAD_REQUEST,
            "UnsupportedDomain",
            format!(
                "this server takes handles ending in {} only",
                domains.join(", ")
            ),
        ));
    }
    let invite_code = if admin { None } else { input.invite_code };
    if !admin && invite_code.is_none() && !sessions.policy.open_registration {
        return Err(XrpcError::new(
            StatusCode::BAD_REQUEST,
            "InvalidInviteCode",
            "this server needs an invite code (or the admin token) to create an account",
        ));
    }
    if !admin && input.did.is_some() {
        return Err(XrpcError::auth(
            "only the operator (the admin token) may create an account with a DID of its choosing",
        ));
    }
    let attach = input.did.is_some();
    let (did, key) = match input.did {
        Some(did) => (did, None),
        None => super::identity::new_account_did(sessions, &handle)?,
    };
    // A repository that exists is attached by the operator only: an
    // account made by anyone else never takes over records it did not write.
    let exists = app
        .repos
        .store()
        .head(&did)
        .await
        .map_err(|e| XrpcError::from(repo::Error::from(e)))?
        .is_some();
    if !admin && exists {
        return Err(XrpcError::new(
            StatusCode::BAD_REQUEST,
            "HandleNotAvailable",
            format!("a repository {did} already exists on this server"),
        ));
    }
    let created_at = now_rfc3339(sessions);
    let password_hash = hash_password(&app, input.password).await?;
    let account = app
        .accounts
        .create(NewAccount {
            did: &did,
            handle: &handle,
            email: input.email.as_deref(),
            password_hash,
            created_at: &created_at,
            invite_code: invite_code.as_deref(),
            announce: Some(repo::account_stream_events(
                &did,
                vec![
                    repo::AccountChange::Identity {
                        handle: Some(handle.clone()),
                    },
                    repo::AccountChange::status("active"),
                ],
                app.repos.now_micros(),
            )),
        })
        .await
        .map_err(accounts_error)?;
    if let Err(e) = app.account_repository(&account.did, key, attach).await {
        // No account without its repository.
        let gone = repo::account_stream_events(
            &account.did,
            vec![repo::AccountChange::status("deleted")],
            app.repos.now_micros(),
        );
        let _ = app.accounts.delete(&account.did, Some(gone)).await;
        return Err(e);
    }
    tracing::info!(did = %account.did, handle = %account.handle, "created account");
    Ok(Json(open_session(&app, &account, None, None).await?))
}

/// A new invite code: the server's host and two groups of five base32
/// characters, as the reference PDS writes them.
fn new_code<K>(app: &App<K>) -> Result<String> {
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let sessions = sessions(app)?;
    let host = sessions
        .policy
        .public_url
        .as_deref()
        .and_then(|u| u.split_once("://").map(|(_, rest)| rest))
        .and_then(|rest| rest.split(['/', ':']).next())
        .filter(|h| !h.is_empty())
        .unwrap_or("datarepo")
        .replace('.', "-");
    let chars: String = random_bytes::<10>(sessions)
        .iter()
        .map(|b| char::from(ALPHABET[usize::from(b & 31)]))
        .collect();
    Ok(format!("{host}-{}-{}", &chars[..5], &chars[5..]))
}

fn invite<K>(app: &App<K>, uses: u32, for_account: Option<&str>) -> Result<InviteCode> {
    if uses == 0 {
        return Err(XrpcError::invalid("useCount must be at least 1"));
    }
    Ok(InviteCode {
        code: new_code(app)?,
        available: uses,
        disabled: false,
        for_account: for_account.unwrap_or("admin").to_owned(),
        created_by: "admin".to_owned(),
        created_at: now_rfc3339(sessions(app)?),
        uses: Vec::new(),
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreateInviteCodeInput {
    use_count: u32,
    for_account: Option<String>,
}

/// `com.atproto.server.createInviteCode` (admin token): `{code}`.
pub(crate) async fn create_invite_code<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    raw: std::result::Result<Bytes, BytesRejection>,
) -> Result<Json<Value>> {
    sessions(&app)?;
    app.check_token(&headers, "invite codes")?;
    let (input, _): (CreateInviteCodeInput, _) = body(raw)?;
    let code = invite(&app, input.use_count, input.for_account.as_deref())?;
    app.accounts
        .add_invite_codes(std::slice::from_ref(&code))
        .await
        .map_err(accounts_error)?;
    Ok(Json(json!({ "code": code.code })))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreateInviteCodesInput {
    #[serde(default = "one")]
    code_count: u32,
    use_count: u32,
    #[serde(default)]
    for_accounts: Vec<String>,
}

fn one() -> u32 {
    1
}

/// The most codes one `createInviteCodes` makes.
const MAX_CODES_AT_ONCE: u32 = 1000;

/// `com.atproto.server.createInviteCodes` (admin token): `{codes:
/// [{account, codes}]}`, `codeCount` codes for each of `forAccounts` (or
/// for nobody in particular).
pub(crate) async fn create_invite_codes<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    raw: std::result::Result<Bytes, BytesRejection>,
) -> Result<Json<Value>> {
    sessions(&app)?;
    app.check_token(&headers, "invite codes")?;
    let (input, _): (CreateInviteCodesInput, _) = body(raw)?;
    let accounts: Vec<Option<&str>> = if input.for_accounts.is_empty() {
        vec![None]
    } else {
        input
            .for_accounts
            .iter()
            .map(|a| Some(a.as_str()))
            .collect()
    };
    let total = input
        .code_count
        .saturating_mul(u32::try_from(accounts.len()).unwrap_or(u32::MAX));
    if input.code_count == 0 || total > MAX_CODES_AT_ONCE {
        return Err(XrpcError::invalid(format!(
            "codeCount must be 1 to {MAX_CODES_AT_ONCE} codes in all"
        )));
    }
    let mut made = Vec::new();
    let mut out = Vec::new();
    for account in accounts {
        let codes = (0..input.code_count)
            .map(|_| invite(&app, input.use_count, account))
            .collect::<Result<Vec<_>>>()?;
        out.push(json!({
            "account": account.unwrap_or("admin"),
            "codes": codes.iter().map(|c| c.code.clone()).collect::<Vec<_>>(),
        }));
        made.extend(codes);
    }
    app.accounts
        .add_invite_codes(&made)
        .await
        .map_err(accounts_error)?;
    Ok(Json(json!({ "codes": out })))
}

#[derive(Deserialize)]
pub(crate) struct CreateAppPasswordInput {
    name: String,
    #[serde(default)]
    privileged: bool,
}

/// `com.atproto.server.createAppPassword` (a session made with the
/// account's password): `{name, password, createdAt, privileged}`, the
/// password shown this once.
pub(crate) async fn create_app_password<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    raw: std::result::Result<Bytes, BytesRejection>,
) -> Result<Json<Value>> {
    let (account, _) = session_account(&app, &headers, true).await?;
    let (input, _): (CreateAppPasswordInput, _) = body(raw)?;
    let name = input.name.trim().to_owned();
    if name.is_empty() || name.len() > 100 {
        return Err(XrpcError::invalid(
            "an app password's name is 1 to 100 bytes",
        ));
    }
    let sessions = sessions(&app)?;
    let password = generate_app_password(&random_bytes::<16>(sessions));
    let created_at = now_rfc3339(sessions);
    let hash = hash_password(&app, password.clone()).await?;
    let stored = AppPassword::new(&name, &created_at, input.privileged, hash);
    app.accounts
        .add_app_password(&account.did, &stored)
        .await
        .map_err(accounts_error)?;
    Ok(Json(json!({
        "name": name,
        "password": password,
        "createdAt": created_at,
        "privileged": input.privileged,
    })))
}

/// `com.atproto.server.listAppPasswords`: `{passwords: [{name, createdAt,
/// privileged}]}`, never the passwords.
pub(crate) async fn list_app_passwords<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
) -> Result<Json<Value>> {
    let (account, _) = session_account(&app, &headers, true).await?;
    let passwords = app
        .accounts
        .app_passwords(&account.did)
        .await
        .map_err(accounts_error)?;
    let shown: Vec<Value> = passwords
        .iter()
        .map(|p| json!({"name": p.name, "createdAt": p.created_at, "privileged": p.privileged}))
        .collect();
    Ok(Json(json!({ "passwords": shown })))
}

#[derive(Deserialize)]
pub(crate) struct RevokeAppPasswordInput {
    name: String,
}

/// `com.atproto.server.revokeAppPassword`: the app password stops
/// working, and the sessions made with it end.
pub(crate) async fn revoke_app_password<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    raw: std::result::Result<Bytes, BytesRejection>,
) -> Result<Json<Value>> {
    let (account, _) = session_account(&app, &headers, true).await?;
    let (input, _): (RevokeAppPasswordInput, _) = body(raw)?;
    app.accounts
        .revoke_app_password(&account.did, &input.name)
        .await
        .map_err(accounts_error)?;
    Ok(Json(json!({})))
}
