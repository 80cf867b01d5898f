//! An account: its DID, handle, password hash, email and status.

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// Whether an account may write, and how its repository reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Writes and reads as usual.
    Active,
    /// Deactivated by its owner or the operator: no writes; its repository
    /// reads as `RepoDeactivated`.
    Deactivated,
    /// Taken down by the operator: no writes, no logins; its repository
    /// reads as `RepoTakendown`.
    Takendown,
}

impl Status {
    /// The status as `getSession` and the CLI name it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Deactivated => "deactivated",
            Self::Takendown => "takendown",
        }
    }
}

impl std::str::FromStr for Status {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "active" => Ok(Self::Active),
            "deactivated" => Ok(Self::Deactivated),
            "takendown" => Ok(Self::Takendown),
            other => Err(format!(
                "unknown account status {other:?} (active, deactivated or takendown)"
            )),
        }
    }
}

/// An account, as stored (JSON under its DID's key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Account {
    /// The DID: the repository the account owns.
    pub did: String,
    /// The handle, lowercase.
    pub handle: String,
    /// An email address, if given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// Whether it may write.
    pub status: Status,
    /// When it was created (RFC 3339).
    pub created_at: String,
    /// The password's Argon2id hash, a PHC string (never the password).
    pub(crate) password_hash: String,
}

impl Account {
    /// The account without its password hash, as `account show --json`
    /// and `account list --json` print it.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "did": self.did,
            "handle": self.handle,
            "status": self.status.as_str(),
            "createdAt": self.created_at,
        });
        if let Some(email) = &self.email {
            v["email"] = email.clone().into();
        }
        v
    }

    /// Whether `password` is this account's (Argon2id: tens of milliseconds
    /// of CPU; run it where that does no harm).
    #[must_use]
    pub fn password_matches(&self, password: &str) -> bool {
        crate::password::verify(password, &self.password_hash)
    }

    pub(crate) fn encode(&self) -> bytes::Bytes {
        bytes::Bytes::from(serde_json::to_vec(self).unwrap_or_default())
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, Error> {
        serde_json::from_slice(bytes).map_err(|e| Error::Malformed {
            what: "account",
            reason: e.to_string(),
        })
    }
}

/// A handle checked against AT Protocol's handle syntax and lowercased
/// (handles compare case-insensitively).
///
/// # Errors
///
/// [`Error::InvalidHandle`] naming the rule broken.
pub fn normalize_handle(handle: &str) -> Result<String, Error> {
    rkey::validate_handle(handle).map_err(|e| Error::InvalidHandle {
        handle: handle.to_owned(),
        reason: e.to_string(),
    })?;
    Ok(handle.to_ascii_lowercase())
}

/// A DID checked against DID syntax.
///
/// # Errors
///
/// [`Error::InvalidDid`] naming the rule broken.
pub fn check_did(did: &str) -> Result<(), Error> {
    rkey::validate_did(did).map_err(|e| Error::InvalidDid {
        did: did.to_owned(),
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_lowercased_and_checked() {
        assert_eq!(
            normalize_handle("Alice.Example.COM").unwrap(),
            "alice.example.com"
        );
        assert!(matches!(
            normalize_handle("not a handle"),
            Err(Error::InvalidHandle { .. })
        ));
    }

    #[test]
    fn a_stored_account_round_trips_and_shows_no_hash() {
        let account = Account {
            did: "did:web:alice.example.com".into(),
            handle: "alice.example.com".into(),
            email: None,
            status: Status::Active,
            created_at: "2026-11-27T00:00:00Z".into(),
            password_hash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".into(),
        };
        assert_eq!(Account::decode(&account.encode()).unwrap(), account);
        assert!(!account.to_json().to_string().contains("argon2"));
    }
}
