//! Open sessions: each refresh token's id, stored until the session ends
//! (logging out, a refresh's grace running out, its app password revoked).

use bytes::Bytes;
use keycodec::records;
use serde::{Deserialize, Serialize};
use store::{Kv, WriteOp};

use crate::{Accounts, error::Error};

/// How long a refresh token still works after it was exchanged for a new
/// pair (a client that lost the answer may try again).
pub const REFRESH_GRACE_SECS: u64 = 2 * 60;

/// An open session, stored under its refresh token's id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    /// Whose session it is.
    pub did: String,
    /// When the refresh token stops working (seconds since the Unix epoch).
    pub exp: u64,
    /// The app password it was opened with (its tokens have the app
    /// password scope); `None` for the account's password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_password: Option<String>,
}

impl Session {
    fn encode(&self) -> Bytes {
        Bytes::from(serde_json::to_vec(self).unwrap_or_default())
    }

    fn decode(bytes: &[u8]) -> Result<Self, Error> {
        serde_json::from_slice(bytes).map_err(|e| Error::Malformed {
            what: "session",
            reason: e.to_string(),
        })
    }
}

impl<K: Kv> Accounts<K> {
    /// Opens `session`, under its refresh token's id `jti`.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn open_session(&self, jti: &str, session: &Session) -> Result<(), Error> {
        self.store
            .kv()
            .write(vec![WriteOp::Put(
                records::refresh_token_key(jti),
                session.encode(),
            )])
            .await?;
        Ok(())
    }

    /// The session of refresh token `jti`, if it is open for `did` at
    /// `now`.
    ///
    /// # Errors
    ///
    /// A storage error, or [`Error::Malformed`].
    pub async fn session(&self, jti: &str, did: &str, now: u64) -> Result<Option<Session>, Error> {
        let Some(bytes) = self
            .store
            .kv()
            .get(&records::refresh_token_key(jti))
            .await?
        else {
            return Ok(None);
        };
        let session = Session::decode(&bytes)?;
        Ok((session.did == did && session.exp > now).then_some(session))
    }

    /// Replaces the session `old` by `new` under the id `new_jti` (a
    /// refresh): the old refresh token keeps working for
    /// [`REFRESH_GRACE_SECS`] more.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn rotate_session(
        &self,
        old_jti: &str,
        new_jti: &str,
        new: &Session,
        now: u64,
    ) -> Result<(), Error> {
        let graced = Session {
            exp: now + REFRESH_GRACE_SECS,
            ..new.clone()
        };
        self.store
            .kv()
            .write(vec![
                WriteOp::Put(records::refresh_token_key(old_jti), graced.encode()),
                WriteOp::Put(records::refresh_token_key(new_jti), new.encode()),
            ])
            .await?;
        Ok(())
    }

    /// Closes the session of refresh token `jti` (logging out).
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn close_session(&self, jti: &str) -> Result<(), Error> {
        self.store
            .kv()
            .write(vec![WriteOp::Delete(records::refresh_token_key(jti))])
            .await?;
        Ok(())
    }

    /// Closes every session of `did` that `only` keeps (all of them, or
    /// those of one app password): a scan of the open sessions, for the
    /// rare operations that need it (revoking, deleting an account).
    pub(crate) async fn close_sessions_where(
        &self,
        did: &str,
        only: impl Fn(&Session) -> bool,
    ) -> Result<usize, Error> {
        let rows = self
            .store
            .kv()
            .scan(&records::refresh_tokens_range(), false, usize::MAX)
            .await?;
        let mut ops = Vec::new();
        for (key, value) in rows {
            let session = Session::decode(&value)?;
            if session.did == did && only(&session) {
                ops.push(WriteOp::Delete(key.to_vec()));
            }
        }
        let closed = ops.len();
        if closed > 0 {
            self.store.kv().write(ops).await?;
        }
        Ok(closed)
    }
}
