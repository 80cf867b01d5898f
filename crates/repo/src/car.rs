//! CAR v1 export and import of repositories.
//!
//! Export streams the head commit, then the Pail in pre-order: each shard,
//! then for each of its entries in key order the entry's record and then
//! the shard it links to. Each block is written once. Only the path from
//! the root to the current shard is held in memory (plus the set of CIDs
//! already written).
//!
//! Import reads every block, checks each against its CID, decodes the
//! commit, walks the whole Pail and checks every record before anything is
//! written; then the blocks, head, commit-log entry and record index go in
//! one atomic commit.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use cid::Cid;
use foldhash::{HashMap, HashMapExt, HashSet};
use pail::{EntriesOptions, Shard, ShardFetcher};
use rkey::{Nsid, RecordKey, Tid};
use store::{Block, Commit, Head, Kv, RecordChange, Store};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::{
    CommitData, Error, Record, Repos, Repository,
    declarations::{
        DECLARATIONS_TYPE, Declarations, DeclaredCollection, DeclaredIndex, DeclaredKeys,
    },
    record::is_supported,
    repository::{CollectionInfo, load_commit},
};

/// What an export wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportReport {
    /// The root: the head commit exported.
    pub commit: Cid,
    /// Its rev.
    pub rev: Tid,
    /// Blocks written.
    pub blocks: u64,
    /// Bytes of block data written (without CAR framing).
    pub bytes: u64,
}

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportReport {
    /// The repository imported.
    pub repo: String,
    /// Its new head commit.
    pub commit: Cid,
    /// The head's rev.
    pub rev: Tid,
    /// Records in the imported state.
    pub records: u64,
    /// Blocks stored.
    pub blocks: u64,
    /// Blocks in the file that no imported commit reaches (not stored).
    pub unreachable: u64,
    /// Commits entered in the log: the head and the file's older commits
    /// that lead to it (a history export's, an `export --since`'s).
    pub commits: u64,
    /// Whether the file carried declarations (a history export or a
    /// backup increment), which the repository now has: collections, key
    /// types, Lexicons, field indexes and public signing keys as of the
    /// file's head.
    pub declarations: bool,
    /// Commits whose signatures were verified (0 when the repository has
    /// no known key and none was given, or with `trust_new_key`).
    pub verified: u64,
    /// Whether the file's head commit is signed.
    pub signed: bool,
    /// Whether the repository's next commit must be signed (it has known
    /// keys) but this store holds no private key for it: writes are
    /// refused until one is given ([`Repository::set_signing_key`]).
    pub signing_key_missing: bool,
}

/// How an import treats the file.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// The repository the file must hold, if any.
    pub repo: Option<String>,
    /// Public keys the file's commits may be signed with, besides those
    /// the store knows for the repository; recorded as known once the
    /// import succeeds.
    pub keys: Vec<crate::PublicKey>,
    /// Imports commits that are unsigned or signed by a key nobody gave
    /// (the repository's key changed elsewhere) instead of refusing them,
    /// and trusts the keys the file declares.
    pub trust_new_key: bool,
    /// The private key (and its file) that signs the repository's next
    /// commits once the import succeeds; its public key is trusted for
    /// the file's commits too.
    pub signing_key: Option<(Arc<crate::SigningKey>, std::path::PathBuf)>,
}

/// How far an import is, after the file has been read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportProgress {
    /// The file is read and its blocks verified; the commit's tree and
    /// records are being checked.
    Checking,
    /// Writing the repository's blocks: `written` of `total`.
    Writing {
        /// Blocks written so far.
        written: usize,
        /// Blocks to write.
        total: usize,
    },
    /// The blocks are stored; the repository's state is being committed.
    Committing,
    /// The repository's field indexes are being rebuilt: `records` read.
    Indexing {
        /// Records indexed so far.
        records: u64,
    },
}

pub(crate) fn car_err(e: impl std::fmt::Display) -> Error {
    Error::InvalidCar(e.to_string())
}

struct Writer<W> {
    car: iroh_car::CarWriter<W>,
    /// Blocks written.
    seen: SeenCids,
    blocks: u64,
    bytes: u64,
}

/// A set of CIDs, kept small: a CIDv1 with a SHA-256 digest (every block
/// datarepo writes) as its codec and digest, 40 bytes instead of a 96-byte
/// `Cid`, anything else whole. This file's sets and maps use foldhash:
/// randomly seeded, and several times cheaper than SipHash on CIDs.
#[derive(Default)]
struct SeenCids {
    sha256: HashSet<(u64, [u8; 32])>,
    other: HashSet<Cid>,
}

impl SeenCids {
    fn compact(cid: &Cid) -> Option<(u64, [u8; 32])> {
        if cid.version() != cid::Version::V1 || !is_supported(cid) {
            return None;
        }
        Some((cid.codec(), cid.hash().digest().try_into().ok()?))
    }

    /// Adds `cid`; `false` if it was there.
    fn insert(&mut self, cid: Cid) -> bool {
        match Self::compact(&cid) {
            Some(key) => self.sha256.insert(key),
            None => self.other.insert(cid),
        }
    }

    fn contains(&self, cid: &Cid) -> bool {
        match Self::compact(cid) {
            Some(key) => self.sha256.contains(&key),
            None => self.other.contains(cid),
        }
    }
}

impl<W: AsyncWrite + Unpin + Send> Writer<W> {
    /// A CAR whose root is `commit`, with the commit block written first.
    async fn start<K: Kv>(out: W, store: &Store<K>, commit: Cid) -> Result<Self, Error> {
        let mut w = Self {
            car: iroh_car::CarWriter::new(iroh_car::CarHeader::new_v1(vec![commit]), out),
            seen: SeenCids::default(),
            blocks: 0,
            bytes: 0,
        };
        w.copy(store, commit).await?;
        Ok(w)
    }

    /// Writes a stored block (checked against its CID) once.
    async fn copy<K: Kv>(&mut self, store: &Store<K>, cid: Cid) -> Result<(), Error> {
        if self.seen.contains(&cid) {
            return Ok(());
        }
        let block = store
            .get_block(&cid)
            .await?
            .ok_or(Error::MissingBlock(cid))?;
        self.block(cid, block.bytes()).await
    }

    /// Writes a block once.
    async fn block(&mut self, cid: Cid, bytes: &[u8]) -> Result<(), Error> {
        if self.seen.insert(cid) {
            self.write_new(cid, bytes).await?;
        }
        Ok(())
    }

    /// Writes a block the caller has just added to `seen`.
    async fn write_new(&mut self, cid: Cid, bytes: &[u8]) -> Result<(), Error> {
        self.car.write(cid, bytes).await.map_err(io_err)?;
        self.blocks += 1;
        self.bytes += bytes.len() as u64;
        Ok(())
    }
}

fn io_err(e: iroh_car::Error) -> Error {
    match e {
        iroh_car::Error::Io(io) => Error::Io(io),
        other => Error::Io(std::io::Error::other(other.to_string())),
    }
}

/// A shard being walked by the export, and the key prefix of its entries.
struct Frame {
    shard: Arc<Shard>,
    next: usize,
    prefix: usize,
}

/// `a == b`, digests first: two CIDs the export compares usually differ
/// there if at all, and comparing them whole compares 64-byte buffers.
/// SHA-256 digests compare as 32-byte arrays, inline (as slices they go
/// through a call to `memcmp`).
fn same_cid(a: &Cid, b: &Cid) -> bool {
    let (x, y) = (a.hash().digest(), b.hash().digest());
    let same_digest = match (<&[u8; 32]>::try_from(x), <&[u8; 32]>::try_from(y)) {
        (Ok(x), Ok(y)) => x == y,
        _ => x == y,
    };
    same_digest
        && a.hash().code() == b.hash().code()
        && a.codec() == b.codec()
        && a.version() == b.version()
}

