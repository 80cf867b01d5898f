//! Reads for looking inside a repository, as a browser of it needs them:
//! the commit log page by page, what one commit changed, the versions of
//! one record across the retained commits, and the Pail's shards.

use std::sync::Arc;

use cid::Cid;
use pail::{Shard, ShardFetcher};
use rkey::Tid;
use store::Kv;

use crate::repository::{
    head::load_commit,
    log::{LogEntry, RecordDiff},
    paths::pail_key,
};
use crate::{error::Error, repository::state::Repository};

/// One version of a record: the commit that made it and what it did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordVersion {
    /// The commit that wrote (or deleted) the record.
    pub commit: LogEntry,
    /// The record's CID after that commit (`None`: the commit deleted it).
    pub cid: Option<Cid>,
    /// The record's CID before that commit (`None`: the commit created it).
    pub prev: Option<Cid>,
}

/// A page of a record's versions, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordHistory {
    /// The versions the commits looked at made.
    pub versions: Vec<RecordVersion>,
    /// When older commits remain unexamined: the rev to continue below.
    pub cursor: Option<Tid>,
}

/// One step on the way from a Pail's root to a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PailStep {
    /// The shard.
    pub shard: Cid,
    /// The key prefix every key below this shard starts with.
    pub prefix: String,
    /// The entry of this shard the way goes through (the key's piece here).
    pub entry: String,
}

impl LogEntry {
    /// The commit as the API and `datarepo --json` show it: `{cid, rev,
    /// time, data, signed, prev?}`.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        let mut out = serde_json::json!({
            "cid": self.cid.to_string(),
            "rev": self.commit.rev.to_string(),
            "time": self.commit.time(),
            "data": self.commit.data.to_string(),
            "signed": self.commit.is_signed(),
        });
        if let Some(prev) = self.commit.prev {
            out["prev"] = serde_json::json!(prev.to_string());
        }
        out
    }
}

impl RecordDiff {
    /// `create`, `update` or `delete`.
    #[must_use]
    pub fn action(&self) -> &'static str {
        match (self.old, self.new) {
            (None, _) => "create",
            (Some(_), Some(_)) => "update",
            (Some(_), None) => "delete",
        }
    }

    /// The change as the API and `datarepo --json` show it: `{action,
    /// collection, rkey, uri, cid?, prev?}` (`cid`: after, `prev`: before).
    #[must_use]
    pub fn to_json(&self, repo: &str) -> serde_json::Value {
        let mut out = serde_json::json!({
            "action": self.action(),
            "collection": self.collection,
            "rkey": self.rkey,
            "uri": crate::repository::paths::record_uri(repo, &self.collection, &self.rkey),
        });
        if let Some(cid) = self.new {
            out["cid"] = serde_json::json!(cid.to_string());
        }
        if let Some(prev) = self.old {
            out["prev"] = serde_json::json!(prev.to_string());
        }
        out
    }
}

impl RecordVersion {
    /// The version as `dev.datarepo.getRecordHistory` and `datarepo log
    /// --record --json` show it: the change (`RecordDiff::to_json`) and
    /// its `commit` (`LogEntry::to_json`).
    #[must_use]
    pub fn to_json(&self, repo: &str, collection: &str, rkey: &str) -> serde_json::Value {
        let mut out = RecordDiff {
            collection: collection.to_owned(),
            rkey: rkey.to_owned(),
            old: self.prev,
            new: self.cid,
        }
        .to_json(repo);
        out["commit"] = self.commit.to_json();
        out
    }
}

