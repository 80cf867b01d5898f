//! [`Repos`] (every repository in a store) and [`Repository`] (one of them):
//! writes as commits, reads, history.

use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
};

use bytes::Bytes;
use cid::Cid;
use pail::{Batch, Shard, ShardConfig};
use rkey::{KeyType, Nsid, RecordKey, Tid, TidGenerator};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use store::{Block, Commit, Head, Kv, RecordChange, Store};

use crate::{
    commit::CommitData, error::Error, keys::CurrentKey, keys::SigningKeys, record::Record,
    signing::SigningKey, validation::Validation, validation::ValidationStatus,
    validation::validate_write,
};
use lexicon::Lexicons;

/// The Pail `maxSize` of new repositories: the smallest power of two that
/// holds the worst unsplittable shard (see [`default_shard_config`]).
pub const DEFAULT_MAX_SHARD_SIZE: u64 = 8192;

/// The Pail `maxKeyLength` of new repositories.
pub const DEFAULT_MAX_KEY_LENGTH: u64 = 24;

/// The Pail configuration of new repositories, chosen by benchmark under a
/// safety bound (see `docs/repo.md`).
///
/// Smaller shards mean less to re-encode and re-hash per commit, but a
/// shard must never be too full to split: Pail splits an oversized shard
/// only by a prefix that two of its entries share, so a shard whose
/// entries all start with different characters cannot be split. Record
/// paths use 68 characters (letters, digits, `._:~-/`), so such a shard has
/// at most 68 entries, each at most `[key, [link, data]]` = 86 bytes plus
/// its key (at most `maxKeyLength` = 24 characters and a 2-byte header):
/// 68 × 112 + 38 bytes of map = 7,654 bytes, under 8,192. With this
/// configuration no valid record is ever refused with a shard-limit error
/// (pinned by the `no_shard_limit` test).
#[must_use]
pub fn default_shard_config() -> ShardConfig {
    ShardConfig {
        max_size: DEFAULT_MAX_SHARD_SIZE,
        max_key_length: DEFAULT_MAX_KEY_LENGTH,
    }
}

type ClockFn = Box<dyn Fn() -> u64 + Send + Sync>;

/// Where TIDs come from: a clock (microseconds since the Unix epoch) and a
/// clock id. Injected so that library code reads no ambient clock.
#[derive(Clone)]
pub struct Env {
    clock: Arc<dyn Fn() -> u64 + Send + Sync>,
    clock_id: u16,
}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Env")
            .field("clock_id", &self.clock_id)
            .finish_non_exhaustive()
    }
}

impl Env {
    /// An environment with this clock and clock id (0..=1023).
    pub fn new(clock: impl Fn() -> u64 + Send + Sync + 'static, clock_id: u16) -> Self {
        Self {
            clock: Arc::new(clock),
            clock_id,
        }
    }

    /// Microseconds since the Unix epoch, by this environment's clock.
    pub(crate) fn now_micros(&self) -> u64 {
        (self.clock)()
    }

    fn tids(&self, resume_after: Option<Tid>) -> Result<TidGenerator<ClockFn>, Error> {
        let clock = Arc::clone(&self.clock);
        let clock: ClockFn = Box::new(move || clock());
        let mut builder = TidGenerator::builder().clock(clock).clock_id(self.clock_id);
        if let Some(tid) = resume_after {
            builder = builder.resume_after(tid);
        }
        Ok(builder.build_with_random(|| 0)?)
    }
}

/// A collection's declaration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectionInfo {
    /// The record key type its records must fit.
    pub key: KeyType,
    /// Whether it was declared (`false`: first written to undeclared, so `any`).
    pub declared: bool,
    /// The Lexicon document that declared it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lexicon: Option<Value>,
}

impl CollectionInfo {
    pub(crate) fn undeclared() -> Self {
        Self {
            key: KeyType::Any,
            declared: false,
            lexicon: None,
        }
    }

    pub(crate) fn encode(&self) -> Bytes {
        Bytes::from(serde_json::to_vec(self).unwrap_or_default())
    }

    fn decode(collection: &str, bytes: &[u8]) -> Result<Self, Error> {
        serde_json::from_slice(bytes).map_err(|e| {
            Error::Store(store::Error::Malformed {
                what: "collection declaration",
                reason: format!("{collection}: {e}"),
            })
        })
    }
}

/// A repository's current head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeadInfo {
    /// The head commit's CID.
    pub commit: Cid,
    /// Its rev.
    pub rev: Tid,
    /// Its Pail root.
    pub data: Cid,
}

