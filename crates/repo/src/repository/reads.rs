//! Reading a repository's current records.

use cid::Cid;
use rkey::RecordKey;
use store::{Kv, Store};

use super::{paths::check_path, state::Repository};
use crate::{error::Error, record::Record};

/// The most records a walk of a whole repository sizes its tables for
/// ahead, whatever the counts say.
const RECORDS_HINT_MAX: u64 = 1 << 24;

/// How many records repository `repo` holds by its collections' kept
/// counts (at most [`RECORDS_HINT_MAX`]): how large a walk of all of them
/// should make its tables at once, rather than doubling them as it goes
/// (each doubling holds the old table and the new together). A hint only:
/// a count that cannot be read counts as none, and a damaged one sizes a
/// table wrongly, nothing more (callers reserve with `try_reserve`).
pub(crate) async fn records_hint<K: Kv>(store: &Store<K>, repo: &str) -> usize {
    let mut records = 0u64;
    for (collection, _) in store.collections(repo).await.unwrap_or_default() {
        if let Ok(Some(kept)) = store.kept_record_count(repo, &collection).await {
            records = records.saturating_add(kept);
        }
    }
    usize::try_from(records.min(RECORDS_HINT_MAX)).unwrap_or(0)
}

impl<K: Kv> Repository<K> {
    /// Checks that `collection/rkey` names a record the repository could
    /// hold: a valid path whose record key fits the collection's key type.
    ///
    /// # Errors
    ///
    /// [`Error::Syntax`] for an invalid NSID or record key, or the key
    /// type's refusal naming its rule.
    pub async fn check_record_key(&self, collection: &str, rkey: &str) -> Result<(), Error> {
        check_path(collection, rkey)?;
        let state = self.state.lock().await;
        if let Some(info) = state.collections.get(collection) {
            info.key.check(&RecordKey::new(rkey)?)?;
        }
        Ok(())
    }

    /// The current record at `collection/rkey`.
    ///
    /// # Errors
    ///
    /// [`Error::Syntax`] when `collection` is not an NSID or `rkey` not a
    /// record key (no such record could exist), or a storage error.
    pub async fn get_record(&self, collection: &str, rkey: &str) -> Result<Option<Record>, Error> {
        check_path(collection, rkey)?;
        Ok(self
            .store
            .record_block(&self.id, collection, rkey)
            .await?
            .map(Record::stored))
    }

    pub(crate) async fn load_record(&self, cid: Cid) -> Result<Record, Error> {
        let block = self
            .store
            .get_block(&cid)
            .await?
            .ok_or(Error::MissingBlock(cid))?;
        Ok(Record::stored(block))
    }

    /// Up to `limit` records of `collection` as (rkey, record), in rkey
    /// order (descending with `reverse`), strictly after `cursor`.
    ///
    /// # Errors
    ///
    /// [`Error::Syntax`] when `collection` is not an NSID, or a storage
    /// error.
    pub async fn list_records(
        &self,
        collection: &str,
        cursor: Option<&str>,
        reverse: bool,
        limit: usize,
    ) -> Result<Vec<(String, Record)>, Error> {
        rkey::validate_nsid(collection)?;
        let rows = self
            .store
            .list_record_blocks(&self.id, collection, cursor, reverse, limit)
            .await?;
        Ok(rows
            .into_iter()
            .map(|(k, block)| (k, Record::stored(block)))
            .collect())
    }

    /// Up to `limit` record keys of `collection` after `cursor`, in order,
    /// without reading the records.
    ///
    /// # Errors
    ///
    /// [`Error::Syntax`] when `collection` is not an NSID, or a storage
    /// error.
    pub async fn list_keys(
        &self,
        collection: &str,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, Error> {
        rkey::validate_nsid(collection)?;
        let rows = self
            .store
            .list_records(&self.id, collection, cursor, false, limit)
            .await?;
        Ok(rows.into_iter().map(|(k, _)| k).collect())
    }
}
