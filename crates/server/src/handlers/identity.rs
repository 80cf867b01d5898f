//! Accounts' identities: the DID and signing key a new account gets, and
//! its DID document (served at `/.well-known/did.json` for a hosted
//! `did:web`, sent with sessions).

use std::sync::Arc;

use accounts::account::Account;
use axum::{
    Json,
    extract::State,
    http::{HeaderMap, StatusCode, header},
};
use repo::{Repository, SigningKey};
use serde_json::{Value, json};
use store::Kv;

use super::request::Result;
use crate::{
    app::{App, DidMethod, Sessions, SigningKeyDir},
    error::XrpcError,
};

/// A signing key and the file it is kept in.
pub(super) type KeyInFile = (Arc<SigningKey>, std::path::PathBuf);

/// The DID of a new account with `handle` under the server's DID method,
/// and, for `did:key`, the key it names (already in its file).
pub(super) fn new_account_did(
    sessions: &Sessions,
    handle: &str,
) -> Result<(String, Option<KeyInFile>)> {
    match sessions.policy.did_method {
        DidMethod::Web => Ok((format!("did:web:{handle}"), None)),
        DidMethod::Key => {
            let dir = sessions.policy.signing_keys.as_ref().ok_or_else(|| {
                XrpcError::internal(
                    "did:key accounts need a signing-key directory (serve --signing-key-dir)",
                )
            })?;
            let key = SigningKey::generate(repo::Curve::K256, |b| (dir.random)(b));
            let did = key.public_key().did_key();
            let file = key_file(dir, &did)?;
            key.write_new_file(&file)
                .map_err(|e| XrpcError::internal(format!("cannot keep the account's key: {e}")))?;
            Ok((did, Some((Arc::new(key), file))))
        }
    }
}

fn key_file(dir: &SigningKeyDir, did: &str) -> Result<std::path::PathBuf> {
    std::path::absolute(dir.dir.join(format!("{did}.key")))
        .map_err(|e| XrpcError::internal(format!("{}: {e}", dir.dir.display())))
}

impl<K: Kv + 'static> App<K> {
    /// The repository of a new account: created, signed with `key` or a
    /// key of its own in the accounts' key directory; or, when `attach`,
    /// an existing repository, which starts signing with such a key if it
    /// signed with none.
    pub(super) async fn account_repository(
        &self,
        did: &str,
        key: Option<KeyInFile>,
        attach: bool,
    ) -> Result<Arc<Repository<K>>> {
        let dir = self
            .config
            .sessions
            .as_ref()
            .and_then(|s| s.policy.signing_keys.as_ref());
        let key = match (key, dir) {
            (Some(key), _) => Some(key),
            (None, Some(dir)) => Some(dir.key_for(did).map_err(|e| {
                XrpcError::internal(format!("cannot make the account's signing key: {e}"))
            })?),
            (None, None) => None,
        };
        match self.repos.open(did).await {
            Ok(existing) if attach => {
                if let Some((key, file)) = key
                    && existing.signing_keys().await?.current.is_none()
                {
                    existing.set_signing_key(key, file).await?;
                }
                Ok(existing)
            }
            Ok(_) => Err(XrpcError::invalid(format!(
                "a repository {did} already exists: only the operator can attach it to an account"
            ))),
            Err(repo::Error::RepoNotFound(_)) => Ok(match key {
                Some((key, file)) => self.repos.create_signed(did, key, file).await?,
                None => self.repos.create(did).await?,
            }),
            Err(e) => Err(e.into()),
        }
    }

    /// The DID document of `account`, in the shape AT Protocol's identity
    /// spec gives: its handle, its repository's signing key as `#atproto`
    /// and this server as `#atproto_pds`. `None` when the server has no
    /// public URL to name.
    pub(super) async fn did_document(&self, account: &Account) -> Result<Option<Value>> {
        let Some(url) = self
            .config
            .sessions
            .as_ref()
            .and_then(|s| s.policy.public_url.as_deref())
        else {
            return Ok(None);
        };
        let did = &account.did;
        let mut doc = json!({
            "@context": [
                "https://www.w3.org/ns/did/v1",
                "https://w3id.org/security/multikey/v1",
                "https://w3id.org/security/suites/secp256k1-2019/v1",
            ],
            "id": did,
            "alsoKnownAs": [format!("at://{}", account.handle)],
            "verificationMethod": [],
            "service": [{
                "id": "#atproto_pds",
                "type": "AtprotoPersonalDataServer",
                "serviceEndpoint": url.trim_end_matches('/'),
            }],
        });
        let key = match self.repos.open(did).await {
            Ok(repo) => repo.signing_keys().await?.current.map(|c| c.key),
            Err(repo::Error::RepoNotFound(_)) => None,
            Err(e) => return Err(e.into()),
        };
        if let Some(key) = key {
            let multibase = key.did_key().trim_start_matches("did:key:").to_owned();
            doc["verificationMethod"] = json!([{
                "id": format!("{did}#atproto"),
                "type": "Multikey",
                "controller": did,
                "publicKeyMultibase": multibase,
            }]);
        }
        Ok(Some(doc))
    }
}

/// `GET /.well-known/did.json`: the DID document of the hosted account
/// whose `did:web` is the request's host.
pub(crate) async fn well_known_did<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
) -> Result<Json<Value>> {
    let not_found = || {
        XrpcError::new(
            StatusCode::NOT_FOUND,
            "NotFound",
            "no DID document is hosted here",
        )
    };
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .ok_or_else(not_found)?
        .to_ascii_lowercase();
    // did:web writes a port as %3A.
    let did = format!("did:web:{}", host.replace(':', "%3A"));
    let account = app
        .accounts
        .by_did(&did)
        .await
        .map_err(|e| XrpcError::internal(e.to_string()))?
        .ok_or_else(not_found)?;
    app.did_document(&account)
        .await?
        .map(Json)
        .ok_or_else(not_found)
}