/// One change in [`Repository::apply_writes`].
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// Creates a record; fails with [`Error::RecordExists`] if it exists.
    /// Without an rkey, a fresh TID is used.
    Create {
        /// The collection (an NSID).
        collection: String,
        /// The record key, or `None` for a fresh TID.
        rkey: Option<String>,
        /// The record (AT Protocol JSON).
        value: Value,
    },
    /// Creates or replaces a record.
    Update {
        /// The collection (an NSID).
        collection: String,
        /// The record key.
        rkey: String,
        /// The record (AT Protocol JSON).
        value: Value,
        /// Fail with [`Error::InvalidSwap`] unless the record's current CID is this.
        swap_record: Option<Cid>,
    },
    /// Deletes a record; fails with [`Error::RecordNotFound`] if absent.
    Delete {
        /// The collection (an NSID).
        collection: String,
        /// The record key.
        rkey: String,
        /// Fail with [`Error::InvalidSwap`] unless the record's current CID is this.
        swap_record: Option<Cid>,
    },
}

impl Write {
    /// `$type` of an applyWrites create.
    pub const CREATE_TYPE: &'static str = "com.atproto.repo.applyWrites#create";
    /// `$type` of an applyWrites update.
    pub const UPDATE_TYPE: &'static str = "com.atproto.repo.applyWrites#update";
    /// `$type` of an applyWrites delete.
    pub const DELETE_TYPE: &'static str = "com.atproto.repo.applyWrites#delete";

    /// One write of `com.atproto.repo.applyWrites` (`{"$type", "collection",
    /// "rkey"?, "value"?}`).
    ///
    /// # Errors
    ///
    /// A message naming what is missing or wrong.
    pub fn from_apply_writes(w: Value) -> Result<Self, String> {
        #[derive(serde::Deserialize)]
        struct Fields {
            #[serde(rename = "$type")]
            kind: String,
            collection: String,
            rkey: Option<String>,
            value: Option<Value>,
        }
        let f: Fields = serde_json::from_value(w).map_err(|e| e.to_string())?;
        let rkey = |rkey: Option<String>| rkey.ok_or("rkey is required");
        let value = |value: Option<Value>| value.ok_or("value is required");
        Ok(match f.kind.as_str() {
            Self::CREATE_TYPE => Self::Create {
                collection: f.collection,
                rkey: f.rkey,
                value: value(f.value)?,
            },
            Self::UPDATE_TYPE => Self::Update {
                collection: f.collection,
                rkey: rkey(f.rkey)?,
                value: value(f.value)?,
                swap_record: None,
            },
            Self::DELETE_TYPE => Self::Delete {
                collection: f.collection,
                rkey: rkey(f.rkey)?,
                swap_record: None,
            },
            other => {
                return Err(format!(
                    "unknown $type {other:?} (expected {}, {} or {})",
                    Self::CREATE_TYPE,
                    Self::UPDATE_TYPE,
                    Self::DELETE_TYPE
                ));
            }
        })
    }

    /// The value a create or update writes.
    pub fn value(&self) -> Option<&Value> {
        match self {
            Self::Create { value, .. } | Self::Update { value, .. } => Some(value),
            Self::Delete { .. } => None,
        }
    }
}

/// What one write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteResult {
    /// The collection.
    pub collection: String,
    /// The record key (the generated TID for a create without one).
    pub rkey: String,
    /// The record's new CID (`None` for a delete).
    pub cid: Option<Cid>,
    /// Whether the record was validated against a Lexicon (`None` for a
    /// delete).
    pub validation: Option<crate::validation::ValidationStatus>,
}

impl WriteResult {
    /// This result as `com.atproto.repo.applyWrites` answers it, for a
    /// write to `repo` that was a create (`create`) or an update; a delete's
    /// is its `$type` alone.
    #[must_use]
    pub fn apply_writes_json(&self, repo: &str, create: bool) -> Value {
        let Some(cid) = self.cid else {
            return serde_json::json!({"$type": "com.atproto.repo.applyWrites#deleteResult"});
        };
        serde_json::json!({
            "$type": if create {
                "com.atproto.repo.applyWrites#createResult"
            } else {
                "com.atproto.repo.applyWrites#updateResult"
            },
            "uri": record_uri(repo, &self.collection, &self.rkey),
            "cid": cid.to_string(),
            "validationStatus": self.validation.map_or("unknown", crate::validation::ValidationStatus::as_str),
        })
    }
}

/// The commit made by a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitResult {
    /// The new commit's CID.
    pub commit: Cid,
    /// Its rev.
    pub rev: Tid,
    /// One result per write, in order.
    pub results: Vec<WriteResult>,
    /// The sequence number of the commit's firehose event.
    pub seq: Option<u64>,
    /// Whether this request is the first of those its commit answers
    /// (group commit): counting the results where it is true counts
    /// commits.
    pub first_in_commit: bool,
}

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

/// The AT URI of a record.
pub fn record_uri(repo: &str, collection: &str, rkey: &str) -> String {
    format!("at://{repo}/{collection}/{rkey}")
}

