//! A repository's history: the commit log, a commit by rev, a record as of
//! a commit, and what differs between two commits.

use cid::Cid;
use rkey::Tid;
use store::Kv;

use super::{
    head::load_commit,
    paths::{check_path, pail_key},
    state::Repository,
};
use crate::{commit::CommitData, error::Error, record::Record};

/// A record that differs between two commits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordDiff {
    /// The collection.
    pub collection: String,
    /// The record key.
    pub rkey: String,
    /// Its CID in the older commit (`None`: created).
    pub old: Option<Cid>,
    /// Its CID in the newer commit (`None`: deleted).
    pub new: Option<Cid>,
}

/// A commit in the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    /// The commit's CID.
    pub cid: Cid,
    /// The commit.
    pub commit: CommitData,
}

impl<K: Kv> Repository<K> {
    /// Up to `limit` commits, newest first.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn log(&self, limit: usize) -> Result<Vec<LogEntry>, Error> {
        let entries = self.store.commit_log(&self.id, true, limit).await?;
        let mut out = Vec::with_capacity(entries.len());
        for (_, cid) in entries {
            out.push(LogEntry {
                cid,
                commit: load_commit(&self.store, cid).await?,
            });
        }
        Ok(out)
    }

    /// The commit with this rev.
    ///
    /// # Errors
    ///
    /// [`Error::RevNotFound`] or a storage error.
    pub async fn commit_at(&self, rev: Tid) -> Result<LogEntry, Error> {
        let cid = self
            .store
            .commit_at(&self.id, rev.as_u64())
            .await?
            .ok_or_else(|| Error::RevNotFound {
                repo: self.id.clone(),
                rev: rev.to_string(),
            })?;
        Ok(LogEntry {
            cid,
            commit: load_commit(&self.store, cid).await?,
        })
    }

    /// The record at `collection/rkey` as of the commit with this rev.
    ///
    /// # Errors
    ///
    /// [`Error::Syntax`] for a malformed `collection` or `rkey`,
    /// [`Error::RevNotFound`], or a storage error (including a block that
    /// garbage collection removed).
    pub async fn record_at(
        &self,
        rev: Tid,
        collection: &str,
        rkey: &str,
    ) -> Result<Option<Record>, Error> {
        check_path(collection, rkey)?;
        let entry = self.commit_at(rev).await?;
        let key = pail_key(collection, rkey);
        match pail::get(&*self.store, entry.commit.data, &key).await? {
            Some(cid) => self.load_record(cid).await.map(Some),
            None => Ok(None),
        }
    }

    /// The records that differ between the commits with revs `a` and `b`,
    /// in path order.
    ///
    /// # Errors
    ///
    /// [`Error::RevNotFound`] or a storage error.
    pub async fn diff(&self, a: Tid, b: Tid) -> Result<Vec<RecordDiff>, Error> {
        let a = self.commit_at(a).await?.commit.data;
        let b = self.commit_at(b).await?.commit.data;
        let diff = pail::diff(&*self.store, a, b).await?;
        let mut out: Vec<RecordDiff> = diff
            .keys
            .into_iter()
            .filter_map(|change| {
                let (collection, rkey) = change.key.split_once('/')?;
                Some(RecordDiff {
                    collection: collection.to_owned(),
                    rkey: rkey.to_owned(),
                    old: change.old,
                    new: change.new,
                })
            })
            .collect();
        out.sort_by(|x, y| (&x.collection, &x.rkey).cmp(&(&y.collection, &y.rkey)));
        Ok(out)
    }
}