/// Index rows read per range scan by [`IndexPages`].
const INDEX_PAGE: usize = 1024;

/// The export's record blocks, read from the record index a page at a time.
///
/// The walk meets a collection's records in rkey order, the index's order,
/// so one range scan replaces a point read per record. A row is used only
/// when its CID is the one the walk wants (a commit made since the walk
/// began may have changed the index); otherwise the caller reads the block.
struct IndexPages<'a, K> {
    store: &'a Store<K>,
    repo: &'a str,
    collection: String,
    page: std::collections::VecDeque<(String, Block)>,
    /// The last rkey read, where the next page starts.
    cursor: Option<String>,
    exhausted: bool,
}

impl<'a, K: Kv> IndexPages<'a, K> {
    fn new(store: &'a Store<K>, repo: &'a str) -> Self {
        Self {
            store,
            repo,
            collection: String::new(),
            page: std::collections::VecDeque::new(),
            cursor: None,
            exhausted: true,
        }
    }

    /// The indexed block of the record at Pail key `key` if it is `cid`.
    /// Calls must come in key order.
    async fn block(&mut self, key: &str, cid: Cid) -> Result<Option<Block>, Error> {
        let Some((collection, rkey)) = key.split_once('/') else {
            return Ok(None);
        };
        if collection != self.collection {
            collection.clone_into(&mut self.collection);
            self.page.clear();
            self.cursor = None;
            self.exhausted = false;
        }
        loop {
            match self.page.front() {
                Some((k, _)) if k.as_str() < rkey => {
                    self.page.pop_front();
                }
                Some((k, block)) if k == rkey => {
                    let found = same_cid(&block.cid(), &cid).then(|| block.clone());
                    self.page.pop_front();
                    return Ok(found);
                }
                Some(_) => return Ok(None),
                None if self.exhausted => return Ok(None),
                None => {
                    let rows = self
                        .store
                        .list_record_blocks(
                            self.repo,
                            &self.collection,
                            self.cursor.as_deref(),
                            false,
                            INDEX_PAGE,
                        )
                        .await?;
                    self.exhausted = rows.len() < INDEX_PAGE;
                    self.cursor = rows.last().map(|(k, _)| k.clone());
                    self.page.extend(rows);
                }
            }
        }
    }
}

impl<W: AsyncWrite + Unpin + Send> Writer<W> {
    /// Writes the whole tree at `data` in pre-order: each shard, then for
    /// each of its entries its record and then its child shard's subtree.
    /// Records come in key order, read a page at a time from `repo`'s
    /// record index where it holds them.
    async fn tree<K: Kv>(
        &mut self,
        store: &Store<K>,
        repo: &str,
        data: Cid,
        progress: &mut (impl FnMut(u64) + Send),
    ) -> Result<(), Error> {
        let mut records = IndexPages::new(store, repo);
        let root = store.get_shard(&data).await?;
        self.block(data, root.bytes()).await?;
        let mut frames = vec![Frame {
            shard: root,
            next: 0,
            prefix: 0,
        }];
        // The key of the entry being visited: its frame's prefix, then the
        // entry's own key.
        let mut key = String::new();
        while let Some(top) = frames.last_mut() {
            let i = top.next;
            if i == top.shard.len() {
                frames.pop();
                continue;
            }
            top.next += 1;
            key.truncate(top.prefix);
            key.push_str(top.shard.key(i));
            let (data, link) = (top.shard.data(i), top.shard.link(i));
            if let Some(cid) = data
                && self.seen.insert(cid)
            {
                let block = match records.block(&key, cid).await? {
                    Some(block) => block,
                    None => store
                        .get_block(&cid)
                        .await?
                        .ok_or(Error::MissingBlock(cid))?,
                };
                self.write_new(cid, block.bytes()).await?;
            }
            if let Some(cid) = link
                && self.seen.insert(cid)
            {
                let shard = store.get_shard(&cid).await?;
                self.write_new(cid, shard.bytes()).await?;
                frames.push(Frame {
                    shard,
                    next: 0,
                    prefix: key.len(),
                });
            }
            progress(self.blocks);
        }
        Ok(())
    }

    /// Ends the file; what was written, under the root `head`.
    async fn finish(self, head: &crate::HeadInfo) -> Result<(W, ExportReport), Error> {
        let out = self.car.finish().await.map_err(io_err)?;
        Ok((
            out,
            ExportReport {
                commit: head.commit,
                rev: head.rev,
                blocks: self.blocks,
                bytes: self.bytes,
            },
        ))
    }

    /// Writes commit `cid` and what it added to its predecessor's tree
    /// `old`: the new shards and the records created or updated.
    async fn changes<K: Kv>(
        &mut self,
        store: &Store<K>,
        cid: Cid,
        old: Cid,
        new: Cid,
        progress: &mut (impl FnMut(u64) + Send),
    ) -> Result<(), Error> {
        self.copy(store, cid).await?;
        let diff = pail::diff(store, old, new).await?;
        for cid in diff.additions {
            if !self.seen.contains(&cid) {
                let shard = store.get_shard(&cid).await?;
                self.block(cid, shard.bytes()).await?;
                progress(self.blocks);
            }
        }
        for change in diff.keys {
            if let Some(cid) = change.new {
                self.copy(store, cid).await?;
                progress(self.blocks);
            }
        }
        Ok(())
    }
}

impl<K: Kv> Repository<K> {
    /// Writes the repository as a CAR v1 file whose root is the head
    /// commit: every block reachable from it, in a deterministic pre-order.
    ///
    /// With `since`, only what changed after the commit with that rev:
    /// every commit made since, newest first, each followed by the shards
    /// and records it added. Imported over a store whose head is that
    /// commit, it continues the history commit by commit.
    ///
    /// `progress` is called with the number of blocks written so far.
    ///
    /// # Errors
    ///
    /// [`Error::RevNotFound`], a storage error, or an I/O error.
    pub async fn export_car<W: AsyncWrite + Unpin + Send>(
        &self,
        out: W,
        since: Option<Tid>,
        progress: impl FnMut(u64) + Send,
    ) -> Result<(W, ExportReport), Error> {
        self.export_head_car(out, since, false, progress).await
    }

    /// A backup increment: [`Repository::export_car`] since `since`, with
    /// the repository's declarations as of the head right after the root
    /// (as [`Repository::export_history_car`] writes them), so that
    /// importing it also brings the collections, key types, Lexicons,
    /// field indexes and public keys declared since.
    ///
    /// # Errors
    ///
    /// As [`Repository::export_car`].
    pub async fn export_increment_car<W: AsyncWrite + Unpin + Send>(
        &self,
        out: W,
        since: Tid,
        progress: impl FnMut(u64) + Send,
    ) -> Result<(W, ExportReport), Error> {
        self.export_head_car(out, Some(since), true, progress).await
    }

