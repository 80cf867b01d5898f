//! Collecting blobs: what no repository holds any more goes, bytes too.
//!
//! A repository drops a blob it holds when it is **temporary** (no commit
//! ever referred to it) and older than the temporary TTL, or when no
//! record of the head refers to it and every commit that did is older than
//! the oldest commit the repository retains (`gc --keep-last`: a blob an
//! old retained version refers to stays). Then the bytes no repository
//! holds go, and uploads' temporary objects older than the TTL (an upload
//! still under way is younger).

use std::collections::HashSet;

use keycodec::records;
use store::{Kv, WriteOp};

use crate::{blobs::BlobInfo, error::Error, repository::repos::Repos};

/// How long a temporary blob (or an upload's object) is kept by default:
/// 6 hours (AT Protocol's reference recommends at least one).
pub const DEFAULT_BLOB_TEMP_TTL_SECS: u64 = 6 * 60 * 60;

/// What a blob collection did (or, in a dry run, would do).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BlobGcReport {
    /// Blobs repositories held when it started.
    pub held: usize,
    /// Temporary blobs dropped (older than the TTL, never referred to).
    pub temporary_dropped: usize,
    /// Blobs dropped that no retained commit refers to any more.
    pub released_dropped: usize,
    /// Stored objects deleted (blobs no repository holds, stale uploads).
    pub objects_deleted: usize,
    /// Bytes freed.
    pub bytes_freed: u64,
}

impl<K: Kv> Repos<K> {
    /// Collects blobs: see the module's description. `temp_ttl_secs`
    /// bounds how long temporary blobs and uploads stay; with `dry_run`
    /// nothing changes.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn collect_blobs(
        &self,
        temp_ttl_secs: u64,
        dry_run: bool,
    ) -> Result<BlobGcReport, Error> {
        let now = self.env().now_micros() / 1_000_000;
        let expired = |at: u64| at.saturating_add(temp_ttl_secs) <= now;
        let mut report = BlobGcReport::default();
        let mut held: HashSet<String> = HashSet::new();
        for (id, _) in self.list().await? {
            let repo = self.open(&id).await?;
            // A commit that refers to a blob reads it under this lock: it
            // sees the blob, or is refused; never a dangling reference.
            let _state = repo.state.lock().await;
            let oldest_retained = self
                .store()
                .commit_log(&id, false, 1)
                .await?
                .first()
                .map(|(rev, _)| *rev);
            let rows = self
                .store()
                .kv()
                .scan(&records::blobs_range(&id), false, usize::MAX)
                .await?;
            let mut drops = Vec::new();
            for (key, value) in rows {
                report.held += 1;
                let Ok(info) = serde_json::from_slice::<BlobInfo>(&value) else {
                    continue;
                };
                let temporary = !info.permanent && info.refs == 0 && expired(info.created_at);
                let released = info.refs == 0
                    && info
                        .released_rev
                        .zip(oldest_retained)
                        .is_some_and(|(released, oldest)| oldest >= released);
                if temporary || released {
                    report.temporary_dropped += usize::from(temporary);
                    report.released_dropped += usize::from(released && !temporary);
                    drops.push(WriteOp::Delete(key.to_vec()));
                } else if let Ok(records::DecodedKey::Blob { cid, .. }) = records::decode_key(&key)
                {
                    held.insert(cid.into_owned());
                }
            }
            if !dry_run && !drops.is_empty() {
                self.store().kv().write(drops).await?;
            }
        }
        let blobs = self.store().kv().blobs();
        for object in blobs.list().await? {
            let unheld = match &object.cid {
                Some(cid) => !held.contains(&cid.to_string()),
                None => true,
            };
            // Young objects may be an upload whose blob is not recorded yet.
            if unheld && expired(object.modified) {
                report.objects_deleted += 1;
                report.bytes_freed += object.size;
                if !dry_run {
                    blobs.delete_object(&object.location).await?;
                }
            }
        }
        Ok(report)
    }
}
