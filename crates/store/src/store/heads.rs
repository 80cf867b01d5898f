//! Repository heads and the commit log.

use cid::Cid;
use keycodec::{KeyRange, RecordType, records};

use super::{
    commit::Head,
    state::{Store, View},
};
use crate::{error::Error, kv::interface::Kv};

impl<K: Kv> Store<K> {
    /// A repository's latest head, if it exists, including one whose
    /// commit is still waiting to be durable: what the next commit builds
    /// on. Show readers [`Store::durable_head`] instead.
    ///
    /// # Errors
    ///
    /// [`Error::Malformed`] or a storage error.
    pub async fn head(&self, repo: &str) -> Result<Option<Head>, Error> {
        self.head_in(repo, View::Written).await
    }

    /// A repository's head as a crash would leave it: the latest whose
    /// commit is durable. Every read of records, logs and heads that a
    /// client sees goes through this view, so nobody is shown a commit that
    /// could still be lost.
    ///
    /// # Errors
    ///
    /// [`Error::Malformed`] or a storage error.
    pub async fn durable_head(&self, repo: &str) -> Result<Option<Head>, Error> {
        self.head_in(repo, View::Durable).await
    }

    pub(super) async fn head_in(&self, repo: &str, view: View) -> Result<Option<Head>, Error> {
        match self.kv_get(&records::head_key(repo), view).await? {
            Some(bytes) => Head::decode(&bytes).map(Some),
            None => Ok(None),
        }
    }

    /// The commit a repository's log records at `rev`.
    ///
    /// # Errors
    ///
    /// [`Error::Malformed`] or a storage error.
    pub async fn commit_at(&self, repo: &str, rev: u64) -> Result<Option<Cid>, Error> {
        match self
            .kv_get(&records::commit_log_key(repo, rev), View::Durable)
            .await?
        {
            Some(v) => Cid::try_from(v.as_ref())
                .map(Some)
                .map_err(|e| Error::Malformed {
                    what: "commit log entry",
                    reason: e.to_string(),
                }),
            None => Ok(None),
        }
    }

    /// Every repository with a head, in name order.
    ///
    /// # Errors
    ///
    /// [`Error::Malformed`] or a storage error.
    pub async fn repos(&self) -> Result<Vec<(String, Head)>, Error> {
        let rows = self
            .kv_scan(&RecordType::Head.range(), false, usize::MAX, View::Durable)
            .await?;
        rows.into_iter()
            .map(|(k, v)| match records::decode_key(&k) {
                Ok(records::DecodedKey::Head { repo }) => {
                    Ok((repo.into_owned(), Head::decode(&v)?))
                }
                _ => Err(Error::Malformed {
                    what: "head key",
                    reason: "not a head key".into(),
                }),
            })
            .collect()
    }

    /// Up to `limit` durable commit-log entries of a repository as
    /// (rev, commit CID), newest first when `reverse`.
    ///
    /// # Errors
    ///
    /// [`Error::Malformed`] or a storage error.
    pub async fn commit_log(
        &self,
        repo: &str,
        reverse: bool,
        limit: usize,
    ) -> Result<Vec<(u64, Cid)>, Error> {
        self.commit_log_in(repo, reverse, limit, View::Durable)
            .await
    }

    /// Up to `limit` durable commit-log entries of a repository with revs
    /// below `before` (all when `None`), newest first: one page of the log.
    ///
    /// # Errors
    ///
    /// [`Error::Malformed`] or a storage error.
    pub async fn commit_log_before(
        &self,
        repo: &str,
        before: Option<u64>,
        limit: usize,
    ) -> Result<Vec<(u64, Cid)>, Error> {
        let mut range = records::commit_log_range(repo);
        if let Some(rev) = before {
            range.end = Some(records::commit_log_key(repo, rev));
        }
        self.commit_log_range_in(&range, true, limit, View::Durable)
            .await
    }

    pub(crate) async fn commit_log_in(
        &self,
        repo: &str,
        reverse: bool,
        limit: usize,
        view: View,
    ) -> Result<Vec<(u64, Cid)>, Error> {
        self.commit_log_range_in(&records::commit_log_range(repo), reverse, limit, view)
            .await
    }

    pub(super) async fn commit_log_range_in(
        &self,
        range: &KeyRange,
        reverse: bool,
        limit: usize,
        view: View,
    ) -> Result<Vec<(u64, Cid)>, Error> {
        let rows = self.kv_scan(range, reverse, limit, view).await?;
        rows.into_iter()
            .map(|(k, v)| {
                let malformed = |reason: String| Error::Malformed {
                    what: "commit log entry",
                    reason,
                };
                let records::DecodedKey::CommitLog { rev, .. } =
                    records::decode_key(&k).map_err(|e| malformed(e.to_string()))?
                else {
                    return Err(malformed("not a commit log key".into()));
                };
                let cid = Cid::try_from(v.as_ref()).map_err(|e| malformed(e.to_string()))?;
                Ok((rev, cid))
            })
            .collect()
    }
}
