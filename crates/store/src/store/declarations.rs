//! What a repository declares beside its records: collections, Lexicons
//! and signing keys.

use bytes::Bytes;
use keycodec::records;

use super::state::Store;
use crate::{error::Error, kv::interface::Kv, kv::interface::WriteOp};

impl<K: Kv> Store<K> {
    /// Sets a collection declaration (opaque bytes) durably, outside any commit.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn put_collection(
        &self,
        repo: &str,
        collection: &str,
        bytes: Bytes,
    ) -> Result<(), Error> {
        self.write_durably(vec![WriteOp::Put(
            records::collection_key(repo, collection),
            bytes,
        )])
        .await
    }

    /// Sets (`Some`) or removes (`None`) a Lexicon document that declares
    /// no collection, durably, outside any commit.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn put_lexicon(
        &self,
        repo: &str,
        nsid: &str,
        json: Option<Bytes>,
    ) -> Result<(), Error> {
        let key = records::lexicon_key(repo, nsid);
        self.write_durably(vec![match json {
            Some(bytes) => WriteOp::Put(key, bytes),
            None => WriteOp::Delete(key),
        }])
        .await
    }

    /// A repository's Lexicon documents that declare no collection, as
    /// (NSID, the document's JSON), in NSID order.
    ///
    /// # Errors
    ///
    /// [`Error::Malformed`] or a storage error.
    pub async fn lexicons(&self, repo: &str) -> Result<Vec<(String, Bytes)>, Error> {
        let rows = self
            .kv
            .scan(&records::lexicon_range(repo), false, usize::MAX)
            .await?;
        rows.into_iter()
            .map(|(k, v)| match records::decode_key(&k) {
                Ok(records::DecodedKey::Lexicon { nsid, .. }) => Ok((nsid.into_owned(), v)),
                _ => Err(Error::Malformed {
                    what: "lexicon key",
                    reason: "not a lexicon key".into(),
                }),
            })
            .collect()
    }

    /// Sets a repository's signing keys (opaque bytes) durably, outside any
    /// commit.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn put_signing_keys(&self, repo: &str, bytes: Bytes) -> Result<(), Error> {
        self.write_durably(vec![WriteOp::Put(records::signing_keys_key(repo), bytes)])
            .await
    }

    /// A repository's signing keys, as [`Store::put_signing_keys`] set them.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn signing_keys(&self, repo: &str) -> Result<Option<Bytes>, Error> {
        self.kv.get(&records::signing_keys_key(repo)).await
    }

    /// A repository's collection declarations as (collection, bytes), in
    /// collection order.
    ///
    /// # Errors
    ///
    /// [`Error::Malformed`] or a storage error.
    pub async fn collections(&self, repo: &str) -> Result<Vec<(String, Bytes)>, Error> {
        let rows = self
            .kv
            .scan(&records::collection_range(repo), false, usize::MAX)
            .await?;
        rows.into_iter()
            .map(|(k, v)| match records::decode_key(&k) {
                Ok(records::DecodedKey::Collection { collection, .. }) => {
                    Ok((collection.into_owned(), v))
                }
                _ => Err(Error::Malformed {
                    what: "collection key",
                    reason: "not a collection key".into(),
                }),
            })
            .collect()
    }
}