impl<K: Kv> Repository<K> {
    /// Up to `limit` commits with revs below `before` (from the head when
    /// `None`), newest first.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn commits(&self, before: Option<Tid>, limit: usize) -> Result<Vec<LogEntry>, Error> {
        let page = self
            .store()
            .commit_log_before(self.id(), before.map(Tid::as_u64), limit)
            .await?;
        let mut out = Vec::with_capacity(page.len());
        for (_, cid) in page {
            out.push(LogEntry {
                cid,
                commit: load_commit(self.store(), cid).await?,
            });
        }
        Ok(out)
    }

    /// How many commits the log holds (those garbage collection kept).
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn commit_count(&self) -> Result<u64, Error> {
        const PAGE: usize = 8192;
        let mut n = 0u64;
        let mut before = None;
        loop {
            let page = self
                .store()
                .commit_log_before(self.id(), before, PAGE)
                .await?;
            n += page.len() as u64;
            match page.last() {
                Some(&(rev, _)) if page.len() == PAGE => before = Some(rev),
                _ => return Ok(n),
            }
        }
    }

    /// How many records `entry`'s commit created, updated and deleted: the
    /// difference from its previous commit, or `None` when that commit is
    /// not stored (garbage collection dropped it, or an import never had
    /// it) or there is none (a first commit, empty when datarepo made it).
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn change_counts(&self, entry: &LogEntry) -> Result<Option<[u64; 3]>, Error> {
        let Some(prev) = entry.commit.prev else {
            return Ok(None);
        };
        let before = match load_commit(self.store(), prev).await {
            Ok(before) => before,
            Err(Error::MissingBlock(_)) => return Ok(None),
            Err(e) => return Err(e),
        };
        let mut counts = [0u64; 3];
        for change in pail::diff(&**self.store(), before.data, entry.commit.data)
            .await?
            .keys
        {
            counts[match (change.old, change.new) {
                (None, _) => 0,
                (Some(_), Some(_)) => 1,
                (Some(_), None) => 2,
            }] += 1;
        }
        Ok(Some(counts))
    }

    /// The records the commit with this rev created, updated or deleted,
    /// in path order: the difference from its previous commit (every
    /// record, for a first commit).
    ///
    /// # Errors
    ///
    /// [`Error::RevNotFound`], [`Error::MissingBlock`] when garbage
    /// collection removed the previous commit, or a storage error.
    pub async fn changes(&self, rev: Tid) -> Result<(LogEntry, Vec<RecordDiff>), Error> {
        let entry = self.commit_at(rev).await?;
        let changes = match entry.commit.prev {
            Some(prev) => {
                let before = load_commit(self.store(), prev).await?;
                self.diff(before.rev, rev).await?
            }
            None => pail::entries(
                &**self.store(),
                entry.commit.data,
                &pail::EntriesOptions::default(),
            )
            .await?
            .into_iter()
            .filter_map(|(key, cid)| {
                let (collection, rkey) = key.split_once('/')?;
                Some(RecordDiff {
                    collection: collection.to_owned(),
                    rkey: rkey.to_owned(),
                    old: None,
                    new: Some(cid),
                })
            })
            .collect(),
        };
        Ok((entry, changes))
    }

    /// The versions of `collection/rkey` made by the commits with revs
    /// below `before` (from the head when `None`), newest first: at most
    /// `max_versions` from the record's history entries (one range read,
    /// `crate::history`), then, for commits older than the repository's
    /// history start (written before histories were kept, or imported),
    /// what reading the record in each of up to `max_versions` commits
    /// finds. Versions made by commits garbage collection dropped are not
    /// listed.
    ///
    /// # Errors
    ///
    /// [`Error::Syntax`] for a malformed name, or a storage error.
    pub async fn record_history(
        &self,
        collection: &str,
        rkey: &str,
        before: Option<Tid>,
        max_versions: usize,
    ) -> Result<RecordHistory, Error> {
        crate::repository::paths::check_path(collection, rkey)?;
        let max_versions = max_versions.max(1);
        let key = pail_key(collection, rkey);
        let start = crate::history::start(self.store(), self.id()).await?;
        let Some(start) = start.filter(|s| before.is_none_or(|b| b.as_u64() > *s)) else {
            return self.walk_history(&key, before, max_versions).await;
        };
        // Newest first; those below the start may be incomplete.
        let entries: Vec<_> = crate::history::entries(
            self.store(),
            self.id(),
            collection,
            rkey,
            before.map(Tid::as_u64),
            max_versions.saturating_add(1),
        )
        .await?
        .into_iter()
        .filter(|e| e.rev >= start)
        .collect();
        let mut versions = Vec::new();
        for (i, entry) in entries.iter().take(max_versions).enumerate() {
            if self.store().commit_at(self.id(), entry.rev).await? != Some(entry.commit) {
                // Collected, with every older commit.
                return Ok(RecordHistory {
                    versions,
                    cursor: None,
                });
            }
            let commit = load_commit(self.store(), entry.commit).await?;
            let prev = match entries.get(i + 1) {
                Some(older) => older.cid,
                None => match commit.prev {
                    None => None,
                    Some(prev) => match load_commit(self.store(), prev).await {
                        Ok(before) => pail::get(&**self.store(), before.data, &key).await?,
                        // What it replaced went with the commit before.
                        Err(Error::MissingBlock(_)) => continue,
                        Err(e) => return Err(e),
                    },
                },
            };
            if entry.cid != prev {
                versions.push(RecordVersion {
                    commit: LogEntry {
                        cid: entry.commit,
                        commit,
                    },
                    cid: entry.cid,
                    prev,
                });
            }
        }
        if entries.len() > max_versions {
            let last = entries[max_versions - 1].rev;
            return Ok(RecordHistory {
                versions,
                cursor: Some(Tid::from_u64(last)),
            });
        }
        // The entries are done down to the start; older commits are read.
        let older = self
            .walk_history(&key, Some(Tid::from_u64(start)), max_versions)
            .await?;
        versions.extend(older.versions);
        Ok(RecordHistory {
            versions,
            cursor: older.cursor,
        })
    }

    /// [`Repository::record_history`] by reading the record in each of up
    /// to `max_commits` commits below `before`.
    async fn walk_history(
        &self,
        key: &str,
        before: Option<Tid>,
        max_commits: usize,
    ) -> Result<RecordHistory, Error> {
        // One more commit than examined: a version is the difference
        // between a commit and the one before it.
        let commits = self.commits(before, max_commits.saturating_add(1)).await?;
        let mut cids = Vec::with_capacity(commits.len());
        for entry in &commits {
            cids.push(pail::get(&**self.store(), entry.commit.data, key).await?);
        }
        let examined = commits.len().min(max_commits);
        let mut versions = Vec::new();
        for i in 0..examined {
            // The oldest commit of the log changed from nothing only when
            // it is the repository's first commit.
            let prev = match cids.get(i + 1) {
                Some(older) => *older,
                None if commits[i].commit.prev.is_none() => None,
                None => continue,
            };
            if cids[i] != prev {
                versions.push(RecordVersion {
                    commit: commits[i].clone(),
                    cid: cids[i],
                    prev,
                });
            }
        }
        let cursor = (commits.len() > max_commits).then(|| commits[examined - 1].commit.rev);
        Ok(RecordHistory { versions, cursor })
    }

    /// The block with this CID, if stored.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn block(&self, cid: Cid) -> Result<Option<store::Block>, Error> {
        Ok(self.store().get_block(&cid).await?)
    }

    /// The Pail shard with this CID.
    ///
    /// # Errors
    ///
    /// [`pail::Error::MissingBlock`] (as [`Error::Pail`]) when no such
    /// block is stored, [`pail::Error::InvalidShard`] when it is not a shard.
    pub async fn shard(&self, cid: Cid) -> Result<Arc<Shard>, Error> {
        Ok(self.store().get_shard(&cid).await?)
    }

    /// The way from the Pail root `root` to the key of `collection/rkey`:
    /// each shard passed and the entry taken there, and the record's CID
    /// (held by the last step's entry) when the key is present; when it is
    /// not, the way stops at the shard where the key would be.
    ///
    /// # Errors
    ///
    /// [`Error::Syntax`] for a malformed name, or a storage error.
    pub async fn pail_path(
        &self,
        root: Cid,
        collection: &str,
        rkey: &str,
    ) -> Result<(Vec<PailStep>, Option<Cid>), Error> {
        crate::repository::paths::check_path(collection, rkey)?;
        let key = pail_key(collection, rkey);
        let mut steps = Vec::new();
        let mut shard = self.shard(root).await?;
        let mut prefix_len = 0;
        loop {
            let rest = &key[prefix_len..];
            // The entry equal to the rest of the key, else the one whose
            // key starts it and links further down.
            let exact = shard.entries().find(|(k, _)| *k == rest).map(|(_, v)| v);
            let down = shard.entries().find_map(|(k, v)| {
                let link = v.link().filter(|_| !k.is_empty() && rest.starts_with(k))?;
                Some((k.to_owned(), link))
            });
            let entry = match (exact, &down) {
                (Some(_), _) => rest.to_owned(),
                (None, Some((k, _))) => k.clone(),
                (None, None) => String::new(),
            };
            steps.push(PailStep {
                shard: shard.cid(),
                prefix: key[..prefix_len].to_owned(),
                entry,
            });
            match (exact, down) {
                (Some(value), _) => return Ok((steps, value.data())),
                (None, Some((k, link))) => {
                    prefix_len += k.len();
                    shard = self.shard(link).await?;
                }
                (None, None) => return Ok((steps, None)),
            }
        }
    }
}