    async fn export_head_car<W: AsyncWrite + Unpin + Send>(
        &self,
        out: W,
        since: Option<Tid>,
        with_declarations: bool,
        mut progress: impl FnMut(u64) + Send,
    ) -> Result<(W, ExportReport), Error> {
        let store = self.store();
        // The head and, since a rev, the commits from there, each read and
        // pinned in one window.
        let window = store.pin_window().await;
        let (head, _head_pin) = self.pinned_head(&window).await?;
        let since = match since {
            None => None,
            Some(rev) => {
                let base = self.commit_at(rev).await?;
                let mut log = store.commit_log(self.id(), false, usize::MAX).await?;
                log.retain(|(r, _)| (rev.as_u64()..=head.rev.as_u64()).contains(r));
                let log_pins: Vec<store::PinnedCommit> =
                    log.iter().map(|(_, cid)| window.pin(*cid)).collect();
                Some((rev, base, log_pins))
            }
        };
        drop(window);
        let mut w = Writer::start(out, store, head.commit).await?;
        if with_declarations {
            let declarations = self.declarations().await?.encode();
            w.block(declarations.cid(), declarations.bytes()).await?;
        }
        match since {
            None => {
                w.tree(store, self.id(), head.data, &mut progress).await?;
            }
            Some((rev, base, _log_pins)) => {
                // From the head back to the base, through each `prev`.
                let (mut cid, mut commit) = (head.commit, load_commit(store, head.commit).await?);
                while cid != base.cid {
                    let prev = commit.prev.ok_or_else(|| Error::RevNotFound {
                        repo: self.id().to_owned(),
                        rev: format!("{rev} (not an ancestor of the head)"),
                    })?;
                    let older = if prev == base.cid {
                        base.commit.clone()
                    } else {
                        load_commit(store, prev).await?
                    };
                    w.changes(&**store, cid, older.data, commit.data, &mut progress)
                        .await?;
                    (cid, commit) = (prev, older);
                }
            }
        }
        w.finish(&head).await
    }

    /// Writes a backup: a CAR v1 file whose root is the head commit, then
    /// the repository's declarations (collections, key types, Lexicons,
    /// field indexes; see `docs/repo.md`), then the oldest retained
    /// commit's whole tree, then every later commit with the shards and
    /// records it added. [`Repos::import_car`] restores all of it: the
    /// history (`log`, `get --at`, `diff`) and the declarations.
    ///
    /// # Errors
    ///
    /// A storage or I/O error.
    pub async fn export_history_car<W: AsyncWrite + Unpin + Send>(
        &self,
        out: W,
        mut progress: impl FnMut(u64) + Send,
    ) -> Result<(W, ExportReport), Error> {
        let store = self.store();
        // The head and the commits up to it, read and pinned in one window.
        let window = store.pin_window().await;
        let (head, _head_pin) = self.pinned_head(&window).await?;
        // Oldest first. The log's newest entry is the head.
        let mut log = store.commit_log(self.id(), false, usize::MAX).await?;
        log.retain(|(rev, _)| *rev <= head.rev.as_u64());
        let _log_pins: Vec<store::PinnedCommit> =
            log.iter().map(|(_, cid)| window.pin(*cid)).collect();
        drop(window);
        let mut w = Writer::start(out, store, head.commit).await?;
        let declarations = self.declarations().await?.encode();
        w.block(declarations.cid(), declarations.bytes()).await?;
        let mut older: Option<Cid> = None;
        for (_, cid) in log {
            let commit = load_commit(store, cid).await?;
            match older {
                None => {
                    w.copy(store, cid).await?;
                    w.tree(store, self.id(), commit.data, &mut progress).await?;
                }
                Some(old) => {
                    w.changes(&**store, cid, old, commit.data, &mut progress)
                        .await?;
                }
            }
            older = Some(commit.data);
        }
        w.finish(&head).await
    }

    /// The repository's declarations, for a history export.
    async fn declarations(&self) -> Result<Declarations, Error> {
        let collections = self
            .collections()
            .await
            .into_iter()
            .map(|(nsid, info)| DeclaredCollection {
                nsid,
                key: info.key.to_string(),
                declared: info.declared,
                lexicon: info.lexicon.map(|l| l.to_string()),
            })
            .collect();
        let indexes = self
            .indexes(None)
            .await?
            .into_iter()
            .map(|d| DeclaredIndex {
                collection: d.collection,
                path: d.path,
                kind: d.kind.to_string(),
            })
            .collect();
        let lexicons = self
            .store
            .lexicons(&self.id)
            .await?
            .into_iter()
            .map(|(_, json)| String::from_utf8_lossy(&json).into_owned())
            .collect();
        let keys = self.signing_keys().await?;
        Ok(Declarations {
            kind: DECLARATIONS_TYPE.to_owned(),
            repo: self.id().to_owned(),
            collections,
            indexes,
            lexicons,
            keys: Some(DeclaredKeys {
                current: keys.current.map(|c| c.key.did_key()),
                known: keys.known.iter().map(crate::PublicKey::did_key).collect(),
            }),
        })
    }
}

/// A fetcher that remembers every shard it served.
struct Recording<'a, F> {
    inner: &'a F,
    seen: Mutex<Vec<Arc<Shard>>>,
}

impl<F: ShardFetcher> ShardFetcher for Recording<'_, F> {
    async fn get_shard(&self, cid: &Cid) -> Result<Arc<Shard>, pail::Error> {
        let shard = self.inner.get_shard(cid).await?;
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(Arc::clone(&shard));
        Ok(shard)
    }
}

impl<K: Kv> Repository<K> {
    /// Writes a CAR v1 file proving one record at the head: the head
    /// commit, the shards on the path from the Pail root to the record's
    /// key, and the record (absent when it does not exist: then the path
    /// proves its absence).
    ///
    /// # Errors
    ///
    /// A storage or I/O error.
    pub async fn export_record_car<W: AsyncWrite + Unpin + Send>(
        &self,
        out: W,
        collection: &str,
        rkey: &str,
    ) -> Result<(W, Option<Cid>), Error> {
        let head = self.head().await?;
        let store = self.store();
        let recording = Recording {
            inner: &**store,
            seen: Mutex::new(Vec::new()),
        };
        let key = crate::repository::pail_key(collection, rkey);
        let found = pail::get(&recording, head.data, &key).await?;
        let mut w = Writer::start(out, store, head.commit).await?;
        let path = std::mem::take(
            &mut *recording
                .seen
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        for shard in path {
            w.block(shard.cid(), shard.bytes()).await?;
        }
        if let Some(cid) = found {
            w.copy(store, cid).await?;
        }
        Ok((w.car.finish().await.map_err(io_err)?, found))
    }
}

/// A CAR file's blocks, each checked against its CID, in file order
/// (a block given twice is kept once), found by CID through a table of
/// their positions.
///
/// The table holds positions and hashes of the SHA-256 digest (import
/// accepts no other hash), not CIDs: ~32 MiB for a million blocks where a
/// map from CID to block takes ~350 MiB; growing it rehashes without
/// touching the blocks; and a walk of a file written in pre-order reads
/// `blocks` front to back.
pub(crate) struct FileBlocks {
    blocks: Vec<Block>,
    /// (hash, position in `blocks`).
    positions: hashbrown::HashTable<(u64, u32)>,
    hasher: foldhash::fast::RandomState,
}

impl FileBlocks {
    /// Room for `n` blocks, so that filling it never moves them.
    fn with_capacity(n: usize) -> Self {
        Self {
            blocks: Vec::with_capacity(n),
            positions: hashbrown::HashTable::with_capacity(n),
            hasher: foldhash::fast::RandomState::default(),
        }
    }

    fn hash(&self, cid: &Cid) -> u64 {
        std::hash::BuildHasher::hash_one(&self.hasher, cid.hash().digest())
    }

