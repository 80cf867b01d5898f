//! [`Accounts`]: accounts and open sessions in a store.
//!
//! Keys (`docs/storage-keys.md`): an account's JSON under its DID
//! (`keycodec::records::account_key`), its lowercase handle → DID
//! (`handle_key`), and each open session's refresh-token id → `{did,
//! exp}` (`refresh_token_key`). An account and its handle are written in
//! one atomic write.

use std::{collections::HashMap, sync::Arc};

use bytes::Bytes;
use keycodec::records;
use store::{Kv, Store, StreamEvents, WriteOp};

use crate::{
    account::{Account, Status, check_did, normalize_handle},
    error::Error,
};

#[cfg(doc)]
use crate::password;

/// Every account of a store, and their sessions.
///
/// Writes are serialized in this handle (one per process: the store has
/// one writer), so that a handle is never given to two accounts. Account
/// statuses are remembered, so that authorizing a request reads no store.
pub struct Accounts<K> {
    pub(crate) store: Arc<Store<K>>,
    pub(crate) writes: tokio::sync::Mutex<()>,
    /// Every account's status, read from the store on first use (again
    /// after [`Accounts::forget_statuses`]).
    statuses: std::sync::RwLock<Arc<StatusCell>>,
}

type StatusCell = tokio::sync::OnceCell<std::sync::RwLock<HashMap<String, Status>>>;

impl<K> std::fmt::Debug for Accounts<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Accounts").finish_non_exhaustive()
    }
}

/// What creating an account needs.
#[derive(Debug, Clone)]
pub struct NewAccount<'a> {
    /// The DID (and so the repository) the account owns.
    pub did: &'a str,
    /// Its handle.
    pub handle: &'a str,
    /// Its email address, if any.
    pub email: Option<&'a str>,
    /// Its password's hash ([`password::hash`], run by the caller where
    /// tens of milliseconds of CPU do no harm).
    pub password_hash: String,
    /// When it is created (RFC 3339).
    pub created_at: &'a str,
    /// The invite code it is created with, if any: used once more, in
    /// the same write as the account.
    pub invite_code: Option<&'a str>,
    /// The stream events announcing it, written with it.
    pub announce: Option<StreamEvents>,
}

impl<K: Kv> Accounts<K> {
    /// The accounts in `store`.
    #[must_use]
    pub fn new(store: Arc<Store<K>>) -> Self {
        Self {
            store,
            writes: tokio::sync::Mutex::new(()),
            statuses: std::sync::RwLock::new(Arc::new(StatusCell::new())),
        }
    }

    /// Forgets the statuses remembered, so that the next use reads them
    /// from the store again: what a standby that has just become the
    /// writer does, since another process changed them until then.
    pub fn forget_statuses(&self) {
        *self
            .statuses
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(StatusCell::new());
    }

