//! Invite codes: what lets someone create an account on a server that
//! does not take anyone (`com.atproto.server.createInviteCode(s)`).

use bytes::Bytes;
use keycodec::records;
use serde::{Deserialize, Serialize};
use store::{Kv, WriteOp};

use crate::{Accounts, error::Error};

/// One account made with an invite code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InviteUse {
    /// The account's DID.
    pub used_by: String,
    /// When (RFC 3339).
    pub used_at: String,
}

/// An invite code, as stored and as `com.atproto.server.defs#inviteCode`
/// shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InviteCode {
    /// The code.
    pub code: String,
    /// How many accounts it may create in all.
    pub available: u32,
    /// Whether the operator disabled it.
    pub disabled: bool,
    /// The account it was made for (`admin` when for nobody in particular).
    pub for_account: String,
    /// Who made it (`admin`).
    pub created_by: String,
    /// When (RFC 3339).
    pub created_at: String,
    /// The accounts it has created.
    pub uses: Vec<InviteUse>,
}

impl InviteCode {
    /// Whether it can create one more account.
    #[must_use]
    pub fn usable(&self) -> bool {
        !self.disabled && self.uses.len() < self.available as usize
    }

    pub(crate) fn encode(&self) -> Bytes {
        Bytes::from(serde_json::to_vec(self).unwrap_or_default())
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, Error> {
        serde_json::from_slice(bytes).map_err(|e| Error::Malformed {
            what: "invite code",
            reason: e.to_string(),
        })
    }
}

impl<K: Kv> Accounts<K> {
    /// Stores new invite codes.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn add_invite_codes(&self, codes: &[InviteCode]) -> Result<(), Error> {
        let _writing = self.writes.lock().await;
        self.store
            .kv()
            .write(
                codes
                    .iter()
                    .map(|c| WriteOp::Put(records::invite_code_key(&c.code), c.encode()))
                    .collect(),
            )
            .await?;
        Ok(())
    }

    /// Every invite code, in code order.
    ///
    /// # Errors
    ///
    /// A storage error, or [`Error::Malformed`].
    pub async fn invite_codes(&self) -> Result<Vec<InviteCode>, Error> {
        let rows = self
            .store
            .kv()
            .scan(&records::invite_codes_range(), false, usize::MAX)
            .await?;
        rows.iter().map(|(_, v)| InviteCode::decode(v)).collect()
    }

    /// The invite code `code`, if it exists and can create one more
    /// account (the caller holds the write lock).
    pub(crate) async fn usable_invite(&self, code: &str) -> Result<InviteCode, Error> {
        let invite = self
            .store
            .kv()
            .get(&records::invite_code_key(code))
            .await?
            .map(|b| InviteCode::decode(&b))
            .transpose()?;
        match invite {
            Some(invite) if invite.usable() => Ok(invite),
            _ => Err(Error::InvalidInviteCode),
        }
    }
}