    /// Adds a block unless the file gave it before.
    fn insert(&mut self, block: Block) -> Result<(), Error> {
        let cid = block.cid();
        let hash = self.hash(&cid);
        let position = u32::try_from(self.blocks.len())
            .map_err(|_| car_err("the file has more than 4,294,967,295 blocks"))?;
        let entry = self
            .positions
            .entry(hash, is_at(&self.blocks, hash, &cid), |&(h, _)| h);
        if let hashbrown::hash_table::Entry::Vacant(slot) = entry {
            slot.insert((hash, position));
            self.blocks.push(block);
        }
        Ok(())
    }

    /// Where the block `cid` is in [`FileBlocks::blocks`].
    fn position(&self, cid: &Cid) -> Option<usize> {
        let hash = self.hash(cid);
        self.positions
            .find(hash, is_at(&self.blocks, hash, cid))
            .map(|&(_, p)| p as usize)
    }

    /// [`FileBlocks::position`], trying `guess` first: a walk of a file
    /// written in pre-order meets its blocks one after another.
    fn position_from(&self, guess: usize, cid: &Cid) -> Option<usize> {
        match self.blocks.get(guess) {
            Some(block) if block.cid() == *cid => Some(guess),
            _ => self.position(cid),
        }
    }

    pub(crate) fn get(&self, cid: &Cid) -> Option<&Block> {
        self.position(cid).map(|p| &self.blocks[p])
    }

    pub(crate) fn len(&self) -> usize {
        self.blocks.len()
    }
}

/// Whether a table entry of [`FileBlocks`] is the block `cid` (whose
/// digest hashes to `hash`).
fn is_at<'a>(blocks: &'a [Block], hash: u64, cid: &'a Cid) -> impl Fn(&(u64, u32)) -> bool + 'a {
    move |&(h, p)| h == hash && blocks[p as usize].cid() == *cid
}

/// A block of the file being imported: as read, then checked.
enum FileBlock {
    Read(Cid, Bytes),
    Checked(Block),
}

impl FileBlock {
    /// Checks the block against its CID, once.
    fn check(&mut self) -> Result<(), Error> {
        let Self::Read(cid, bytes) = self else {
            return Ok(());
        };
        let cid = *cid;
        if !is_supported(&cid) {
            return Err(car_err(format!(
                "block {cid} uses an unsupported hash (only sha2-256)"
            )));
        }
        let block = Block::verify(cid, std::mem::take(bytes)).map_err(|_| {
            car_err(format!(
                "block {cid} does not hash to its CID (the file is corrupt or was tampered with)"
            ))
        })?;
        *self = Self::Checked(block);
        Ok(())
    }
}

/// Reads a CAR v1 file with one root: the root and the file's blocks, each
/// checked against its CID.
pub(crate) async fn read_car<R: AsyncRead + Unpin + Send>(
    input: R,
) -> Result<(Cid, FileBlocks), Error> {
    let mut reader = iroh_car::CarReader::new(input).await.map_err(|e| match e {
        // iroh-car's words for a header whose roots list is empty.
        iroh_car::Error::Parsing(m) if m == "empty CAR file" => {
            car_err("the file's header names no root (expected exactly one: the commit)".to_owned())
        }
        e => car_err(format!("not a CAR v1 file: {e}")),
    })?;
    let root = match reader.header().roots() {
        [root] => *root,
        roots => {
            return Err(car_err(format!(
                "expected exactly one root (the commit), found {}",
                roots.len()
            )));
        }
    };
    // Read, then hash on every core, then index: the same outcome as
    // checking block by block (the first bad block in file order is the
    // error, and a read error counts only after the blocks before it).
    // Each block is checked in place, and the index is sized once, so the
    // file's blocks are never held in two lists at once.
    let mut read = Vec::new();
    let read_error = loop {
        match reader.next_block().await {
            Ok(Some((cid, bytes))) => read.push(FileBlock::Read(cid, Bytes::from(bytes))),
            Ok(None) => break None,
            Err(e) => break Some(car_err(format!("truncated or malformed block: {e}"))),
        }
    };
    let first_bad = crate::parallel::in_parts(&mut read, |part| {
        part.iter_mut().find_map(|block| block.check().err())
    });
    if let Some(e) = first_bad.into_iter().flatten().next() {
        return Err(e);
    }
    let mut blocks = FileBlocks::with_capacity(read.len());
    for block in read {
        match block {
            FileBlock::Checked(block) => blocks.insert(block)?,
            // Every block was checked above, or the import failed there.
            FileBlock::Read(cid, _) => return Err(car_err(format!("block {cid} was not checked"))),
        }
    }
    match read_error {
        Some(e) => Err(e),
        None => Ok((root, blocks)),
    }
}

impl<K: Kv> Repos<K> {
    /// Whether the file's commits may go into this store, whose head for
    /// the repository is `current`: an error unless the file goes on from
    /// the head, or starts the repository, or replaces one that has no
    /// records (just `init` and declarations), or is there already.
    async fn continues(
        &self,
        blocks: &FileBlocks,
        root: Cid,
        commit: &CommitData,
        current: Option<Head>,
    ) -> Result<(), Error> {
        let Some(head) = current else {
            return Ok(());
        };
        if head.commit == root {
            // Already imported: nothing to do once the file is checked.
            return Ok(());
        }
        let FileHistory {
            commits: history,
            follows,
        } = file_history(blocks, root, commit, Some(head.commit))?;
        let oldest = history.last().map_or(commit, |(_, c)| c);
        if follows == Some(head.commit) {
            if oldest.rev.as_u64() <= head.rev {
                return Err(car_err(format!(
                    "the file's commit (rev {}) is not newer than {}'s head (rev {})",
                    oldest.rev,
                    commit.repo,
                    Tid::from_u64(head.rev)
                )));
            }
            return Ok(());
        }
        let data = load_commit(self.store(), head.commit).await?.data;
        if self.store().get_shard(&data).await?.is_empty() {
            return Ok(());
        }
        if commit.rev.as_u64() <= head.rev {
            return Err(car_err(format!(
                "the file's commit (rev {}) is not newer than {}'s head (rev {})",
                commit.rev,
                commit.repo,
                Tid::from_u64(head.rev)
            )));
        }
        Err(car_err(format!(
            "the file does not continue {}'s history: its oldest commit (rev {}) follows {}, \
             but the head is rev {}; import exports in the order they were made (an export \
             --since {} continues this store), or into a store without this repository",
            commit.repo,
            oldest.rev,
            follows.map_or_else(|| "no commit".to_owned(), |c| format!("commit {c}")),
            Tid::from_u64(head.rev),
            Tid::from_u64(head.rev),
        )))
    }
}

/// The file's commits before `root` (decoded as `commit`), newest first:
/// from its `prev` back while each is in the file, stopping at `head` (the
/// store's head). Returns them and the commit the oldest of them (or the
/// root) follows.
pub(crate) fn file_history(
    blocks: &FileBlocks,
    root: Cid,
    commit: &CommitData,
    head: Option<Cid>,
) -> Result<FileHistory, Error> {
    let mut history: Vec<(Cid, CommitData)> = Vec::new();
    let mut follows = commit.prev;
    while let Some(prev) = follows {
        if Some(prev) == head || prev == root {
            break;
        }
        let Some(block) = blocks.get(&prev) else {
            break;
        };
        let older = CommitData::decode(prev, block.bytes())
            .map_err(|e| car_err(format!("commit {prev}, an older commit in the file: {e}")))?;
        let newer = history.last().map_or(commit, |(_, c)| c);
        if older.repo != commit.repo {
            return Err(car_err(format!(
                "commit {prev} belongs to {}, the root to {}",
                older.repo, commit.repo
            )));
        }
        if older.rev >= newer.rev {
            return Err(car_err(format!(
                "commit {prev} (rev {}) is not older than the commit after it (rev {})",
                older.rev, newer.rev
            )));
        }
        follows = older.prev;
        history.push((prev, older));
    }
    Ok(FileHistory {
        commits: history,
        follows,
    })
}

/// The file's root commit block, decoded.
pub(crate) fn root_commit(blocks: &FileBlocks, root: Cid) -> Result<(&Block, CommitData), Error> {
    let block = blocks
        .get(&root)
        .ok_or_else(|| car_err(format!("the root commit {root} is not in the file")))?;
    let commit = CommitData::decode(root, block.bytes())
        .map_err(|e| car_err(format!("the root is not a datarepo commit: {e}")))?;
    Ok((block, commit))
}

/// The file's commits before its root, newest first, and the commit the
/// oldest of them (or the root) follows.
pub(crate) struct FileHistory {
    pub(crate) commits: Vec<(Cid, CommitData)>,
    pub(crate) follows: Option<Cid>,
}

/// A tree entry: its key and where its record is.
fn located(blocks: &FileBlocks, key: String, cid: Cid) -> TreeEntry {
    TreeEntry {
        key,
        record: match blocks.position(&cid) {
            Some(p) => Located::File(p),
            None => Located::Stored(Box::new(cid)),
        },
    }
}

/// A record's block from the imported file, else from the store.
async fn record_block<K: Kv>(
    blocks: &FileBlocks,
    store: &Store<K>,
    cid: Cid,
) -> Result<Block, Error> {
    match blocks.get(&cid) {
        Some(block) => Ok(block.clone()),
        None => store.get_block(&cid).await?.ok_or(Error::MissingBlock(cid)),
    }
}

/// A key of an imported tree and where its record is.
struct TreeEntry {
    key: String,
    record: Located,
}

/// Where an imported tree's record is.
enum Located {
    /// At this position of the file's blocks.
    File(usize),
    /// Not in the file, so it must already be in the store.
    Stored(Box<Cid>),
}

impl TreeEntry {
    /// The entry's record block.
    async fn record<K: Kv>(&self, blocks: &FileBlocks, store: &Store<K>) -> Result<Block, Error> {
        match &self.record {
            Located::File(p) => Ok(blocks.blocks[*p].clone()),
            Located::Stored(cid) => store
                .get_block(cid)
                .await?
                .ok_or(Error::MissingBlock(**cid)),
        }
    }
}

/// Checks that each tree key is `collection/rkey` with a valid NSID and
/// record key.
fn check_keys(entries: &[TreeEntry]) -> Result<(), Error> {
    // Keys come in order, so a collection's keys are adjacent: its NSID is
    // checked once.
    let mut checked_collection = None;
    for entry in entries {
        let key = &entry.key;
        let (collection, rkey) = key
            .split_once('/')
            .ok_or_else(|| car_err(format!("tree key {key:?} is not collection/rkey")))?;
        if checked_collection != Some(collection) {
            Nsid::new(collection).map_err(|e| car_err(format!("tree key {key:?}: {e}")))?;
            checked_collection = Some(collection);
        }
        RecordKey::new(rkey).map_err(|e| car_err(format!("tree key {key:?}: {e}")))?;
    }
    Ok(())
}

/// Checks every record the tree names, once each: a record in the file
/// must be a canonical dag-cbor map; one not in the file must be in the
/// store. Returns the positions of the file's records.
async fn check_records<K: Kv>(
    blocks: &FileBlocks,
    entries: &[TreeEntry],
    store: &Store<K>,
) -> Result<Vec<usize>, Error> {
    let mut seen = vec![false; blocks.len()];
    // (entry, position) of each record's first entry.
    let mut in_file = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        match &entry.record {
            Located::File(p) => {
                if !std::mem::replace(&mut seen[*p], true) {
                    in_file.push((i, *p));
                }
            }
            Located::Stored(cid) => {
                if store.get_block(cid).await?.is_none() {
                    return Err(car_err(format!(
                        "record {} ({cid}) is neither in the file nor in the store",
                        entry.key
                    )));
                }
            }
        }
    }
    let check = |part: &[(usize, usize)]| {
        part.iter().find_map(|&(i, p)| {
            let block = &blocks.blocks[p];
            let key = &entries[i].key;
            let collection = key.split_once('/').map_or(key.as_str(), |(c, _)| c);
            Record::check_encoding(block.cid(), block.bytes())
                .and_then(|()| Record::check_data_model(collection, block.bytes()))
                .err()
                .map(|e| car_err(format!("record {key}: {e}")))
        })
    };
    // Decoding and re-encoding each record is most of an import's CPU:
    // spread over the cores, reporting the first bad record in tree order.
    let error = crate::parallel::in_parts(&mut in_file, |part| check(part))
        .into_iter()
        .flatten()
        .next();
    match error {
        Some(e) => Err(e),
        None => Ok(in_file.into_iter().map(|(_, p)| p).collect()),
    }
}

