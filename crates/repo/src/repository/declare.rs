//! Declaring collections: record key types and the Lexicons that declare
//! them.

use rkey::{KeyType, Nsid, RecordKey};
use serde_json::Value;
use store::Kv;

use super::{
    collection::{CollectionInfo, parse_lexicon},
    state::{Repository, State},
};
use crate::error::Error;

impl<K: Kv> Repository<K> {
    /// The repository's collections and their declarations, in name order.
    pub async fn collections(&self) -> Vec<(String, CollectionInfo)> {
        let state = self.state.lock().await;
        let mut out: Vec<_> = state
            .collections
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// Declares `collection`'s record key type (and the Lexicon document
    /// that declares it). Existing records must fit the new type.
    ///
    /// # Errors
    ///
    /// [`Error::Syntax`] for an invalid NSID, [`Error::KeyTypeConflict`]
    /// naming an existing record that does not fit, or a storage error.
    pub async fn define_collection(
        &self,
        collection: &str,
        key: KeyType,
        lexicon: Option<Value>,
    ) -> Result<CollectionInfo, Error> {
        let nsid = Nsid::new(collection)?;
        let mut state = self.state.lock().await;
        let info = self
            .declare_collection(&mut state, &nsid, key, lexicon)
            .await?;
        self.refresh_lexicons(&state).await?;
        Ok(info)
    }

    /// [`Repository::define_collection`] under the caller's lock, leaving
    /// the compiled Lexicons to the caller.
    pub(crate) async fn declare_collection(
        &self,
        state: &mut State,
        nsid: &Nsid,
        key: KeyType,
        lexicon: Option<Value>,
    ) -> Result<CollectionInfo, Error> {
        self.existing_keys_fit(nsid, &key).await?;
        let info = CollectionInfo {
            key,
            declared: true,
            lexicon,
        };
        self.store
            .put_collection(&self.id, nsid.as_str(), info.encode())
            .await?;
        state
            .collections
            .insert(nsid.as_str().to_owned(), info.clone());
        Ok(info)
    }

    /// Checks that every record of `collection` has a key that fits `key`.
    ///
    /// # Errors
    ///
    /// [`Error::KeyTypeConflict`] naming the first that does not, or a
    /// storage error.
    pub(crate) async fn existing_keys_fit(&self, nsid: &Nsid, key: &KeyType) -> Result<(), Error> {
        let mut cursor: Option<String> = None;
        loop {
            let page = self
                .store
                .list_records(&self.id, nsid.as_str(), cursor.as_deref(), false, 1024)
                .await?;
            for (rkey, _) in &page {
                let fits = RecordKey::new(rkey.as_str()).and_then(|k| key.check(&k));
                if let Err(e) = fits {
                    return Err(Error::KeyTypeConflict {
                        collection: nsid.as_str().to_owned(),
                        key_type: key.to_string(),
                        rkey: rkey.clone(),
                        reason: e.to_string(),
                    });
                }
            }
            match page.last() {
                Some((last, _)) if page.len() == 1024 => cursor = Some(last.clone()),
                _ => return Ok(()),
            }
        }
    }

    /// Registers an AT Protocol Lexicon document whose `main` definition is
    /// a `record`: declares the collection named by its `id` with its `key`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidLexicon`] saying what is missing, or as
    /// [`Repository::define_collection`].
    pub async fn add_lexicon(&self, doc: Value) -> Result<(String, CollectionInfo), Error> {
        let (id, _) = parse_lexicon(&doc)?;
        self.add_lexicons(vec![doc]).await?;
        let info = self
            .collections()
            .await
            .into_iter()
            .find(|(c, _)| *c == id)
            .map(|(_, i)| i)
            .ok_or_else(|| Error::InvalidLexicon(format!("{id} declared no collection")))?;
        Ok((id, info))
    }
}