/// Checks that `collection/rkey` can name a record at all, so a read of a
/// malformed name is an error rather than "not found".
pub(crate) fn check_path(collection: &str, rkey: &str) -> Result<(), Error> {
    rkey::validate_nsid(collection)?;
    rkey::validate_record_key(rkey)?;
    Ok(())
}

/// The Pail key of a record.
pub(crate) fn pail_key(collection: &str, rkey: &str) -> String {
    let mut key = String::with_capacity(collection.len() + 1 + rkey.len());
    key.push_str(collection);
    key.push('/');
    key.push_str(rkey);
    key
}

/// How far past the local clock a commit's rev may be: an imported commit
/// further ahead would make every later commit here either wait for the
/// clock or run past what a TID can hold.
pub const MAX_REV_AHEAD: std::time::Duration = std::time::Duration::from_secs(300);

/// Why `rev` cannot be a repository's head, if it cannot: a rev no
/// conforming generator makes (the top bit set, first character `c`–`j`),
/// or one more than [`MAX_REV_AHEAD`] ahead of `now_micros`.
pub(crate) fn unusable_rev(rev: Tid, now_micros: u64) -> Option<String> {
    let value = rev.as_u64();
    if value >> 63 == 1 {
        return Some(format!(
            "rev {rev} has the top bit set, which no TID generator makes \
             (later commits could not have higher revs)"
        ));
    }
    let micros = value >> 10;
    let limit = now_micros.saturating_add(MAX_REV_AHEAD.as_micros() as u64);
    (micros > limit).then(|| {
        format!(
            "rev {rev} is {} s ahead of this machine's clock (at most {} s allowed; \
             later commits could not have higher revs)",
            (micros - now_micros) / 1_000_000,
            MAX_REV_AHEAD.as_secs()
        )
    })
}

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

    /// The store.
    pub fn store(&self) -> &Arc<Store<K>> {
        &self.store
    }

    /// The clock and clock id this store's repositories use.
    pub(crate) fn env(&self) -> &Env {
        &self.env
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
        let event = commit_event(&commit, commit_cid, None, vec![empty.cid()], Vec::new());
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
        let state = State::load(&self.store, id, head).await?;
        let repo = Arc::new(Repository {
            store: Arc::clone(&self.store),
            id: id.to_owned(),
            tids,
            lexicons: std::sync::RwLock::new(Arc::new(
                load_lexicons(&self.store, id, &state).await?,
            )),
            state: tokio::sync::Mutex::new(state),
            search: tokio::sync::RwLock::new(()),
            cache: std::sync::Mutex::new(index::IndexCache::new(DEFAULT_INDEX_CACHE_BYTES)),
            signer: std::sync::Mutex::new(signer.map(|(key, _)| key)),
            waiting: std::sync::Mutex::new(std::collections::VecDeque::new()),
        });
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
        let state = State::load(&self.store, id, head).await?;
        let repo = Arc::new(Repository {
            store: Arc::clone(&self.store),
            id: id.to_owned(),
            tids,
            lexicons: std::sync::RwLock::new(Arc::new(
                load_lexicons(&self.store, id, &state).await?,
            )),
            state: tokio::sync::Mutex::new(state),
            search: tokio::sync::RwLock::new(()),
            cache: std::sync::Mutex::new(index::IndexCache::new(DEFAULT_INDEX_CACHE_BYTES)),
            signer: std::sync::Mutex::new(None),
            waiting: std::sync::Mutex::new(std::collections::VecDeque::new()),
        });
        open.insert(id.to_owned(), Arc::clone(&repo));
        Ok(repo)
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

/// A stored head with its commit's rev and Pail root.
async fn head_info<K: Kv>(store: &Store<K>, head: Option<Head>) -> Result<Option<HeadInfo>, Error> {
    let Some(head) = head else {
        return Ok(None);
    };
    let commit = load_commit(store, head.commit).await?;
    Ok(Some(HeadInfo {
        commit: head.commit,
        rev: commit.rev,
        data: commit.data,
    }))
}

/// The stored firehose event of `commit` (CID `cid`), made on `previous`
/// (the head it follows), adding `shards`.
fn commit_event(
    commit: &CommitData,
    cid: Cid,
    previous: Option<&HeadInfo>,
    shards: Vec<Cid>,
    ops: Vec<crate::event::RepoOp>,
) -> Bytes {
    crate::event::StoredEvent {
        repo: commit.repo.clone(),
        commit: cid,
        rev: commit.rev.to_string(),
        since: previous.map(|h| h.rev.to_string()),
        ops,
        time: commit.time(),
        prev_data: previous.map(|h| h.data),
        shards,
    }
    .encode()
}

/// Reads and decodes a commit block.
pub(crate) async fn load_commit<K: Kv>(store: &Store<K>, cid: Cid) -> Result<CommitData, Error> {
    let block = store
        .get_block(&cid)
        .await?
        .ok_or(Error::MissingBlock(cid))?;
    CommitData::decode(cid, block.bytes())
}

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
}