    fn status_cell(&self) -> Arc<StatusCell> {
        Arc::clone(
            &self
                .statuses
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    async fn load_statuses(&self) -> Result<std::sync::RwLock<HashMap<String, Status>>, Error> {
        let all = self.list().await?;
        Ok(std::sync::RwLock::new(
            all.into_iter().map(|a| (a.did, a.status)).collect(),
        ))
    }

    pub(crate) async fn note_status(&self, did: &str, status: Option<Status>) -> Result<(), Error> {
        let cell = self.status_cell();
        let mut statuses = cell
            .get_or_try_init(|| self.load_statuses())
            .await?
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match status {
            Some(s) => statuses.insert(did.to_owned(), s),
            None => statuses.remove(did),
        };
        Ok(())
    }

    /// The status of the account `did`, if one exists: read from the store
    /// once, then remembered (authorizing a request reads no store).
    ///
    /// # Errors
    ///
    /// A storage error, or [`Error::Malformed`], on the first call.
    pub async fn status(&self, did: &str) -> Result<Option<Status>, Error> {
        let cell = self.status_cell();
        Ok(cell
            .get_or_try_init(|| self.load_statuses())
            .await?
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(did)
            .copied())
    }

    /// Creates an account.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidHandle`], [`Error::InvalidDid`], [`Error::HandleTaken`],
    /// [`Error::DidTaken`], [`Error::InvalidInviteCode`], or a storage
    /// error. Nothing is written then.
    pub async fn create(&self, new: NewAccount<'_>) -> Result<Account, Error> {
        let handle = normalize_handle(new.handle)?;
        check_did(new.did)?;
        let _writing = self.writes.lock().await;
        if self
            .store
            .kv()
            .get(&records::handle_key(&handle))
            .await?
            .is_some()
        {
            return Err(Error::HandleTaken(handle));
        }
        if self
            .store
            .kv()
            .get(&records::account_key(new.did))
            .await?
            .is_some()
        {
            return Err(Error::DidTaken(new.did.to_owned()));
        }
        let invite = match new.invite_code {
            Some(code) => {
                let mut invite = self.usable_invite(code).await?;
                invite.uses.push(crate::invites::InviteUse {
                    used_by: new.did.to_owned(),
                    used_at: new.created_at.to_owned(),
                });
                Some(invite)
            }
            None => None,
        };
        let account = Account {
            did: new.did.to_owned(),
            handle: handle.clone(),
            email: new.email.map(str::to_owned),
            status: Status::Active,
            created_at: new.created_at.to_owned(),
            password_hash: new.password_hash,
        };
        let mut ops = vec![
            WriteOp::Put(records::account_key(&account.did), account.encode()),
            WriteOp::Put(
                records::handle_key(&handle),
                Bytes::from(account.did.clone().into_bytes()),
            ),
        ];
        if let Some(invite) = invite {
            ops.push(WriteOp::Put(
                records::invite_code_key(&invite.code),
                invite.encode(),
            ));
        }
        self.store
            .write_with_stream_events(ops, new.announce)
            .await?;
        self.note_status(&account.did, Some(account.status)).await?;
        Ok(account)
    }

    /// The account `did`.
    ///
    /// # Errors
    ///
    /// A storage error, or [`Error::Malformed`].
    pub async fn by_did(&self, did: &str) -> Result<Option<Account>, Error> {
        self.store
            .kv()
            .get(&records::account_key(did))
            .await?
            .map(|b| Account::decode(&b))
            .transpose()
    }

    /// The account named by `identifier`: a DID, or a handle in any case.
    ///
    /// # Errors
    ///
    /// A storage error, or [`Error::Malformed`].
    pub async fn find(&self, identifier: &str) -> Result<Option<Account>, Error> {
        if identifier.starts_with("did:") {
            return self.by_did(identifier).await;
        }
        let Some(did) = self
            .store
            .kv()
            .get(&records::handle_key(&identifier.to_ascii_lowercase()))
            .await?
        else {
            return Ok(None);
        };
        let did = String::from_utf8(did.to_vec()).map_err(|e| Error::Malformed {
            what: "handle",
            reason: e.to_string(),
        })?;
        self.by_did(&did).await
    }

    /// Every account, in DID order.
    ///
    /// # Errors
    ///
    /// A storage error, or [`Error::Malformed`].
    pub async fn list(&self) -> Result<Vec<Account>, Error> {
        let rows = self
            .store
            .kv()
            .scan(&records::accounts_range(), false, usize::MAX)
            .await?;
        rows.iter().map(|(_, v)| Account::decode(v)).collect()
    }

    /// Replaces the password hash of the account `did` ([`password::hash`])
    /// and ends its sessions (a reset logs everyone out).
    ///
    /// # Errors
    ///
    /// [`Error::AccountNotFound`], or a storage error.
    pub async fn set_password_hash(&self, did: &str, hash: String) -> Result<(), Error> {
        self.update(did, |a| a.password_hash = hash, None).await?;
        self.close_sessions_where(did, |_| true).await?;
        Ok(())
    }

    /// Sets the status of the account `did`, with the stream events that
    /// announce it; a takedown ends its sessions.
    ///
    /// # Errors
    ///
    /// [`Error::AccountNotFound`], or a storage error.
    pub async fn set_status(
        &self,
        did: &str,
        status: Status,
        announce: Option<StreamEvents>,
    ) -> Result<(), Error> {
        self.update(did, |a| a.status = status, announce).await?;
        self.note_status(did, Some(status)).await?;
        if status == Status::Takendown {
            self.close_sessions_where(did, |_| true).await?;
        }
        Ok(())
    }

    async fn update(
        &self,
        did: &str,
        change: impl FnOnce(&mut Account),
        announce: Option<StreamEvents>,
    ) -> Result<(), Error> {
        let _writing = self.writes.lock().await;
        let mut account = self
            .by_did(did)
            .await?
            .ok_or_else(|| Error::AccountNotFound(did.to_owned()))?;
        change(&mut account);
        self.store
            .write_with_stream_events(
                vec![WriteOp::Put(records::account_key(did), account.encode())],
                announce,
            )
            .await?;
        Ok(())
    }

    /// Deletes the account `did`, its handle, its app passwords and its
    /// sessions (its repository is the caller's to keep or delete), with
    /// the stream events that announce it.
    ///
    /// # Errors
    ///
    /// [`Error::AccountNotFound`], or a storage error.
    pub async fn delete(
        &self,
        did: &str,
        announce: Option<StreamEvents>,
    ) -> Result<Account, Error> {
        let _writing = self.writes.lock().await;
        let account = self
            .by_did(did)
            .await?
            .ok_or_else(|| Error::AccountNotFound(did.to_owned()))?;
        let mut ops = vec![
            WriteOp::Delete(records::account_key(did)),
            WriteOp::Delete(records::handle_key(&account.handle)),
        ];
        for app in self.app_passwords(did).await? {
            ops.push(WriteOp::Delete(records::app_password_key(did, &app.name)));
        }
        self.store.write_with_stream_events(ops, announce).await?;
        self.note_status(did, None).await?;
        self.close_sessions_where(did, |_| true).await?;
        Ok(account)
    }
}