/// Shards from an imported file's blocks, else from the store.
struct ImportBlocks<'a, K> {
    blocks: &'a FileBlocks,
    store: &'a Store<K>,
    decoded: Mutex<HashMap<Cid, Arc<Shard>>>,
}

impl<K: Kv> ShardFetcher for ImportBlocks<'_, K> {
    async fn get_shard(&self, cid: &Cid) -> Result<Arc<Shard>, pail::Error> {
        if let Some(shard) = self
            .decoded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(cid)
        {
            return Ok(Arc::clone(shard));
        }
        let Some(block) = self.blocks.get(cid) else {
            return self.store.get_shard(cid).await;
        };
        let shard = Shard::decode(block.bytes())?;
        if shard.cid() != *cid {
            return Err(pail::Error::InvalidShard {
                reason: format!("block {cid} does not hash to its CID"),
            });
        }
        let shard = Arc::new(shard);
        self.decoded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(*cid, Arc::clone(&shard));
        Ok(shard)
    }
}

impl<K: Kv> Repos<K> {
    /// Imports a CAR v1 file made by [`Repository::export_car`] (or any CAR
    /// whose root is a datarepo commit), creating the repository or moving
    /// it forward to the file's commit.
    ///
    /// Every block is checked against its CID and the commit, every shard
    /// and every record are checked before anything is written; then the
    /// blocks are stored (ahead, in bounded batches, on SlateDB) and the
    /// repository's head, commit log and record index change in one atomic
    /// batch ([`store::Store::bulk_commit`]): readers see all of the import
    /// or none of it. With `expected_repo`, the commit must belong to that
    /// repository.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidCar`] saying what is wrong (nothing is written),
    /// [`Error::InvalidRepoId`], a key-type mismatch with the repository's
    /// declarations, or a storage or I/O error.
    pub async fn import_car<R: AsyncRead + Unpin + Send>(
        &self,
        input: R,
        expected_repo: Option<&str>,
    ) -> Result<ImportReport, Error> {
        let options = ImportOptions {
            repo: expected_repo.map(str::to_owned),
            ..ImportOptions::default()
        };
        self.import_car_with_progress(input, &options, |_| {}).await
    }

