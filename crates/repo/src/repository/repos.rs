//! [`Repos`]: every repository in a store, created and opened once per
//! process.

use std::{collections::HashMap, sync::Arc};

use pail::{Shard, ShardConfig};
use store::{Block, Commit, Head, Kv, Store};

use super::{
    env::{Env, default_shard_config},
    head::{HeadInfo, commit_event, head_info},
    state::{DEFAULT_INDEX_CACHE_BYTES, Repository, State, load_lexicons},
};
use crate::{
    commit::CommitData,
    error::Error,
    keys::{CurrentKey, SigningKeys},
    signing::SigningKey,
};

/// Every repository in a store.
///
/// Opening a repository twice returns the same [`Repository`], whose writes
/// are serialized in memory; the store's head compare-and-swap guards
/// against writers in other processes.
pub struct Repos<K> {
    store: Arc<Store<K>>,
    env: Env,
    shard_config: ShardConfig,
    open: tokio::sync::Mutex<HashMap<String, Arc<Repository<K>>>>,
}

impl<K> std::fmt::Debug for Repos<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repos").finish_non_exhaustive()
    }
}

impl<K: Kv> Repos<K> {
    /// Repositories in `store`, making TIDs from `env`.
    pub fn new(store: Arc<Store<K>>, env: Env) -> Self {
        Self {
            store,
            env,
            shard_config: default_shard_config(),
            open: tokio::sync::Mutex::new(HashMap::new()),
        }
    }

    /// Sets the Pail shard configuration of repositories created from now on.
    #[must_use]
    pub fn with_shard_config(mut self, config: ShardConfig) -> Self {
        self.shard_config = config;
        self
    }

    /// Forgets every open repository, so that each is read again from the
    /// store when next used: what a standby that has just become the
    /// writer does, since what it read as a replica may be behind.
    pub async fn forget_open(&self) {
        self.open.lock().await.clear();
    }

    /// The store.
    pub fn store(&self) -> &Arc<Store<K>> {
        &self.store
    }

    /// The clock and clock id this store's repositories use.
    pub(crate) fn env(&self) -> &Env {
        &self.env
    }

    /// Now, in microseconds since the Unix epoch, by the clock this
    /// store's repositories use (for events made beside them).
    #[must_use]
    pub fn now_micros(&self) -> u64 {
        self.env.now_micros()
    }