impl State {
    async fn load<K: Kv>(store: &Store<K>, id: &str, head: HeadInfo) -> Result<Self, Error> {
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
        })
    }
}

/// Bytes of decoded bitmaps a repository keeps for its queries.
pub const DEFAULT_INDEX_CACHE_BYTES: usize = 256 << 20;

/// One repository: its writes (each a commit), reads and history.
pub struct Repository<K> {
    pub(crate) store: Arc<Store<K>>,
    pub(crate) id: String,
    tids: TidGenerator<ClockFn>,
    pub(crate) state: tokio::sync::Mutex<State>,
    /// Held shared by queries, exclusively while a commit or an index
    /// change is applied: a query sees one head's bitmaps.
    pub(crate) search: tokio::sync::RwLock<()>,
    pub(crate) cache: std::sync::Mutex<index::IndexCache>,
    /// The private key of [`State::keys`]' current key, once loaded.
    signer: std::sync::Mutex<Option<Arc<SigningKey>>>,
    /// Writes waiting for the repository lock, committed together by
    /// whichever of them gets it first (group commit).
    waiting: std::sync::Mutex<std::collections::VecDeque<Waiting>>,
    /// The Lexicons writes are validated against, replaced whole when
    /// they change.
    pub(crate) lexicons: std::sync::RwLock<Arc<lexicon::Lexicons>>,
}

/// Writes per group commit, at most (a single request may have more).
const GROUP_WRITES: usize = 200;

/// A request's writes waiting to be committed, and where its result goes.
struct Waiting {
    checked: Vec<Checked>,
    done: tokio::sync::oneshot::Sender<Result<CommitResult, Error>>,
}

/// A request's outcome, to be sent once its commit is durable.
type Delivery = (
    tokio::sync::oneshot::Sender<Result<CommitResult, Error>>,
    Result<CommitResult, Error>,
);

/// An error for each of the other requests of a group commit whose
/// durability failed: the same kind where the kind matters to callers.
fn for_another_request(e: &Error) -> Error {
    use store::Error as S;
    Error::Store(match e {
        Error::Store(S::DurabilityTimeout(after)) => S::DurabilityTimeout(*after),
        Error::Store(S::DurabilityBlocked {
            after,
            location,
            source,
        }) => S::DurabilityBlocked {
            after: *after,
            location: location.clone(),
            source: std::io::Error::new(source.kind(), source.to_string()),
        },
        Error::Store(S::Fenced) => S::Fenced,
        Error::Store(S::ReadOnly) => S::ReadOnly,
        other => S::Unavailable(other.to_string().into()),
    })
}

impl<K> std::fmt::Debug for Repository<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repository")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// A write after validation, before it meets the repository's state.
enum Checked {
    Put {
        collection: Nsid,
        rkey: Option<RecordKey>,
        record: Record,
        create: bool,
        swap: Option<Cid>,
        validation: ValidationStatus,
        /// How it was validated: the commit validates it again when the
        /// repository's Lexicons changed since (`Repository::try_apply`).
        mode: Validation,
        against: Arc<Lexicons>,
    },
    Delete {
        collection: Nsid,
        rkey: RecordKey,
        swap: Option<Cid>,
    },
}

fn check(write: Write, lexicons: &Arc<Lexicons>, mode: Validation) -> Result<Checked, Error> {
    Ok(match write {
        Write::Create {
            collection,
            rkey,
            value,
        } => {
            let collection = Nsid::new(collection)?;
            let rkey = rkey.map(RecordKey::new).transpose()?;
            let record = Record::from_json_ref(collection.as_str(), &value)?;
            Checked::Put {
                validation: validate_write(lexicons, mode, collection.as_str(), &value)?,
                rkey,
                record,
                collection,
                create: true,
                swap: None,
                mode,
                against: Arc::clone(lexicons),
            }
        }
        Write::Update {
            collection,
            rkey,
            value,
            swap_record,
        } => {
            let collection = Nsid::new(collection)?;
            let rkey = RecordKey::new(rkey)?;
            let record = Record::from_json_ref(collection.as_str(), &value)?;
            Checked::Put {
                validation: validate_write(lexicons, mode, collection.as_str(), &value)?,
                rkey: Some(rkey),
                record,
                collection,
                create: false,
                swap: swap_record,
                mode,
                against: Arc::clone(lexicons),
            }
        }
        Write::Delete {
            collection,
            rkey,
            swap_record,
        } => Checked::Delete {
            collection: Nsid::new(collection)?,
            rkey: RecordKey::new(rkey)?,
            swap: swap_record,
        },
    })
}

