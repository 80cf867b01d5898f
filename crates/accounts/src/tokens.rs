//! Session tokens: HS256 JWTs signed with the server's secret.
//!
//! An access token (`scope` `com.atproto.access`, or
//! `com.atproto.appPass` for an app password's session) lives
//! [`DEFAULT_ACCESS_TTL`] and is verified without a store read. A refresh
//! token (`com.atproto.refresh`) lives [`DEFAULT_REFRESH_TTL`] and carries
//! a `jti` the store keeps while the session is open. The claims are those
//! of AT Protocol's reference PDS: `scope`, `sub` (the DID), `aud` (the
//! server's DID), `iat`, `exp` (seconds since the Unix epoch), and `jti` on
//! refresh tokens. Expiry is checked here against the time the caller
//! gives, never a clock of its own.

use std::time::Duration;

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

/// How long an access token lives.
pub const DEFAULT_ACCESS_TTL: Duration = Duration::from_secs(2 * 60 * 60);
/// How long a refresh token lives.
pub const DEFAULT_REFRESH_TTL: Duration = Duration::from_secs(90 * 24 * 60 * 60);

/// A full session's access scope.
pub const ACCESS_SCOPE: &str = "com.atproto.access";
/// An app password's session scope: no account management.
pub const APP_PASS_SCOPE: &str = "com.atproto.appPass";
/// A refresh token's scope.
pub const REFRESH_SCOPE: &str = "com.atproto.refresh";

/// A token's claims.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// What the token may do.
    pub scope: String,
    /// The account's DID.
    pub sub: String,
    /// The server's DID.
    pub aud: String,
    /// Issued at (seconds since the Unix epoch).
    pub iat: u64,
    /// Expires at (seconds since the Unix epoch).
    pub exp: u64,
    /// A refresh token's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jti: Option<String>,
}

/// Why a token was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Past its `exp`: the SDKs refresh on this (`400 ExpiredToken`).
    #[error("the token has expired")]
    Expired,
    /// Not a token of this server, tampered with, or of the wrong kind.
    #[error("the token is not valid: {0}")]
    Invalid(String),
}

/// The DID a session token names, its signature **not** checked: for
/// choosing where a request goes (a partitioned server's partition), never
/// for deciding what it may do; the partition's server verifies the token.
#[must_use]
pub fn unverified_subject(token: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Subject {
        sub: String,
    }
    jsonwebtoken::dangerous::insecure_decode::<Subject>(token)
        .ok()
        .map(|data| data.claims.sub)
}

/// Issues and verifies a server's session tokens.
#[derive(Clone)]
pub struct Tokens {
    encoding: EncodingKey,
    decoding: DecodingKey,
    server_did: String,
    access_ttl: Duration,
    refresh_ttl: Duration,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("server_did", &self.server_did)
            .field("access_ttl", &self.access_ttl)
            .field("refresh_ttl", &self.refresh_ttl)
            .finish_non_exhaustive()
    }
}

/// A session's pair of tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    /// The access JWT.
    pub access: String,
    /// The refresh JWT.
    pub refresh: String,
    /// The refresh token's claims (its `jti` and `exp` are stored).
    pub refresh_claims: Claims,
}

impl Tokens {
    /// Tokens signed with `secret` for the server `server_did`.
    #[must_use]
    pub fn new(secret: &[u8], server_did: impl Into<String>) -> Self {
        Self {
            encoding: EncodingKey::from_secret(secret),
            decoding: DecodingKey::from_secret(secret),
            server_did: server_did.into(),
            access_ttl: DEFAULT_ACCESS_TTL,
            refresh_ttl: DEFAULT_REFRESH_TTL,
        }
    }

    /// Sets how long access tokens live (tests make them expire).
    #[must_use]
    pub fn with_access_ttl(mut self, ttl: Duration) -> Self {
        self.access_ttl = ttl;
        self
    }

    /// The server's DID, every token's `aud`.
    #[must_use]
    pub fn server_did(&self) -> &str {
        &self.server_did
    }

    /// A new session's tokens for `did`: an access token of `scope` and a
    /// refresh token with id `jti`, issued at `now` (seconds since the Unix
    /// epoch).
    ///
    /// # Errors
    ///
    /// [`TokenError::Invalid`] if a token cannot be encoded.
    pub fn issue(&self, did: &str, scope: &str, jti: &str, now: u64) -> Result<Pair, TokenError> {
        let access = Claims {
            scope: scope.to_owned(),
            sub: did.to_owned(),
            aud: self.server_did.clone(),
            iat: now,
            exp: now + self.access_ttl.as_secs(),
            jti: None,
        };
        let refresh = Claims {
            scope: REFRESH_SCOPE.to_owned(),
            sub: did.to_owned(),
            aud: self.server_did.clone(),
            iat: now,
            exp: now + self.refresh_ttl.as_secs(),
            jti: Some(jti.to_owned()),
        };
        Ok(Pair {
            access: self.encode(&access, "at+jwt")?,
            refresh: self.encode(&refresh, "refresh+jwt")?,
            refresh_claims: refresh,
        })
    }