    /// [`Repos::import_car`], calling `progress` at each step after the
    /// file has been read (a caller follows the reading itself through
    /// `input`).
    ///
    /// # Errors
    ///
    /// As [`Repos::import_car`].
    ///
    /// When the store knows keys for the repository (or `options.keys`
    /// gives some), every commit the file adds must be signed by one of
    /// them ([`Error::Untrusted`] otherwise, nothing written), unless
    /// `options.trust_new_key`.
    pub async fn import_car_with_progress<R: AsyncRead + Unpin + Send>(
        &self,
        input: R,
        options: &ImportOptions,
        mut progress: impl FnMut(ImportProgress) + Send,
    ) -> Result<ImportReport, Error> {
        let expected_repo = options.repo.as_deref();
        let (root, blocks) = read_car(input).await?;
        progress(ImportProgress::Checking);
        let (commit_block, commit) = root_commit(&blocks, root)?;
        let commit_block = commit_block.clone();
        if let Some(why) = crate::repository::unusable_rev(commit.rev, self.env().now_micros()) {
            return Err(car_err(format!("the root commit {root}: {why}")));
        }
        rkey::validate_repo_id(&commit.repo).map_err(|e| Error::InvalidRepoId {
            id: commit.repo.clone(),
            reason: e.to_string(),
        })?;
        if let Some(expected) = expected_repo
            && expected != commit.repo
        {
            return Err(car_err(format!(
                "the file holds repository {}, not {expected}",
                commit.repo
            )));
        }
        let store = self.store();
        // Whether the file may go into this store at all, before its tree
        // is read: read again under the lock below.
        let current = store.head(&commit.repo).await?;
        self.continues(&blocks, root, &commit, current).await?;
        let stored_keys = crate::SigningKeys::load(store, &commit.repo).await?;
        let mut given = options.keys.clone();
        given.extend(options.signing_key.as_ref().map(|(k, _)| *k.public_key()));
        let mut keys = stored_keys.known.clone();
        keys.extend(given.iter().copied());
        let check_signatures = !keys.is_empty() && !options.trust_new_key;
        if check_signatures {
            crate::verify::check_signature(root, &commit, &keys)?;
        }
        let fetcher = ImportBlocks {
            blocks: &blocks,
            store,
            decoded: Mutex::new(HashMap::new()),
        };
        let mut entries: Vec<TreeEntry> = Vec::with_capacity(blocks.len());
        let mut next = 0;
        pail::for_each_entry(&fetcher, commit.data, &EntriesOptions::default(), |k, v| {
            let record = match blocks.position_from(next, &v) {
                Some(p) => {
                    next = p + 1;
                    Located::File(p)
                }
                None => Located::Stored(Box::new(v)),
            };
            entries.push(TreeEntry {
                key: k.to_owned(),
                record,
            });
            std::ops::ControlFlow::Continue(())
        })
        .await
        .map_err(|e| car_err(format!("the commit's tree is invalid or incomplete: {e}")))?;
        check_keys(&entries)?;
        let records_in_file = check_records(&blocks, &entries, store).await?;

        // Hold the open-repositories lock: no handle writes meanwhile.
        let open = self.lock_open().await;
        if store.head(&commit.repo).await? != current {
            return Err(car_err(format!(
                "{} changed while the file was checked; import it again",
                commit.repo
            )));
        }
        if let Some(head) = current
            && head.commit == root
        {
            // The commits are here already; the declarations may have
            // changed since (an increment with no commit after its base).
            let declarations = blocks
                .blocks
                .get(1)
                .filter(|b| b.cid() != root)
                .and_then(|b| Declarations::decode(b.bytes()))
                .filter(|d| d.repo == commit.repo);
            if let Some(d) = &declarations {
                let mut declared = stored_collections(store, &commit.repo).await?;
                let changed = d.collection_changes(&mut declared)?;
                check_existing_keys(store, &commit.repo, &changed, &HashSet::default()).await?;
                if let Some(keys) = d.keys_over(
                    stored_keys.clone(),
                    &given,
                    stored_keys.known.is_empty() || options.trust_new_key,
                )? {
                    keys.save(store, &commit.repo).await?;
                }
                for (nsid, info) in &changed {
                    store
                        .put_collection(&commit.repo, nsid, info.encode())
                        .await?;
                }
            }
            drop(open);
            let signing_key_missing = self
                .after_import(&commit.repo, declarations.as_ref(), options, &mut progress)
                .await?;
            return Ok(ImportReport {
                repo: commit.repo,
                commit: root,
                rev: commit.rev,
                records: entries.len() as u64,
                blocks: 0,
                unreachable: 0,
                commits: 0,
                declarations: declarations.is_some(),
                verified: 0,
                signed: commit.sig.is_some(),
                signing_key_missing,
            });
        }
        let head_commit = current.map(|h| h.commit);
        let FileHistory {
            commits: history,
            follows,
        } = file_history(&blocks, root, &commit, head_commit)?;
        if check_signatures {
            for (cid, older) in &history {
                crate::verify::check_signature(*cid, older, &keys)?;
            }
        }
        let mut replace = false;
        let mut base_tree = None;
        if let Some(head) = current {
            let data = load_commit(store, head.commit).await?.data;
            if follows == Some(head.commit) {
                base_tree = Some(data);
            } else {
                replace = true;
            }
        }
        // The older commits' trees, oldest first, each from the one before
        // (the oldest from the head it continues, or walked whole): their
        // shards are decoded through `fetcher`, their records gathered.
        let mut history_records: Vec<TreeEntry> = Vec::new();
        {
            let mut previous = base_tree;
            for (cid, older) in history.iter().rev() {
                let walked = match previous {
                    Some(old) => pail::diff(&fetcher, old, older.data).await.map(|d| {
                        for change in d.keys {
                            if let Some(cid) = change.new {
                                history_records.push(located(&blocks, change.key, cid));
                            }
                        }
                    }),
                    None => {
                        pail::for_each_entry(
                            &fetcher,
                            older.data,
                            &EntriesOptions::default(),
                            |k, v| {
                                history_records.push(located(&blocks, k.to_owned(), v));
                                std::ops::ControlFlow::Continue(())
                            },
                        )
                        .await
                    }
                };
                walked.map_err(|e| {
                    car_err(format!(
                        "the tree of commit {cid} (rev {}) is invalid or incomplete: {e}",
                        older.rev
                    ))
                })?;
                previous = Some(older.data);
            }
            if let Some(old) = previous.filter(|_| !history.is_empty()) {
                // Shards the root's tree shares with the newest older commit's
                // are decoded already; this finds those in between.
                pail::diff(&fetcher, old, commit.data)
                    .await
                    .map_err(|e| car_err(format!("the commit's tree is invalid: {e}")))?;
            }
        }
        check_keys(&history_records)?;
        let history_in_file = check_records(&blocks, &history_records, store).await?;

        // The commits and their shards. Records come with their index
        // changes (the changed ones; the others are in the store already);
        // older versions of records come as blocks.
        let decoded = std::mem::take(
            &mut *fetcher
                .decoded
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        let mut keep: Vec<Block> = Vec::with_capacity(1 + history.len() + decoded.len());
        keep.push(commit_block);
        for (cid, _) in &history {
            if let Some(block) = blocks.get(cid) {
                keep.push(block.clone());
            }
        }
        keep.extend(decoded.values().map(Block::from_shard));
        // Older versions of records: those the head's tree does not name.
        let history_added: Vec<usize> = if history_in_file.is_empty() {
            Vec::new()
        } else {
            let in_head: HashSet<usize> = records_in_file.iter().copied().collect();
            history_in_file
                .iter()
                .copied()
                .filter(|p| !in_head.contains(p))
                .collect()
        };
        keep.extend(history_added.iter().map(|&p| blocks.blocks[p].clone()));
        let records = entries.len() as u64;
        // The declarations: the block after the root, if no commit reaches
        // it (not a commit, a shard or a record).
        let declarations = blocks
            .blocks
            .get(1)
            .filter(|b| {
                let cid = b.cid();
                cid != root
                    && !history.iter().any(|(c, _)| *c == cid)
                    && !decoded.contains_key(&cid)
                    && !records_in_file.contains(&1)
                    && !history_in_file.contains(&1)
            })
            .and_then(|b| Declarations::decode(b.bytes()));
        let reached = keep.len() + records_in_file.len() + usize::from(declarations.is_some());
        let unreachable = blocks.len().saturating_sub(reached) as u64;
        if let Some(d) = &declarations
            && d.repo != commit.repo
        {
            return Err(car_err(format!(
                "the file's declarations are for {}, its commit for {}",
                d.repo, commit.repo
            )));
        }
        let mut index: Vec<RecordChange> = Vec::with_capacity(entries.len());
        // The file's declarations (as of its head) replace the store's.
        let mut declared = stored_collections(store, &commit.repo).await?;
        let changed_collections = match &declarations {
            Some(d) => d.collection_changes(&mut declared)?,
            None => Vec::new(),
        };
        let keys_after = match &declarations {
            Some(d) => d.keys_over(
                stored_keys.clone(),
                &given,
                stored_keys.known.is_empty() || options.trust_new_key,
            )?,
            None => None,
        };
        let mut new_collections: Vec<(String, Bytes)> = changed_collections
            .iter()
            .map(|(nsid, info)| (nsid.clone(), info.encode()))
            .collect();
        // The file holds the whole repository when nothing is under it.
        let whole = base_tree.is_none();
        // How each collection's record count changes: from none (a whole
        // repository) or from the stored count.
        let mut count_changes: BTreeMap<String, i64> = BTreeMap::new();
        match base_tree {
            None => {
                // Consumed as it goes: each key's memory serves the next
                // change's strings.
                for entry in entries {
                    if let Some((collection, rkey)) = entry.key.split_once('/') {
                        *count_changes.entry(collection.to_owned()).or_default() += 1;
                        index.push(RecordChange {
                            collection: collection.to_owned(),
                            rkey: rkey.to_owned(),
                            record: Some(entry.record(&blocks, store).await?),
                        });
                    }
                }
            }
            Some(_) => {
                let old = load_commit(store, head_commit.unwrap_or(root)).await?.data;
                let diff = pail::diff(&fetcher, old, commit.data).await?;
                for change in diff.keys {
                    if let Some((collection, rkey)) = change.key.split_once('/') {
                        *count_changes.entry(collection.to_owned()).or_default() +=
                            match (change.old, change.new) {
                                (None, Some(_)) => 1,
                                (Some(_), None) => -1,
                                _ => 0,
                            };
                        let record = match change.new {
                            Some(cid) => Some(record_block(&blocks, store, cid).await?),
                            None => None,
                        };
                        index.push(RecordChange {
                            collection: collection.to_owned(),
                            rkey: rkey.to_owned(),
                            record,
                        });
                    }
                }
            }
        }
        // A key type the file changes holds for the records the store keeps.
        if !whole {
            let replaced: HashSet<String> = index
                .iter()
                .map(|c| format!("{}/{}", c.collection, c.rkey))
                .collect();
            check_existing_keys(store, &commit.repo, &changed_collections, &replaced).await?;
        }
        // The index changes hold the records' blocks; the rest of the file
        // goes before the store takes the commit.
        drop(fetcher);
        drop(blocks);
        for change in &index {
            if change.record.is_none() {
                continue;
            }
            match declared.get(&change.collection) {
                Some(info) => {
                    let rkey = RecordKey::new(change.rkey.as_str())?;
                    info.key.check(&rkey)?;
                }
                None => {
                    let info = CollectionInfo {
                        key: rkey::KeyType::Any,
                        declared: false,
                        lexicon: None,
                    };
                    new_collections.push((
                        change.collection.clone(),
                        Bytes::from(serde_json::to_vec(&info).unwrap_or_default()),
                    ));
                    declared.insert(change.collection.clone(), info);
                }
            }
        }
        // A whole repository's indexes are computed from its records here,
        // on a thread of their own while the store takes the commit (the
        // records' bytes are shared, not copied); the rebuild then only
        // writes them.
        let computing = if whole {
            compute_indexes(store, &commit.repo, &index).await?
        } else {
            None
        };
        // Until the rebuild below finishes, the indexes describe the old
        // records: the commit says so (queries refuse to answer from them),
        // and a crash before the rebuild's end leaves it said.
        let indexed = !index::declarations(store.kv(), &commit.repo, None)
            .await?
            .is_empty();
        let mut index_ops = if indexed {
            vec![index::raise_epoch(store.kv(), &commit.repo, Some(true)).await?]
        } else {
            Vec::new()
        };
        for (collection, change) in count_changes {
            // A whole repository's collections had no records before.
            let before = if whole {
                0
            } else if change == 0 {
                continue;
            } else {
                store
                    .written_record_count(&commit.repo, &collection)
                    .await?
            };
            index_ops.push(store::record_count_change(
                &commit.repo,
                &collection,
                before,
                change,
            )?);
        }
        if replace {
            // The replaced repository's histories (of records it deleted).
            index_ops.extend(crate::history::deletions(store, &commit.repo).await?);
        }
        index_ops.push(crate::history::start_after(&commit.repo, commit.rev));
        // The keys before the commit: a repository whose history is signed
        // never exists here without knowing it, so never takes an unsigned
        // commit after it.
        if let Some(keys) = &keys_after {
            keys.save(store, &commit.repo).await?;
        }
        store
            .bulk_commit(
                Commit {
                    repo: commit.repo.clone(),
                    expected: current.map(|h| h.commit),
                    head: Head {
                        commit: root,
                        rev: commit.rev.as_u64(),
                    },
                    blocks: keep,
                    records: index,
                    collections: new_collections,
                    index: index_ops,
                    history: store::LogChange {
                        older: history
                            .iter()
                            .map(|(cid, c)| Head {
                                commit: *cid,
                                rev: c.rev.as_u64(),
                            })
                            .collect(),
                        replace,
                    },
                    event: None,
                },
                |written, total| {
                    progress(if written < total {
                        ImportProgress::Writing { written, total }
                    } else {
                        ImportProgress::Committing
                    });
                },
            )
            .await?;
        drop(open);
        self.forget(&commit.repo).await;
        // The target's declared indexes (those the file keeps), rebuilt
        // from the imported records; then those only the file declares,
        // built.
        let repo = self.open(&commit.repo).await?;
        if let Some(d) = &declarations {
            drop_undeclared_indexes(&repo, d).await?;
        }
        let mut computed = index::ComputedScopes::new();
        if let Some(computing) = computing {
            // A collection that could not be computed (or a thread that
            // failed) is left to the rebuild, which reads its records back.
            for (collection, declared, rows) in computing.await.unwrap_or_default() {
                if let Ok(built) = rows {
                    computed.insert(collection, (declared, built));
                }
            }
        }
        repo.rebuild_indexes_with(computed, |p| {
            progress(ImportProgress::Indexing { records: p.records });
        })
        .await?;
        drop(repo);
        let signing_key_missing = self
            .after_import(&commit.repo, declarations.as_ref(), options, &mut progress)
            .await?;
        Ok(ImportReport {
            repo: commit.repo,
            commit: root,
            rev: commit.rev,
            records,
            blocks: reached as u64,
            unreachable,
            commits: 1 + history.len() as u64,
            declarations: declarations.is_some(),
            verified: if check_signatures {
                1 + history.len() as u64
            } else {
                0
            },
            signed: commit.sig.is_some(),
            signing_key_missing,
        })
    }

    /// The definitions Lexicons of `declarations` become the repository's
    /// (those of collections `declared` now are in their declarations).
    async fn apply_lexicons(
        &self,
        repo: &str,
        declarations: &Declarations,
        declared: &HashMap<String, CollectionInfo>,
    ) -> Result<(), Error> {
        let store = self.store();
        let wanted = declarations.parsed_lexicons()?;
        let stored = store.lexicons(repo).await?;
        for (nsid, bytes) in &wanted {
            let same = stored.iter().any(|(n, b)| n == nsid && b == bytes);
            if !same && declared.get(nsid).is_none_or(|i| i.lexicon.is_none()) {
                store.put_lexicon(repo, nsid, Some(bytes.clone())).await?;
            }
        }
        for (nsid, _) in stored {
            if !wanted.iter().any(|(n, _)| *n == nsid) {
                store.put_lexicon(repo, &nsid, None).await?;
            }
        }
        Ok(())
    }

    /// What follows an import's commit: the indexes only the file
    /// declares, built; the keys given, trusted; the signing key given,
    /// made current. Returns whether the repository's next commit must be
    /// signed but has no private key here.
    async fn after_import(
        &self,
        id: &str,
        declarations: Option<&Declarations>,
        options: &ImportOptions,
        progress: &mut (impl FnMut(ImportProgress) + Send),
    ) -> Result<bool, Error> {
        if let Some(d) = declarations {
            self.apply_lexicons(id, d, &stored_collections(self.store(), id).await?)
                .await?;
        }
        self.forget(id).await;
        let repo = self.open(id).await?;
        if let Some(d) = declarations {
            drop_undeclared_indexes(&repo, d).await?;
            let existing = repo.indexes(None).await?;
            for (collection, path, kind) in d.parsed_indexes()? {
                if existing
                    .iter()
                    .any(|i| i.collection == collection && i.path == path)
                {
                    continue;
                }
                repo.add_index(&collection, &path, kind, |p| {
                    progress(ImportProgress::Indexing { records: p.records });
                })
                .await?;
            }
        }
        if !options.keys.is_empty() {
            repo.trust_keys(&options.keys).await?;
        }
        if let Some((key, file)) = &options.signing_key {
            repo.set_signing_key(Arc::clone(key), file.clone()).await?;
        }
        let keys = repo.signing_keys().await?;
        Ok(keys.current.is_none() && !keys.known.is_empty())
    }
}

/// Drops the field indexes `declarations` do not declare (or declare with
/// another kind, built again afterwards).
async fn drop_undeclared_indexes<K: Kv>(
    repo: &Repository<K>,
    declarations: &Declarations,
) -> Result<(), Error> {
    let wanted = declarations.parsed_indexes()?;
    for i in repo.indexes(None).await? {
        if !wanted
            .iter()
            .any(|(c, p, k)| *c == i.collection && *p == i.path && *k == i.kind)
        {
            repo.drop_index(&i.collection, &i.path).await?;
        }
    }
    Ok(())
}

/// The store's collection declarations for `repo`.
async fn stored_collections<K: Kv>(
    store: &Store<K>,
    repo: &str,
) -> Result<HashMap<String, CollectionInfo>, Error> {
    let mut declared = HashMap::new();
    for (name, bytes) in store.collections(repo).await? {
        if let Ok(info) = serde_json::from_slice::<CollectionInfo>(&bytes) {
            declared.insert(name, info);
        }
    }
    Ok(declared)
}

/// Checks that the records `repo` keeps of each changed collection fit its
/// new key type, but for `replaced` (`collection/rkey` paths the import
/// writes or deletes, checked on their own).
async fn check_existing_keys<K: Kv>(
    store: &Store<K>,
    repo: &str,
    changed: &[(String, CollectionInfo)],
    replaced: &HashSet<String>,
) -> Result<(), Error> {
    for (collection, info) in changed {
        if info.key == rkey::KeyType::Any {
            continue;
        }
        let mut cursor: Option<String> = None;
        loop {
            let page = store
                .list_records(repo, collection, cursor.as_deref(), false, 1024)
                .await?;
            for (rkey, _) in &page {
                if replaced.contains(&format!("{collection}/{rkey}")) {
                    continue;
                }
                let fits = RecordKey::new(rkey.as_str()).and_then(|k| info.key.check(&k));
                if let Err(e) = fits {
                    return Err(car_err(format!(
                        "the file declares {collection}'s record keys {}, which its record \
                         {rkey} in this store does not fit: {e}",
                        info.key
                    )));
                }
            }
            match page.last() {
                Some((last, _)) if page.len() == 1024 => cursor = Some(last.clone()),
                _ => break,
            }
        }
    }
    Ok(())
}

/// The rows of an import's indexed collections, being computed on a thread
/// of their own: (collection, its declarations, the rows or why not).
type Computing = tokio::sync::oneshot::Receiver<
    Vec<(
        String,
        Vec<index::Declared>,
        Result<index::BuiltRows, Error>,
    )>,
>;

/// Starts computing, on a thread of its own and one collection after the
/// other, the indexes the store declares for `repo` over `records` (every
/// record of the repository); `None` when it declares none.
async fn compute_indexes<K: Kv>(
    store: &Store<K>,
    repo: &str,
    records: &[RecordChange],
) -> Result<Option<Computing>, Error> {
    let by_collection = index::declarations_by_collection(store.kv(), repo).await?;
    if by_collection.is_empty() {
        return Ok(None);
    }
    let mut given: HashMap<String, Vec<(String, Bytes)>> = by_collection
        .keys()
        .map(|c| (c.clone(), Vec::new()))
        .collect();
    for change in records {
        if let (Some(block), Some(records)) =
            (&change.record, given.get_mut(change.collection.as_str()))
        {
            records.push((change.rkey.clone(), block.bytes().clone()));
        }
    }
    let (done, computing) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let rows = by_collection
            .into_iter()
            .map(|(collection, declared)| {
                let records = given.remove(&collection).unwrap_or_default();
                let rows = index::compute_given(&declared, records).map_err(Error::from);
                (collection, declared, rows)
            })
            .collect();
        let _ = done.send(rows);
    });
    Ok(Some(computing))
}

#[cfg(test)]
mod tests {
    use multihash_codetable::{Code, MultihashDigest};

    use super::*;

    #[test]
    fn seen_cids_tell_versions_codecs_and_hashes_apart() {
        let sha = Code::Sha2_256.digest(b"block");
        let cids = [
            Cid::new_v1(0x71, sha),
            Cid::new_v1(0x55, sha),
            Cid::new_v0(sha).unwrap(),
            Cid::new_v1(0x71, Code::Sha2_512.digest(b"block")),
            Cid::new_v1(0x71, Code::Sha2_256.digest(b"other")),
        ];
        let mut seen = SeenCids::default();
        for cid in cids {
            assert!(!seen.contains(&cid));
            assert!(seen.insert(cid), "{cid} is new");
        }
        for cid in cids {
            assert!(seen.contains(&cid));
            assert!(!seen.insert(cid), "{cid} was seen");
        }
        assert!(same_cid(&cids[0], &cids[0]));
        for (i, a) in cids.iter().enumerate() {
            for b in &cids[i + 1..] {
                assert!(!same_cid(a, b), "{a} vs {b}");
            }
        }
    }
}
