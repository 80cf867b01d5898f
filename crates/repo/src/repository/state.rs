//! [`Repository`] and the state its writers share under one lock.

use std::{collections::HashMap, sync::Arc};

use lexicon::Lexicons;
use rkey::TidGenerator;
use store::{Kv, Store};

use super::{
    collection::CollectionInfo,
    env::ClockFn,
    head::{HeadInfo, head_info},
    write::{Checked, CommitResult},
};
use crate::{error::Error, keys::SigningKeys, signing::SigningKey};

pub(crate) struct State {
    pub(crate) head: HeadInfo,
    pub(crate) collections: HashMap<String, CollectionInfo>,
    /// Field indexes by collection.
    pub(crate) indexes: HashMap<String, Vec<index::Declared>>,
    /// Column and dictionary allocation per index scope.
    pub(crate) counters: HashMap<u32, index::ScopeCounters>,
    /// Dictionary rows already stored, remembered between commits.
    pub(crate) known_rows: index::KnownRows,
    /// The signing keys: which key signs the next commit.
    pub(crate) keys: SigningKeys,
    /// Where the records' histories start (`None`: not yet, the next
    /// commit starts them; `crate::history`).
    pub(crate) history_start: Option<u64>,
    /// Whether any record of the repository refers to a blob (else an
    /// update or delete has no references to look up).
    pub(crate) blob_refs_exist: bool,
}

impl State {
    pub(super) async fn load<K: Kv>(
        store: &Store<K>,
        id: &str,
        head: HeadInfo,
    ) -> Result<Self, Error> {
        let mut collections = HashMap::new();
        for (name, bytes) in store.collections(id).await? {
            let info = CollectionInfo::decode(&name, &bytes)?;
            collections.insert(name, info);
        }
        let mut indexes: HashMap<String, Vec<index::Declared>> = HashMap::new();
        for d in index::declarations(store.kv(), id, None).await? {
            indexes
                .entry(d.decl.collection.clone())
                .or_default()
                .push(d);
        }
        Ok(Self {
            head,
            collections,
            indexes,
            counters: HashMap::new(),
            known_rows: HashMap::new(),
            keys: SigningKeys::load(store, id).await?,
            history_start: crate::history::start(store, id).await?,
            blob_refs_exist: !store
                .kv()
                .scan(&keycodec::records::repo_record_blobs_range(id), false, 1)
                .await?
                .is_empty(),
        })
    }
}

/// Bytes of decoded bitmaps a repository keeps for its queries.
pub const DEFAULT_INDEX_CACHE_BYTES: usize = 256 << 20;

/// One repository: its writes (each a commit), reads and history.
pub struct Repository<K> {
    pub(crate) store: Arc<Store<K>>,
    pub(crate) id: String,
    pub(crate) tids: TidGenerator<ClockFn>,
    /// The clock, for how long a reader's cache check is trusted.
    pub(crate) env: super::env::Env,
    pub(crate) state: tokio::sync::Mutex<State>,
    /// Held shared by queries, exclusively while a commit or an index
    /// change is applied: a query sees one head's bitmaps.
    pub(crate) search: tokio::sync::RwLock<()>,
    pub(crate) cache: std::sync::Mutex<index::IndexCache>,
    /// The private key of [`State::keys`]' current key, once loaded.
    pub(super) signer: std::sync::Mutex<Option<Arc<SigningKey>>>,
    /// Writes waiting for the repository lock, committed together by
    /// whichever of them gets it first (group commit).
    pub(super) waiting: std::sync::Mutex<std::collections::VecDeque<Waiting>>,
    /// The Lexicons writes are validated against, replaced whole when
    /// they change.
    pub(crate) lexicons: std::sync::RwLock<Arc<lexicon::Lexicons>>,
}

/// A request's writes waiting to be committed, and where its result goes.
pub(super) struct Waiting {
    pub(super) checked: Vec<Checked>,
    pub(super) done: tokio::sync::oneshot::Sender<Result<CommitResult, Error>>,
}

impl<K> std::fmt::Debug for Repository<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repository")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// A repository's compiled Lexicons, as stored.
pub(super) async fn load_lexicons<K: Kv>(
    store: &Store<K>,
    id: &str,
    state: &State,
) -> Result<Lexicons, Error> {
    let others = store.lexicons(id).await?;
    Ok(crate::validation::compile(
        state
            .collections
            .values()
            .filter_map(|i| i.lexicon.as_ref()),
        &others,
    )
    .0)
}

impl<K: Kv> Repository<K> {
    /// The repository's identifier.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The current durable head: a commit still waiting for its flush is
    /// not shown until it can no longer be lost (a read-only replica sees
    /// new commits as they arrive). Record reads, listings and the log use
    /// the same view.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn head(&self) -> Result<HeadInfo, Error> {
        head_info(&self.store, self.store.durable_head(&self.id).await?)
            .await?
            .ok_or_else(|| Error::RepoNotFound(self.id.clone()))
    }

    /// [`Repository::head`], read and pinned in `window`
    /// ([`store::Store::pin_window`]): a long reader of its tree (an
    /// export) is not cut short by garbage collection while commits move
    /// the head on.
    pub(crate) async fn pinned_head(
        &self,
        window: &store::PinWindow<'_>,
    ) -> Result<(HeadInfo, store::PinnedCommit), Error> {
        let head = self.head().await?;
        let pin = window.pin(head.commit);
        Ok((head, pin))
    }

    /// The store this repository lives in.
    pub(crate) fn store(&self) -> &Arc<Store<K>> {
        &self.store
    }

    /// Brings `state` to the stored head when something other than this
    /// handle moved it (an import, which opens a handle of its own while
    /// callers may hold this one).
    pub(crate) async fn follow_stored_head(&self, state: &mut State) -> Result<(), Error> {
        let stored = self.store.head(&self.id).await?.map(|h| h.commit);
        if stored != Some(state.head.commit) {
            self.reload(state).await?;
        }
        Ok(())
    }

    pub(super) async fn reload(&self, state: &mut State) -> Result<(), Error> {
        // The latest head, durable or not: the next commit builds on it.
        let head = head_info(&self.store, self.store.head(&self.id).await?)
            .await?
            .ok_or_else(|| Error::RepoNotFound(self.id.clone()))?;
        *state = State::load(&self.store, &self.id, head).await?;
        // What moved the head may have brought Lexicons (an import).
        self.refresh_lexicons(state).await
    }
}