    fn encode(&self, claims: &Claims, typ: &str) -> Result<String, TokenError> {
        let mut header = Header::new(Algorithm::HS256);
        header.typ = Some(typ.to_owned());
        jsonwebtoken::encode(&header, claims, &self.encoding)
            .map_err(|e| TokenError::Invalid(e.to_string()))
    }

    /// The claims of an access token valid at `now`: this server's, not
    /// tampered with, not expired, of an access scope.
    ///
    /// # Errors
    ///
    /// [`TokenError::Expired`] past its `exp`, else [`TokenError::Invalid`].
    pub fn verify_access(&self, token: &str, now: u64) -> Result<Claims, TokenError> {
        let claims = self.verify(token, now)?;
        if claims.scope != ACCESS_SCOPE && claims.scope != APP_PASS_SCOPE {
            return Err(TokenError::Invalid(format!(
                "a {} token is not an access token",
                claims.scope
            )));
        }
        Ok(claims)
    }

    /// The claims of a refresh token valid at `now` (its `jti` must still
    /// be stored for the session to be open: the caller checks).
    ///
    /// # Errors
    ///
    /// As [`Tokens::verify_access`].
    pub fn verify_refresh(&self, token: &str, now: u64) -> Result<Claims, TokenError> {
        let claims = self.verify(token, now)?;
        if claims.scope != REFRESH_SCOPE || claims.jti.is_none() {
            return Err(TokenError::Invalid("not a refresh token".to_owned()));
        }
        Ok(claims)
    }

    fn verify(&self, token: &str, now: u64) -> Result<Claims, TokenError> {
        let mut validation = Validation::new(Algorithm::HS256);
        // Expiry is checked below against the caller's time.
        validation.validate_exp = false;
        validation.required_spec_claims.clear();
        validation.set_audience(&[&self.server_did]);
        let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &validation)
            .map_err(|e| TokenError::Invalid(e.to_string()))?;
        if data.claims.exp <= now {
            return Err(TokenError::Expired);
        }
        Ok(data.claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SERVER: &str = "did:web:pds.example";
    const DID: &str = "did:web:alice.example";

    #[test]
    fn an_issued_pair_verifies_by_kind() {
        let tokens = Tokens::new(b"secret", SERVER);
        let pair = tokens.issue(DID, ACCESS_SCOPE, "jti-1", 1_000).unwrap();
        let access = tokens.verify_access(&pair.access, 1_001).unwrap();
        assert_eq!((access.sub.as_str(), access.aud.as_str()), (DID, SERVER));
        assert_eq!(access.exp, 1_000 + DEFAULT_ACCESS_TTL.as_secs());
        let refresh = tokens.verify_refresh(&pair.refresh, 1_001).unwrap();
        assert_eq!(refresh.jti.as_deref(), Some("jti-1"));
        // Each kind is refused where the other is wanted.
        assert!(tokens.verify_access(&pair.refresh, 1_001).is_err());
        assert!(tokens.verify_refresh(&pair.access, 1_001).is_err());
    }

    #[test]
    fn expired_foreign_and_tampered_tokens_are_refused() {
        let tokens = Tokens::new(b"secret", SERVER).with_access_ttl(Duration::from_secs(10));
        let pair = tokens.issue(DID, ACCESS_SCOPE, "j", 1_000).unwrap();
        assert_eq!(
            tokens.verify_access(&pair.access, 1_010),
            Err(TokenError::Expired)
        );
        let other_secret = Tokens::new(b"another", SERVER);
        assert!(matches!(
            other_secret.verify_access(&pair.access, 1_001),
            Err(TokenError::Invalid(_))
        ));
        let other_server = Tokens::new(b"secret", "did:web:elsewhere.example");
        assert!(matches!(
            other_server.verify_access(&pair.access, 1_001),
            Err(TokenError::Invalid(_))
        ));
        let mut tampered = pair.access.clone().into_bytes();
        let middle = tampered.len() / 2;
        tampered[middle] ^= 1;
        let tampered = String::from_utf8_lossy(&tampered).into_owned();
        assert!(tokens.verify_access(&tampered, 1_001).is_err());
    }

    #[test]
    fn the_subject_is_read_from_any_token_without_its_secret() {
        let pair = Tokens::new(b"secret", SERVER)
            .issue(DID, ACCESS_SCOPE, "j", 1_000)
            .unwrap();
        assert_eq!(unverified_subject(&pair.access).as_deref(), Some(DID));
        assert_eq!(unverified_subject(&pair.refresh).as_deref(), Some(DID));
        assert_eq!(unverified_subject("not-a-token"), None);
    }
}