    /// Every repository, in name order.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn list(&self) -> Result<Vec<(String, Head)>, Error> {
        Ok(self.store.repos().await?)
    }

    /// Creates a repository: an empty Pail and a first commit, unsigned
    /// (as every later commit, until [`Repository::set_signing_key`]).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRepoId`], [`Error::RepoExists`] or a storage error.
    pub async fn create(&self, id: &str) -> Result<Arc<Repository<K>>, Error> {
        self.create_with(id, None).await
    }

    /// Creates a repository whose commits, the first one included, are
    /// signed by `key`, kept in `file` (its path is stored with the public
    /// key, so that later writers, in this process or another, load it).
    ///
    /// # Errors
    ///
    /// As [`Repos::create`].
    pub async fn create_signed(
        &self,
        id: &str,
        key: Arc<SigningKey>,
        file: std::path::PathBuf,
    ) -> Result<Arc<Repository<K>>, Error> {
        self.create_with(id, Some((key, file))).await
    }

    async fn create_with(
        &self,
        id: &str,
        signer: Option<(Arc<SigningKey>, std::path::PathBuf)>,
    ) -> Result<Arc<Repository<K>>, Error> {
        validate_repo_id(id)?;
        let mut open = self.open.lock().await;
        if open.contains_key(id) || self.store.head(id).await?.is_some() {
            return Err(Error::RepoExists(id.to_owned()));
        }
        let tids = self.env.tids(None)?;
        let empty = Arc::new(Shard::empty(self.shard_config));
        let mut commit = CommitData::new(id.to_owned(), tids.next_tid()?, empty.cid(), None);
        // The keys go first: a crash before the commit leaves no repository,
        // and the next create writes them again.
        let mut keys = SigningKeys::default();
        if let Some((key, file)) = &signer {
            keys.current = Some(CurrentKey {
                key: *key.public_key(),
                file: file.clone(),
            });
            keys.trust(*key.public_key());
            keys.save(&self.store, id).await?;
            commit = commit.signed(key);
        } else if self.store.signing_keys(id).await?.is_some() {
            // Left by a signed create that crashed before its commit.
            keys.save(&self.store, id).await?;
        }
        let commit_block = commit.encode();
        let commit_cid = commit_block.cid();
        let event = commit_event(
            &commit,
            commit_cid,
            None,
            vec![empty.cid()],
            Vec::new(),
            Vec::new(),
        );
        self.store
            .commit(Commit {
                repo: id.to_owned(),
                expected: None,
                head: Head {
                    commit: commit_cid,
                    rev: commit.rev.as_u64(),
                },
                blocks: vec![Block::from_shard(&empty), commit_block],
                records: Vec::new(),
                collections: Vec::new(),
                // Every commit of a new repository has its history entries.
                index: vec![crate::history::start_at(id, 0)],
                history: store::LogChange::default(),
                event: Some(event),
                stream: None,
            })
            .await
            .map_err(|e| match e {
                store::Error::Conflict(_) => Error::RepoExists(id.to_owned()),
                e => Error::Store(e),
            })?;
        let head = HeadInfo {
            commit: commit_cid,
            rev: commit.rev,
            data: commit.data,
        };
        let repo = self
            .handle(id, tids, head, signer.map(|(key, _)| key))
            .await?;
        open.insert(id.to_owned(), Arc::clone(&repo));
        Ok(repo)
    }

    /// Opens an existing repository.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRepoId`], [`Error::RepoNotFound`] or a storage error.
    pub async fn open(&self, id: &str) -> Result<Arc<Repository<K>>, Error> {
        let mut open = self.open.lock().await;
        if let Some(repo) = open.get(id) {
            return Ok(Arc::clone(repo));
        }
        validate_repo_id(id)?;
        // The latest head, durable or not: this handle's commits build on it.
        let Some(head) = head_info(&self.store, self.store.head(id).await?).await? else {
            return Err(Error::RepoNotFound(id.to_owned()));
        };
        let tids = self.env.tids(Some(head.rev))?;
        let repo = self.handle(id, tids, head, None).await?;
        open.insert(id.to_owned(), Arc::clone(&repo));
        Ok(repo)
    }

    /// A handle on repository `id` at `head`: its tree's state and
    /// Lexicons loaded, an empty index cache.
    async fn handle(
        &self,
        id: &str,
        tids: rkey::TidGenerator<super::env::ClockFn>,
        head: HeadInfo,
        signer: Option<Arc<SigningKey>>,
    ) -> Result<Arc<Repository<K>>, Error> {
        let state = State::load(&self.store, id, head).await?;
        Ok(Arc::new(Repository {
            store: Arc::clone(&self.store),
            id: id.to_owned(),
            tids,
            env: self.env.clone(),
            lexicons: std::sync::RwLock::new(Arc::new(
                load_lexicons(&self.store, id, &state).await?,
            )),
            state: tokio::sync::Mutex::new(state),
            search: tokio::sync::RwLock::new(()),
            cache: std::sync::Mutex::new(index::IndexCache::new(DEFAULT_INDEX_CACHE_BYTES)),
            signer: std::sync::Mutex::new(signer),
            waiting: std::sync::Mutex::new(std::collections::VecDeque::new()),
        }))
    }

    /// Forgets the open handle of `id` (after an import replaced its head).
    pub(crate) async fn forget(&self, id: &str) {
        self.open.lock().await.remove(id);
    }

    /// Holds the open-repositories lock (imports hold it while they write).
    pub(crate) async fn lock_open(
        &self,
    ) -> tokio::sync::MutexGuard<'_, HashMap<String, Arc<Repository<K>>>> {
        self.open.lock().await
    }
}

fn validate_repo_id(id: &str) -> Result<(), Error> {
    rkey::validate_repo_id(id).map_err(|e| Error::InvalidRepoId {
        id: id.to_owned(),
        reason: e.to_string(),
    })
}
