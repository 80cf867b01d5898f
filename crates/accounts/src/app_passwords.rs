//! App passwords: passwords an account gives to one app, revocable one by
//! one, whose sessions cannot manage the account.

use bytes::Bytes;
use keycodec::records;
use serde::{Deserialize, Serialize};
use store::{Kv, WriteOp};

use crate::{Accounts, error::Error};

/// The most app passwords an account may hold (logging in with one
/// checks each in turn, tens of milliseconds apiece).
pub const MAX_APP_PASSWORDS: usize = 25;

/// An app password, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AppPassword {
    /// Its name, unique in its account.
    pub name: String,
    /// When it was made (RFC 3339).
    pub created_at: String,
    /// Whether it may read direct messages (AT Protocol's flag; kept, has
    /// no effect here).
    #[serde(default)]
    pub privileged: bool,
    /// Its Argon2id hash, a PHC string.
    pub(crate) password_hash: String,
}

impl AppPassword {
    /// An app password made now from `password_hash`.
    #[must_use]
    pub fn new(name: &str, created_at: &str, privileged: bool, password_hash: String) -> Self {
        Self {
            name: name.to_owned(),
            created_at: created_at.to_owned(),
            privileged,
            password_hash,
        }
    }

    /// Whether `password` is this app password (Argon2id: run it where
    /// tens of milliseconds of CPU do no harm).
    #[must_use]
    pub fn matches(&self, password: &str) -> bool {
        crate::password::verify(password, &self.password_hash)
    }

    pub(crate) fn encode(&self) -> Bytes {
        Bytes::from(serde_json::to_vec(self).unwrap_or_default())
    }

    fn decode(bytes: &[u8]) -> Result<Self, Error> {
        serde_json::from_slice(bytes).map_err(|e| Error::Malformed {
            what: "app password",
            reason: e.to_string(),
        })
    }
}

/// Whether `password` has the shape of the app passwords this server makes
/// (`xxxx-xxxx-xxxx-xxxx`, lowercase base32): only such a password is
/// checked against an account's app passwords.
#[must_use]
pub fn looks_like_app_password(password: &str) -> bool {
    let groups: Vec<&str> = password.split('-').collect();
    groups.len() == 4
        && groups.iter().all(|g| {
            g.len() == 4
                && g.bytes()
                    .all(|b| b.is_ascii_lowercase() || (b'2'..=b'7').contains(&b))
        })
}

/// A new app password from 16 random bytes: `xxxx-xxxx-xxxx-xxxx` in
/// lowercase base32 (80 bits).
#[must_use]
pub fn generate_app_password(random: &[u8; 16]) -> String {
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let chars: Vec<u8> = random
        .iter()
        .map(|b| ALPHABET[usize::from(b & 31)])
        .collect();
    chars
        .chunks(4)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect::<Vec<_>>()
        .join("-")
}

impl<K: Kv> Accounts<K> {
    /// Adds an app password to the account `did`.
    ///
    /// # Errors
    ///
    /// [`Error::AccountNotFound`], [`Error::AppPasswordExists`],
    /// [`Error::TooManyAppPasswords`], or a storage error.
    pub async fn add_app_password(&self, did: &str, app: &AppPassword) -> Result<(), Error> {
        let _writing = self.writes.lock().await;
        if self.by_did(did).await?.is_none() {
            return Err(Error::AccountNotFound(did.to_owned()));
        }
        let existing = self.app_passwords(did).await?;
        if existing.iter().any(|a| a.name == app.name) {
            return Err(Error::AppPasswordExists(app.name.clone()));
        }
        if existing.len() >= MAX_APP_PASSWORDS {
            return Err(Error::TooManyAppPasswords(MAX_APP_PASSWORDS));
        }
        self.store
            .kv()
            .write(vec![WriteOp::Put(
                records::app_password_key(did, &app.name),
                app.encode(),
            )])
            .await?;
        Ok(())
    }

    /// The app passwords of the account `did`, in name order.
    ///
    /// # Errors
    ///
    /// A storage error, or [`Error::Malformed`].
    pub async fn app_passwords(&self, did: &str) -> Result<Vec<AppPassword>, Error> {
        let rows = self
            .store
            .kv()
            .scan(&records::app_passwords_range(did), false, usize::MAX)
            .await?;
        rows.iter().map(|(_, v)| AppPassword::decode(v)).collect()
    }

    /// Revokes the app password `name` of `did` and closes the sessions
    /// opened with it (their access tokens run out within their lifetime).
    ///
    /// # Errors
    ///
    /// [`Error::AppPasswordNotFound`], or a storage error.
    pub async fn revoke_app_password(&self, did: &str, name: &str) -> Result<(), Error> {
        let _writing = self.writes.lock().await;
        let key = records::app_password_key(did, name);
        if self.store.kv().get(&key).await?.is_none() {
            return Err(Error::AppPasswordNotFound(name.to_owned()));
        }
        self.store.kv().write(vec![WriteOp::Delete(key)]).await?;
        self.close_sessions_where(did, |s| s.app_password.as_deref() == Some(name))
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_app_passwords_have_the_shape_checked_at_login() {
        for seed in 0..=255u8 {
            let password = generate_app_password(&[seed.wrapping_mul(37); 16]);
            assert!(looks_like_app_password(&password), "{password}");
        }
        assert!(!looks_like_app_password("correct horse battery staple"));
        assert!(!looks_like_app_password("abcd-efgh-ijkl"));
        assert!(!looks_like_app_password("ABCD-efgh-ijkl-mnop"));
        assert!(!looks_like_app_password("abc1-efgh-ijkl-mnop"));
    }
}
