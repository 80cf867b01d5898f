//! Deleting a repository: everything the store keeps under its name.

use keycodec::records;
use store::{Kv, WriteOp};

use super::repos::Repos;
use crate::error::Error;

impl<K: Kv> Repos<K> {
    /// Deletes the repository `id`: its head first (so that it is gone for
    /// every reader at once), then its field indexes, commit log, record
    /// index and histories, record counts, collections, Lexicons, blob
    /// references and signing keys. Its blocks and blob bytes stay until
    /// the next garbage collection (another repository may share them);
    /// firehose events already emitted stay. Run again after a crash, it removes what was left.
    ///
    /// # Errors
    ///
    /// [`Error::RepoNotFound`] when nothing of the repository is stored, or
    /// a storage error.
    pub async fn delete(&self, id: &str) -> Result<(), Error> {
        let store = self.store();
        // No index build beside it, no new handle, no commit in flight.
        let _scopes = store.lock_index_scopes().await;
        let mut open = self.lock_open().await;
        let handle = open.remove(id);
        let _writing = match &handle {
            Some(repo) => Some(repo.state.lock().await),
            None => None,
        };
        let kv = store.kv();
        let head = kv.get(&records::head_key(id)).await?;
        let declared = index::declarations(kv, id, None).await?;
        let leftovers = !kv
            .scan(&records::commit_log_range(id), false, 1)
            .await?
            .is_empty();
        if head.is_none() && declared.is_empty() && !leftovers {
            return Err(Error::RepoNotFound(id.to_owned()));
        }
        if head.is_some() {
            kv.write(vec![WriteOp::Delete(records::head_key(id))])
                .await?;
        }
        let mut scopes: Vec<u32> = declared.iter().map(|d| d.scope).collect();
        scopes.sort_unstable();
        scopes.dedup();
        for scope in scopes {
            index::delete_scope(kv, scope).await?;
        }
        // The commit log last: while it is there, a run after a crash
        // knows there is something left to delete.
        for range in [
            records::field_index_range(id, None),
            records::repo_record_index_range(id),
            records::repo_history_range(id),
            records::record_counts_range(id),
            records::collection_range(id),
            records::lexicon_range(id),
            records::repo_record_blobs_range(id),
            records::blobs_range(id),
        ] {
            index::delete_range(kv, &range).await?;
        }
        kv.write(vec![WriteOp::Delete(records::signing_keys_key(id))])
            .await?;
        index::delete_range(kv, &records::commit_log_range(id)).await?;
        Ok(())
    }
}