fn describe(cid: Option<Cid>) -> String {
    cid.map_or_else(|| "absent".to_owned(), |c| c.to_string())
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

    /// Applies `writes` as one commit, all or nothing.
    ///
    /// With `swap_commit`, fails with [`Error::InvalidSwap`] unless the head
    /// is that commit. Without, the writes may share a commit with other
    /// requests waiting at the same time (group commit; see `docs/repo.md`),
    /// and this call may commit theirs: run it to completion (in a task of
    /// its own where a caller could go away), or the others it carries are
    /// told their group was abandoned.
    ///
    /// # Errors
    ///
    /// Invalid input ([`Error::Syntax`], [`Error::InvalidRecord`]), a failed
    /// precondition ([`Error::RecordExists`], [`Error::RecordNotFound`],
    /// [`Error::InvalidSwap`]) or a storage error. Nothing is written unless
    /// the whole commit is.
    pub async fn apply_writes(
        &self,
        writes: Vec<Write>,
        swap_commit: Option<Cid>,
    ) -> Result<CommitResult, Error> {
        self.apply_writes_validated(writes, swap_commit, Validation::Auto)
            .await
    }

    /// [`Repository::apply_writes`], validating each record written as
    /// `validation` says (see [`Validation`]); each result says whether
    /// its record was validated.
    ///
    /// # Errors
    ///
    /// As [`Repository::apply_writes`], and [`Error::LexiconValidation`]
    /// for a record that breaks its Lexicon (or, with
    /// [`Validation::Require`], has none). Nothing is written then.
    pub async fn apply_writes_validated(
        &self,
        writes: Vec<Write>,
        swap_commit: Option<Cid>,
        validation: Validation,
    ) -> Result<CommitResult, Error> {
        let lexicons = self.lexicons();
        // On this thread: spreading a batch's checks over threads measured
        // slower (docs/benchmarks.md).
        let checked = writes
            .into_iter()
            .map(|w| check(w, &lexicons, validation))
            .collect::<Result<Vec<_>, _>>()?;
        if swap_commit.is_some() || checked.len() >= GROUP_WRITES {
            let mut state = self.state.lock().await;
            let (pending, result) = self
                .apply_retrying(&mut state, &checked, swap_commit)
                .await?;
            drop(state);
            pending.durable().await?;
            return Ok(result);
        }
        // Group commit: requests that wait for the lock are committed
        // together by the first of them to get it, one commit for all
        // (one tree rewrite, one signature, one event).
        let (done, mut result) = tokio::sync::oneshot::channel();
        self.waiting_queue().push_back(Waiting { checked, done });
        loop {
            let mut state = self.state.lock().await;
            match result.try_recv() {
                Ok(result) => return result,
                Err(tokio::sync::oneshot::error::TryRecvError::Closed) => {
                    return Err(Error::Io(std::io::Error::other(
                        "a group commit was abandoned",
                    )));
                }
                Err(tokio::sync::oneshot::error::TryRecvError::Empty) => {}
            }
            let group = self.take_group();
            if group.is_empty() {
                // Taken by a request that is making it durable.
                drop(state);
                return result.await.unwrap_or_else(|_| {
                    Err(Error::Io(std::io::Error::other(
                        "a group commit was abandoned",
                    )))
                });
            }
            let outcomes = self.commit_group(&mut state, group).await;
            drop(state);
            for (pending, deliveries) in outcomes {
                let durable = match pending {
                    Some(p) => p.durable().await.map_err(Error::from),
                    None => Ok(()),
                };
                for (done, outcome) in deliveries {
                    let outcome = match (&durable, outcome) {
                        (Ok(()), outcome) => outcome,
                        (Err(e), Ok(_)) => Err(for_another_request(e)),
                        (Err(_), Err(e)) => Err(e),
                    };
                    // A request that went away no longer waits.
                    let _ = done.send(outcome);
                }
            }
        }
    }

    fn waiting_queue(&self) -> std::sync::MutexGuard<'_, std::collections::VecDeque<Waiting>> {
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The waiting requests at the front, up to [`GROUP_WRITES`] writes
    /// (at least one request).
    fn take_group(&self) -> Vec<Waiting> {
        let mut queue = self.waiting_queue();
        let mut group = Vec::new();
        let mut writes = 0;
        while let Some(next) = queue.front() {
            if !group.is_empty() && writes + next.checked.len() > GROUP_WRITES {
                break;
            }
            writes += next.checked.len();
            group.extend(queue.pop_front());
        }
        group
    }

    /// Commits `group`'s requests as one commit, or, when one of them
    /// fails, each on its own (so that a failed request fails alone). Each
    /// commit made comes with the requests it answers.
    async fn commit_group(
        &self,
        state: &mut State,
        group: Vec<Waiting>,
    ) -> Vec<(Option<store::PendingCommit>, Vec<Delivery>)> {
        let sizes: Vec<usize> = group.iter().map(|w| w.checked.len()).collect();
        let (checked, senders): (Vec<Vec<Checked>>, Vec<_>) =
            group.into_iter().map(|w| (w.checked, w.done)).unzip();
        let merged: Vec<Checked> = checked.into_iter().flatten().collect();
        if senders.len() > 1
            && let Ok((pending, result)) = self.apply_retrying(state, &merged, None).await
        {
            let mut results = result.results.into_iter();
            let deliveries = senders
                .into_iter()
                .zip(&sizes)
                .enumerate()
                .map(|(i, (done, &n))| {
                    let mine = CommitResult {
                        commit: result.commit,
                        rev: result.rev,
                        results: results.by_ref().take(n).collect(),
                        seq: result.seq,
                        first_in_commit: i == 0,
                    };
                    (done, Ok(mine))
                })
                .collect();
            return vec![(Some(pending), deliveries)];
        }
        // One request, or a group one of whose writes failed: one at a
        // time, each request's own outcome.
        let mut outcomes = Vec::with_capacity(senders.len());
        let mut start = 0;
        for (done, n) in senders.into_iter().zip(sizes) {
            let mine = &merged[start..start + n];
            start += n;
            outcomes.push(match self.apply_retrying(state, mine, None).await {
                Ok((pending, result)) => (Some(pending), vec![(done, Ok(result))]),
                Err(e) => (None, vec![(done, Err(e))]),
            });
        }
        outcomes
    }

    /// [`Repository::try_apply`], again on the stored head when the head
    /// moved under it (another process, or a cancelled write that landed).
    async fn apply_retrying(
        &self,
        state: &mut State,
        checked: &[Checked],
        swap_commit: Option<Cid>,
    ) -> Result<(store::PendingCommit, CommitResult), Error> {
        let mut attempts = 0;
        loop {
            match self.try_apply(state, checked, swap_commit).await {
                Err(Error::Store(store::Error::Conflict(_))) if attempts < 2 => {
                    attempts += 1;
                    self.reload(state).await?;
                }
                other => return other,
            }
        }
    }

    /// The private key that signs the next commit under `keys`, loaded
    /// from its file on first use; `None` when commits are unsigned.
    fn signer(&self, keys: &SigningKeys) -> Result<Option<Arc<SigningKey>>, Error> {
        let Some(current) = &keys.current else {
            return match keys.known.last() {
                // A signed history (imported, say) goes on signed or not at all.
                Some(key) => Err(Error::SigningKey {
                    repo: self.id.clone(),
                    key: key.did_key(),
                    reason: "this store has no private key to sign its next commit with".into(),
                }),
                None => Ok(None),
            };
        };
        let mut signer = self
            .signer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(key) = signer.as_ref()
            && key.public_key() == &current.key
        {
            return Ok(Some(Arc::clone(key)));
        }
        let refused = |reason: String| Error::SigningKey {
            repo: self.id.clone(),
            key: current.key.did_key(),
            reason,
        };
        let key = SigningKey::read_file(&current.file)
            .map_err(|e| refused(format!("its key file cannot be used: {e}")))?;
        if key.public_key() != &current.key {
            return Err(refused(format!(
                "its key file {} holds another key ({})",
                current.file.display(),
                key.public_key()
            )));
        }
        let key = Arc::new(key);
        *signer = Some(Arc::clone(&key));
        Ok(Some(key))
    }

    /// The repository's signing keys, as stored now.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn signing_keys(&self) -> Result<SigningKeys, Error> {
        SigningKeys::load(&self.store, &self.id).await
    }

    /// Signs the next commits with `key`, kept in `file` (rotation, or the
    /// start of signing for a repository that had none). The previous key
    /// stays known, so the history it signed still verifies.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn set_signing_key(
        &self,
        key: Arc<SigningKey>,
        file: std::path::PathBuf,
    ) -> Result<SigningKeys, Error> {
        let mut state = self.state.lock().await;
        let mut keys = SigningKeys::load(&self.store, &self.id).await?;
        keys.current = Some(CurrentKey {
            key: *key.public_key(),
            file,
        });
        keys.trust(*key.public_key());
        keys.save(&self.store, &self.id).await?;
        *self
            .signer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(key);
        state.keys = keys.clone();
        Ok(keys)
    }

    /// Adds public keys to those trusted to have signed the history.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn trust_keys(
        &self,
        trusted: &[crate::signing::PublicKey],
    ) -> Result<SigningKeys, Error> {
        let mut state = self.state.lock().await;
        let mut keys = SigningKeys::load(&self.store, &self.id).await?;
        for key in trusted {
            keys.trust(*key);
        }
        keys.save(&self.store, &self.id).await?;
        state.keys = keys.clone();
        Ok(keys)
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

    async fn reload(&self, state: &mut State) -> Result<(), Error> {
        // The latest head, durable or not: the next commit builds on it.
        let head = head_info(&self.store, self.store.head(&self.id).await?)
            .await?
            .ok_or_else(|| Error::RepoNotFound(self.id.clone()))?;
        *state = State::load(&self.store, &self.id, head).await?;
        // What moved the head may have brought Lexicons (an import).
        self.refresh_lexicons(state).await
    }

    /// Builds and stages one commit of `checked` on `state`'s head.
    async fn try_apply(
        &self,
        state: &mut State,
        checked: &[Checked],
        swap_commit: Option<Cid>,
    ) -> Result<(store::PendingCommit, CommitResult), Error> {
        if let Some(expected) = swap_commit
            && expected != state.head.commit
        {
            return Err(Error::InvalidSwap {
                what: "the head commit".into(),
                expected: expected.to_string(),
                actual: state.head.commit.to_string(),
            });
        }
        let mut batch = Batch::new(&*self.store, state.head.data).await?;
        let mut results = Vec::with_capacity(checked.len());
        let mut index = Vec::with_capacity(checked.len());
        let mut new_collections: Vec<(String, Bytes)> = Vec::new();
        let mut added_collections: HashMap<String, CollectionInfo> = HashMap::new();
        let mut commit_index = index::CommitIndex::default();
        let mut ops = Vec::with_capacity(checked.len());
        // Records written earlier in this commit, for the index changes of
        // later writes to the same path.
        let mut written: HashMap<String, Option<Value>> = HashMap::new();
        // How each collection's record count changes.
        let mut count_changes: BTreeMap<String, i64> = BTreeMap::new();
        let lexicons = self.lexicons();
        for write in checked {
            let (collection, rkey, new, swap, create, validation) = match write {
                Checked::Put {
                    collection,
                    rkey,
                    record,
                    create,
                    swap,
                    validation,
                    mode,
                    against,
                } => {
                    // Lexicons added (here or by an import) between the
                    // check and this commit apply to it.
                    let validation = if Arc::ptr_eq(against, &lexicons) {
                        *validation
                    } else {
                        validate_write(&lexicons, *mode, collection.as_str(), &record.to_json())?
                    };
                    let rkey = match rkey {
                        Some(k) => std::borrow::Cow::Borrowed(k),
                        None => std::borrow::Cow::Owned(RecordKey::new(
                            self.tids.next_tid()?.to_string(),
                        )?),
                    };
                    (
                        collection,
                        rkey,
                        Some(record),
                        *swap,
                        *create,
                        Some(validation),
                    )
                }
                Checked::Delete {
                    collection,
                    rkey,
                    swap,
                } => (
                    collection,
                    std::borrow::Cow::Borrowed(rkey),
                    None,
                    *swap,
                    false,
                    None,
                ),
            };
            let new_cid = new.map(Record::cid);
            let info = match state.collections.get(collection.as_str()) {
                Some(info) => info,
                None => added_collections
                    .entry(collection.as_str().to_owned())
                    .or_insert_with(|| {
                        let info = CollectionInfo::undeclared();
                        new_collections.push((collection.as_str().to_owned(), info.encode()));
                        info
                    }),
            };
            // Deletes too: a key the type rules out is named as such
            // (no record can have it), not reported missing.
            info.key.check(&rkey)?;
            let path = pail_key(collection.as_str(), rkey.as_str());
            // The Pail is the record map: its previous value is the record's
            // current CID, as of the writes before this one in the commit.
            // Any error below abandons the whole batch.
            let old = match new_cid {
                Some(cid) => batch.put(&path, cid).await?,
                None => batch.del(&path).await?,
            };
            let uri = || record_uri(&self.id, collection.as_str(), rkey.as_str());
            if create && old.is_some() {
                return Err(Error::RecordExists(uri()));
            }
            if new_cid.is_none() && old.is_none() {
                return Err(Error::RecordNotFound(uri()));
            }
            if let Some(expected) = swap
                && Some(expected) != old
            {
                return Err(Error::InvalidSwap {
                    what: uri(),
                    expected: expected.to_string(),
                    actual: describe(old),
                });
            }
            let count_change = match (new_cid, old) {
                (Some(_), None) => 1,
                (None, Some(_)) => -1,
                _ => 0,
            };
            *count_changes
                .entry(collection.as_str().to_owned())
                .or_default() += count_change;
            ops.push(crate::event::RepoOp {
                action: match (new_cid, old) {
                    (Some(_), None) => "create",
                    (Some(_), Some(_)) => "update",
                    (None, _) => "delete",
                }
                .to_owned(),
                path: path.clone(),
                cid: new_cid,
                prev: old,
            });
            if let Some(declared) = state.indexes.get(collection.as_str())
                && !declared.is_empty()
            {
                let before = match (written.get(&path), old) {
                    (Some(v), _) => v.clone(),
                    (None, Some(cid)) => Some(self.load_record(cid).await?.to_json()),
                    (None, None) => None,
                };
                let after = new.map(Record::to_json);
                commit_index
                    .record(
                        self.store.kv(),
                        &state.counters,
                        &state.known_rows,
                        declared,
                        rkey.as_str(),
                        before.as_ref(),
                        after.as_ref(),
                    )
                    .await?;
                written.insert(path.clone(), after);
            }
            index.push(RecordChange {
                collection: collection.as_str().to_owned(),
                rkey: rkey.as_str().to_owned(),
                record: new.map(|r| r.block().clone()),
            });
            results.push(WriteResult {
                collection: collection.as_str().to_owned(),
                rkey: rkey.into_owned().into_string(),
                cid: new_cid,
                validation,
            });
        }
        let mutation = batch.commit();
        let mut commit = CommitData::new(
            self.id.clone(),
            self.tids.next_tid()?,
            mutation.root,
            Some(state.head.commit),
        );
        if let Some(key) = self.signer(&state.keys)? {
            commit = commit.signed(&key);
        }
        let commit_block = commit.encode();
        let commit_cid = commit_block.cid();
        let event = commit_event(
            &commit,
            commit_cid,
            Some(&state.head),
            mutation.additions.iter().map(|s| s.cid()).collect(),
            ops,
        );
        // The records' blocks come with their index changes.
        let mut blocks: Vec<Block> = Vec::with_capacity(mutation.additions.len() + 1);
        blocks.extend(mutation.additions.iter().map(Block::from_shard));
        blocks.push(commit_block);
        let index::IndexWrite {
            ops: mut index_ops,
            deltas: row_deltas,
            counters,
            rows,
        } = commit_index.into_write()?;
        let rev = commit.rev.as_u64();
        // Each write's record and what it left there, for its history.
        for change in &index {
            index_ops.push(crate::history::entry_op(
                &self.id,
                &change.collection,
                &change.rkey,
                rev,
                commit_cid,
                change.record.as_ref().map(Block::cid),
            ));
        }
        if state.history_start.is_none() {
            index_ops.push(crate::history::start_at(&self.id, rev));
        }
        for (collection, change) in count_changes {
            if change != 0 {
                let before = self
                    .store
                    .written_record_count(&self.id, &collection)
                    .await?;
                index_ops.push(store::record_count_change(
                    &self.id,
                    &collection,
                    before,
                    change,
                )?);
            }
        }
        // Queries wait while the commit lands and the cached bitmaps follow.
        let search = self.search.write().await;
        let pending = self
            .store
            .stage_commit(Commit {
                repo: self.id.clone(),
                expected: Some(state.head.commit),
                head: Head {
                    commit: commit_cid,
                    rev: commit.rev.as_u64(),
                },
                blocks,
                records: index,
                collections: new_collections,
                index: index_ops,
                history: store::LogChange::default(),
                event: Some(event),
            })
            .await?;
        let seq = pending.seq();
        {
            let mut cache = self
                .cache
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            for (scope, deltas) in &row_deltas {
                cache.apply(*scope, deltas);
            }
            cache.set_head(commit_cid);
        }
        drop(search);
        state.counters.extend(counters);
        state.history_start.get_or_insert(rev);
        if state.known_rows.len() + rows.len() > index::KNOWN_ROWS_LIMIT {
            state.known_rows.clear();
        }
        state.known_rows.extend(rows);
        self.store.forget_shards(&mutation.removals);
        state.head = HeadInfo {
            commit: commit_cid,
            rev: commit.rev,
            data: commit.data,
        };
        state.collections.extend(added_collections);
        Ok((
            pending,
            CommitResult {
                commit: commit_cid,
                rev: commit.rev,
                results,
                seq,
                first_in_commit: true,
            },
        ))
    }

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

    /// The store this repository lives in.
    pub(crate) fn store(&self) -> &Arc<Store<K>> {
        &self.store
    }
}

/// The collection NSID and key type a Lexicon record document declares.
fn parse_lexicon(doc: &Value) -> Result<(String, KeyType), Error> {
    let bad = |reason: &str| Error::InvalidLexicon(reason.to_owned());
    if doc.get("lexicon").and_then(Value::as_u64) != Some(1) {
        return Err(bad("\"lexicon\" must be 1"));
    }
    let id = doc
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("\"id\" (the NSID) is missing"))?;
    Nsid::new(id).map_err(|e| Error::InvalidLexicon(format!("\"id\": {e}")))?;
    let main = doc
        .pointer("/defs/main")
        .ok_or_else(|| bad("\"defs.main\" is missing"))?;
    if main.get("type").and_then(Value::as_str) != Some("record") {
        return Err(bad(
            "\"defs.main.type\" must be \"record\" (only record lexicons declare collections)",
        ));
    }
    let key = main
        .get("key")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("\"defs.main.key\" (the record key type) is missing"))?;
    let key: KeyType = key
        .parse()
        .map_err(|e| Error::InvalidLexicon(format!("\"defs.main.key\": {e}")))?;
    Ok((id.to_owned(), key))
}

/// A repository's compiled Lexicons, as stored.
async fn load_lexicons<K: Kv>(
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
