//! Restoring an account from a backup: the record and app passwords a
//! repository's backup carries (as the store keeps them), written back
//! with the handle that points at the account.

use bytes::Bytes;
use keycodec::records;
use store::{Kv, WriteOp};

use crate::{Accounts, account::Account, app_passwords::AppPassword, error::Error};

/// What restoring an account did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restored {
    /// The store had no account with the DID: it has now.
    Created,
    /// The store's account (or its app passwords) differed: it is now the
    /// backup's.
    Updated,
    /// The store's account is the backup's already.
    Unchanged,
}

impl Restored {
    /// As `import --json` names it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Updated => "updated",
            Self::Unchanged => "unchanged",
        }
    }
}

impl<K: Kv> Accounts<K> {
    /// Makes the account `did` the backup's: its `record` and
    /// `app_passwords` as stored (JSON text), in one write with its handle.
    /// The account's sessions are not in backups; those open stay open.
    ///
    /// # Errors
    ///
    /// [`Error::Malformed`] for a record that does not decode or names
    /// another DID, [`Error::HandleTaken`] when another account has the
    /// handle (nothing is written then), or a storage error.
    pub async fn restore(
        &self,
        did: &str,
        record: &str,
        app_passwords: &[String],
    ) -> Result<Restored, Error> {
        let account = Account::decode(record.as_bytes())?;
        if account.did != did {
            return Err(Error::Malformed {
                what: "account in the backup",
                reason: format!("it is {}'s, the repository {did}'s", account.did),
            });
        }
        let apps = app_passwords
            .iter()
            .map(|a| {
                serde_json::from_str::<AppPassword>(a).map_err(|e| Error::Malformed {
                    what: "app password in the backup",
                    reason: e.to_string(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let writing = self.writes.lock().await;
        let kv = self.store.kv();
        if let Some(owner) = kv.get(&records::handle_key(&account.handle)).await?
            && owner.as_ref() != did.as_bytes()
        {
            return Err(Error::HandleTaken(account.handle));
        }
        let existing = self.by_did(did).await?;
        let stored_apps = self.app_passwords(did).await?;
        if existing.as_ref() == Some(&account) && stored_apps == apps {
            return Ok(Restored::Unchanged);
        }
        let mut ops = vec![
            WriteOp::Put(records::account_key(did), account.encode()),
            WriteOp::Put(
                records::handle_key(&account.handle),
                Bytes::from(did.as_bytes().to_vec()),
            ),
        ];
        if let Some(old) = &existing
            && old.handle != account.handle
        {
            ops.push(WriteOp::Delete(records::handle_key(&old.handle)));
        }
        for gone in stored_apps
            .iter()
            .filter(|s| !apps.iter().any(|a| a.name == s.name))
        {
            ops.push(WriteOp::Delete(records::app_password_key(did, &gone.name)));
        }
        for app in &apps {
            ops.push(WriteOp::Put(
                records::app_password_key(did, &app.name),
                app.encode(),
            ));
        }
        kv.write(ops).await?;
        drop(writing);
        self.note_status(did, Some(account.status)).await?;
        Ok(if existing.is_some() {
            Restored::Updated
        } else {
            Restored::Created
        })
    }
}
