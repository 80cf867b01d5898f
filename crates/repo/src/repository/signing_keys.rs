//! Which key signs a repository's next commit, and the keys trusted to
//! have signed its history.

use std::sync::Arc;

use store::Kv;

use super::state::Repository;
use crate::{
    error::Error,
    keys::{CurrentKey, SigningKeys},
    signing::SigningKey,
};

impl<K: Kv> Repository<K> {
    /// The private key that signs the next commit under `keys`, loaded
    /// from its file on first use; `None` when commits are unsigned.
    pub(super) fn signer(&self, keys: &SigningKeys) -> Result<Option<Arc<SigningKey>>, Error> {
        let Some(current) = &keys.current else {
            return match keys.known.last() {
                // A signed history (imported, say) goes on signed or not at all.
                Some(key) => Err(Error::SigningKey {
                    repo: self.id.clone(),
                    key: key.did_key(),
                    reason: "this store has no private key to sign its next commit with".into(),
                }),
                None => Ok(None),
            };
        };
        let mut signer = self
            .signer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(key) = signer.as_ref()
            && key.public_key() == &current.key
        {
            return Ok(Some(Arc::clone(key)));
        }
        let refused = |reason: String| Error::SigningKey {
            repo: self.id.clone(),
            key: current.key.did_key(),
            reason,
        };
        let key = SigningKey::read_file(&current.file)
            .map_err(|e| refused(format!("its key file cannot be used: {e}")))?;
        if key.public_key() != &current.key {
            return Err(refused(format!(
                "its key file {} holds another key ({})",
                current.file.display(),
                key.public_key()
            )));
        }
        let key = Arc::new(key);
        *signer = Some(Arc::clone(&key));
        Ok(Some(key))
    }

    /// The repository's signing keys, as stored now.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn signing_keys(&self) -> Result<SigningKeys, Error> {
        SigningKeys::load(&self.store, &self.id).await
    }

    /// Signs the next commits with `key`, kept in `file` (rotation, or the
    /// start of signing for a repository that had none). The previous key
    /// stays known, so the history it signed still verifies.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn set_signing_key(
        &self,
        key: Arc<SigningKey>,
        file: std::path::PathBuf,
    ) -> Result<SigningKeys, Error> {
        let mut state = self.state.lock().await;
        let mut keys = SigningKeys::load(&self.store, &self.id).await?;
        keys.current = Some(CurrentKey {
            key: *key.public_key(),
            file,
        });
        keys.trust(*key.public_key());
        keys.save(&self.store, &self.id).await?;
        *self
            .signer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(key);
        state.keys = keys.clone();
        Ok(keys)
    }

    /// Adds public keys to those trusted to have signed the history.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn trust_keys(
        &self,
        trusted: &[crate::signing::PublicKey],
    ) -> Result<SigningKeys, Error> {
        let mut state = self.state.lock().await;
        let mut keys = SigningKeys::load(&self.store, &self.id).await?;
        for key in trusted {
            keys.trust(*key);
        }
        keys.save(&self.store, &self.id).await?;
        state.keys = keys.clone();
        Ok(keys)
    }
}
