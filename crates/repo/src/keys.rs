//! A repository's signing keys as the store keeps them (record type
//! `0xD`): the public key that signs its next commit with the path of its
//! private key file, and every public key its history was signed with.
//! Private keys stay in their files.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use store::{Kv, Store};

use crate::{error::Error, signing::PublicKey};

/// The key that signs a repository's next commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurrentKey {
    /// Its public key.
    pub key: PublicKey,
    /// Its private key file (PKCS #8 PEM).
    pub file: PathBuf,
}

/// A repository's signing keys.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SigningKeys {
    /// The key that signs the next commit; `None`: commits are unsigned.
    pub current: Option<CurrentKey>,
    /// Every public key trusted to have signed the repository's history,
    /// oldest first (the current one included).
    pub known: Vec<PublicKey>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredCurrent {
    did_key: String,
    file: String,
}

#[derive(Serialize, Deserialize)]
struct Stored {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    current: Option<StoredCurrent>,
    #[serde(default)]
    known: Vec<String>,
}

impl SigningKeys {
    /// Adds `key` to the known keys unless it is there.
    pub(crate) fn trust(&mut self, key: PublicKey) {
        if !self.known.contains(&key) {
            self.known.push(key);
        }
    }

    pub(crate) async fn load<K: Kv>(store: &Store<K>, repo: &str) -> Result<Self, Error> {
        let Some(bytes) = store.signing_keys(repo).await? else {
            return Ok(Self::default());
        };
        let malformed = |reason: String| {
            Error::Store(store::Error::Malformed {
                what: "signing keys",
                reason: format!("{repo}: {reason}"),
            })
        };
        let stored: Stored =
            serde_json::from_slice(&bytes).map_err(|e| malformed(e.to_string()))?;
        let parse = |did: &str| PublicKey::from_did_key(did).map_err(|e| malformed(e.to_string()));
        Ok(Self {
            current: stored
                .current
                .map(|c| {
                    Ok::<_, Error>(CurrentKey {
                        key: parse(&c.did_key)?,
                        file: PathBuf::from(c.file),
                    })
                })
                .transpose()?,
            known: stored
                .known
                .iter()
                .map(|d| parse(d))
                .collect::<Result<_, _>>()?,
        })
    }

    pub(crate) async fn save<K: Kv>(&self, store: &Store<K>, repo: &str) -> Result<(), Error> {
        let stored = Stored {
            current: self.current.as_ref().map(|c| StoredCurrent {
                did_key: c.key.did_key(),
                file: c.file.display().to_string(),
            }),
            known: self.known.iter().map(PublicKey::did_key).collect(),
        };
        // Strings and lists of them always encode.
        let bytes = serde_json::to_vec(&stored).unwrap_or_default();
        store.put_signing_keys(repo, bytes.into()).await?;
        Ok(())
    }
}
