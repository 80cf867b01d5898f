//! [`Store`]: verified blocks, repository heads, the commit log and the
//! record index over a [`Kv`], with atomic, compare-and-swap commits.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use cid::Cid;
use keycodec::{KeyRange, RecordType, records};
use pail::{Shard, ShardFetcher};

use crate::{
    block::Block,
    delta,
    error::Error,
    kv::Kv,
    kv::WriteOp,
    shard_cache::{Anchor, ShardCache},
};

const SHA2_256: u64 = 0x12;

/// A repository's head: its latest commit and that commit's rev.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// The commit block's CID.
    pub commit: Cid,
    /// The commit's rev (a TID's value).
    pub rev: u64,
}

impl Head {
    /// `rev` (8 bytes, big-endian) then the commit CID's bytes.
    fn encode(&self) -> Bytes {
        let mut out = self.rev.to_be_bytes().to_vec();
        out.extend_from_slice(&self.commit.to_bytes());
        Bytes::from(out)
    }

    fn decode(bytes: &[u8]) -> Result<Self, Error> {
        let malformed = |reason: &str| Error::Malformed {
            what: "head",
            reason: reason.to_owned(),
        };
        let (rev, cid) = bytes
            .split_first_chunk::<8>()
            .ok_or_else(|| malformed("shorter than 8 bytes"))?;
        Ok(Self {
            rev: u64::from_be_bytes(*rev),
            commit: Cid::try_from(cid).map_err(|e| malformed(&e.to_string()))?,
        })
    }
}

/// A change to one record in the record index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordChange {
    /// The collection (an NSID).
    pub collection: String,
    /// The record key.
    pub rkey: String,
    /// The record's new block, or `None` when it is deleted. The commit
    /// stores the block too.
    ///
    /// The index entry holds its CID and, for records up to
    /// [`INLINE_RECORD_BYTES`], a copy of its bytes: reading or listing
    /// records is then one lookup, not one per record.
    pub record: Option<Block>,
}

/// Records up to this size are copied into their index entry.
pub const INLINE_RECORD_BYTES: usize = 4096;

/// An index entry: the record's CID bytes, then (optionally) its bytes.
fn index_value(block: &Block) -> Bytes {
    let (cid, bytes) = (block.cid(), block.bytes());
    let inline = if bytes.len() <= INLINE_RECORD_BYTES {
        bytes.as_ref()
    } else {
        &[]
    };
    let mut out = Vec::with_capacity(cid.encoded_len() + inline.len());
    // Writing to a Vec cannot fail.
    let _ = cid.write_bytes(&mut out);
    out.extend_from_slice(inline);
    Bytes::from(out)
}

/// The record of an index entry: `Ok` the verified block when it is kept
/// inline, `Err` its CID when it is stored only as a block.
fn inline_block(value: &Bytes) -> Result<Result<Block, Cid>, Error> {
    let (cid, inline) = parse_index_value(value)?;
    Ok(match inline {
        Some(bytes) => match Block::verify(cid, bytes) {
            Ok(block) => Ok(block),
            Err(Error::HashMismatch { cid }) => return Err(Error::Corrupt { cid }),
            Err(e) => return Err(e),
        },
        None => Err(cid),
    })
}

/// Splits an index entry into the CID and the inline bytes (if any).
fn parse_index_value(value: &Bytes) -> Result<(Cid, Option<Bytes>), Error> {
    // Every CID datarepo writes is a CIDv1 with a one-byte codec and a
    // SHA-256 digest; parse those directly (the general reader below goes
    // through `io::Read` a varint at a time, a tenth of an export's time).
    if let [1, codec @ 0..0x80, 0x12, 0x20, rest @ ..] = value.as_ref()
        && let Some(digest) = rest.get(..32)
    {
        let hash =
            cid::multihash::Multihash::wrap(SHA2_256, digest).map_err(|e| Error::Malformed {
                what: "record index entry",
                reason: e.to_string(),
            })?;
        let cid = Cid::new_v1(u64::from(*codec), hash);
        let rest = value.slice(4 + 32..);
        return Ok((cid, (!rest.is_empty()).then_some(rest)));
    }
    let mut cursor = std::io::Cursor::new(value.as_ref());
    let cid = Cid::read_bytes(&mut cursor).map_err(|e| Error::Malformed {
        what: "record index entry",
        reason: e.to_string(),
    })?;
    let at = usize::try_from(cursor.position()).unwrap_or(usize::MAX);
    let rest = value.slice(at.min(value.len())..);
    Ok((cid, (!rest.is_empty()).then_some(rest)))
}

/// One row of the record index, as [`Store::record_index_rows`] reads it.
/// Its key and its value are decoded separately, so that a damaged row is
/// reported as such and the rows after it can still be read.
#[derive(Debug)]
pub struct IndexRow {
    /// The row's storage key; the next page starts after it.
    pub key: Bytes,
    /// `(collection, rkey)`, decoded from the key.
    pub path: Result<(String, String), Error>,
    /// The record's CID and, when the index keeps them inline, its bytes
    /// (unchecked), decoded from the value.
    pub value: Result<(Cid, Option<Bytes>), Error>,
}

/// Everything one commit writes, atomically.
#[derive(Debug, Clone)]
pub struct Commit {
    /// The repository.
    pub repo: String,
    /// The head commit the writer built on (`None`: a new repository).
    /// The commit fails with [`Error::Conflict`] unless it still is.
    pub expected: Option<Cid>,
    /// The new head.
    pub head: Head,
    /// New blocks besides the records' (which come with `records`): the
    /// commit and shard blocks.
    pub blocks: Vec<Block>,
    /// Record index changes.
    pub records: Vec<RecordChange>,
    /// Collection declarations to set, as (collection, opaque bytes).
    pub collections: Vec<(String, Bytes)>,
    /// Field-index changes the commit causes (column mappings, dictionary
    /// entries, bitmap-container merges), applied in the same batch.
    pub index: Vec<WriteOp>,
    /// How the commit log changes besides gaining `head` (an import's
    /// history; nothing else for a write).
    pub history: LogChange,
    /// A firehose event for the commit (opaque bytes): stored under the
    /// next server-wide sequence number in the same atomic batch
    /// ([`PendingCommit::seq`], [`Store::events`]).
    pub event: Option<Bytes>,
}

/// An import's change to a repository's commit log, besides its new head.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogChange {
    /// Commits before the head to enter in the log with it. Their blocks
    /// come in [`Commit::blocks`].
    pub older: Vec<Head>,
    /// Whether the log's present entries go: the repository's history is
    /// replaced by the one imported (a repository that had no records).
    pub replace: bool,
}

/// A commit that is applied (later reads see it) but not yet confirmed
/// durable; see [`Store::stage_commit`].
#[must_use = "await the commit's durability before reporting success"]
pub struct PendingCommit {
    /// The sequence number of the commit's event, if it had one.
    seq: Option<u64>,
    durability: crate::kv::Durability,
    timeout: std::time::Duration,
    /// The store's local directory, checked for writability when the
    /// commit is not durable in time (to name the likely cause).
    local_dir: Option<Arc<std::path::PathBuf>>,
}

impl std::fmt::Debug for PendingCommit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingCommit").finish_non_exhaustive()
    }
}

impl PendingCommit {
    /// The sequence number the commit's event was stored under.
    #[must_use]
    pub fn seq(&self) -> Option<u64> {
        self.seq
    }

    /// Waits until the commit survives a crash.
    ///
    /// # Errors
    ///
    /// [`Error::DurabilityTimeout`] when durability is not confirmed in time
    /// (outcome unknown), or a storage error (nothing acknowledged).
    pub async fn durable(self) -> Result<(), Error> {
        let started = tokio::time::Instant::now();
        let blocked = |dir: &std::path::Path| {
            crate::kv::probe_writable(dir)
                .err()
                .map(|source| Error::DurabilityBlocked {
                    // Whole milliseconds: the message is for people.
                    after: std::time::Duration::from_millis(
                        u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                    ),
                    location: dir.display().to_string(),
                    source,
                })
        };
        let wait = tokio::time::timeout(self.timeout, self.durability.wait());
        let Some(dir) = self.local_dir.as_deref() else {
            return wait
                .await
                .unwrap_or(Err(Error::DurabilityTimeout(self.timeout)));
        };
        // A local directory that cannot take a write (a full disk, a
        // read-only remount) never lets the flush through: said as soon as
        // a probe finds it, rather than after the whole timeout.
        let mut wait = std::pin::pin!(wait);
        let mut probes =
            tokio::time::interval_at(tokio::time::Instant::now() + PROBE_AFTER, PROBE_AFTER);
        loop {
            tokio::select! {
                durable = &mut wait => {
                    return durable.unwrap_or_else(|_| {
                        Err(blocked(dir).unwrap_or(Error::DurabilityTimeout(self.timeout)))
                    });
                }
                _ = probes.tick() => {
                    if let Some(e) = blocked(dir) {
                        return Err(e);
                    }
                }
            }
        }
    }
}

/// How long a commit waits for durability before its local directory is
/// probed, and how often after.
const PROBE_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// The blocks of the records a commit sets.
fn record_blocks(records: &[RecordChange]) -> impl Iterator<Item = &Block> {
    records.iter().filter_map(|r| r.record.as_ref())
}

/// The write that stores `block`.
fn block_put(block: &Block) -> WriteOp {
    WriteOp::Put(block_key(&block.cid()), block.bytes().clone())
}

/// The storage key of a block.
pub(crate) fn block_key(cid: &Cid) -> Vec<u8> {
    BlockKey::new(cid).to_vec()
}

/// The storage key of a block, built on the stack: a get needs no
/// allocation for its key.
pub(crate) struct BlockKey {
    bytes: [u8; BlockKey::MAX_LEN],
    len: usize,
}

impl BlockKey {
    /// The 2-byte prefix and the longest CID bytes a `Cid` can have
    /// (version, codec and hash code as varints of up to 10 bytes, digest
    /// size of up to 2, digest of up to 64).
    const MAX_LEN: usize = 2 + 1 + 10 + 10 + 2 + 64;

    pub(crate) fn new(cid: &Cid) -> Self {
        Self::of_type(RecordType::Block, cid)
    }

    /// The key under which a block stored as a delta is kept.
    pub(crate) fn delta(cid: &Cid) -> Self {
        Self::of_type(RecordType::BlockDelta, cid)
    }

    fn of_type(record_type: RecordType, cid: &Cid) -> Self {
        let mut bytes = [0; Self::MAX_LEN];
        bytes[..2].copy_from_slice(&record_type.prefix().encode());
        let hash = cid.hash();
        let len = match u8::try_from(cid.codec()) {
            // The usual CID, a SHA-256 CIDv1 whose codec is a 1-byte
            // varint, laid out directly (`Cid::write_bytes` goes through
            // `io::Write` a varint at a time).
            Ok(codec)
                if cid.version() == cid::Version::V1
                    && codec < 0x80
                    && hash.code() == SHA2_256
                    && hash.size() == 32 =>
            {
                bytes[2..6].copy_from_slice(&[1, codec, 0x12, 32]);
                bytes[6..38].copy_from_slice(hash.digest());
                38
            }
            _ => {
                let mut rest = &mut bytes[2..];
                // MAX_LEN holds any CID, so writing cannot fail.
                let _ = cid.write_bytes(&mut rest);
                Self::MAX_LEN - rest.len()
            }
        };
        Self { bytes, len }
    }
}

impl std::ops::Deref for BlockKey {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// Default bound on the decoded-shard cache: 256 MiB of shard bytes (the
/// cached shards, and once each the full blocks their deltas are made from).
pub const DEFAULT_SHARD_CACHE_BYTES: usize = 256 << 20;

/// Which writes a read sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum View {
    /// Every applied write, durable or not: what writers and gc build on
    /// (gc must keep a pending commit's blocks).
    Written,
    /// Only durable writes: what a crash would leave, so what clients see.
    Durable,
}

/// datarepo's storage over a [`Kv`].
///
/// Every block read is checked against its CID (corruption is an error
/// naming the CID, never silently wrong data), and decoded shards are cached.
/// Commits are serialized by a lock around the head compare-and-swap, but
/// wait for durability after releasing it, so commits that arrive together
/// share one durable write. Commits run on a Tokio runtime with timers
/// enabled (the durability wait is bounded).
#[derive(Debug)]
pub struct Store<K> {
    kv: K,
    /// Serializes commits; holds the next event sequence number once read
    /// from the store.
    commit_lock: tokio::sync::Mutex<Option<u64>>,
    /// Held shared by [`Store::bulk_commit`] and exclusively by
    /// [`Store::gc`]: blocks written ahead of their commit are unreachable
    /// until it lands, and a collection must not see them in between.
    pub(crate) gc_lock: tokio::sync::RwLock<()>,
    /// Commits a long reader holds on to ([`PinWindow::pin`]), with how
    /// many pins each: collections keep them as they keep retained commits.
    pins: Arc<Mutex<std::collections::HashMap<Cid, usize>>>,
    /// Held shared by each [`PinWindow`] and exclusively by a collection
    /// while it reads its roots: a commit read and pinned in one window
    /// is pinned before the roots are read, or read after them.
    pub(crate) pin_windows: tokio::sync::RwLock<()>,
    /// The blocks commits wrote while a collection runs (`None` when none
    /// does): its sweep spares them, since a commit may write again a block
    /// the collection found unreachable (the same content, the same CID).
    pub(crate) written_during_gc: Mutex<Option<std::collections::HashSet<Cid>>>,
    /// Held by a commit while it notes and applies its writes, and by a
    /// sweep while it filters and applies a batch of deletions: a block is
    /// then either spared by the sweep or written again after it.
    pub(crate) sweep_order: tokio::sync::Mutex<()>,
    /// See [`Store::lock_index_scopes`].
    index_scopes: tokio::sync::Mutex<()>,
    cache: Mutex<ShardCache>,
    durability_timeout: std::time::Duration,
}

/// Anchors (the full blocks shard deltas are changes to) recently read by
/// [`Store::get_shard_block`], for one reader: at most
/// [`AnchorMemo::CAPACITY`], the oldest forgotten first. Anchors are
/// immutable blocks, so a remembered one is never stale.
#[derive(Debug, Default)]
pub struct AnchorMemo {
    anchors: Mutex<(
        foldhash::HashMap<Cid, Bytes>,
        std::collections::VecDeque<Cid>,
    )>,
}

impl AnchorMemo {
    /// Anchors remembered (each at most a shard's size).
    pub const CAPACITY: usize = 64;

    fn get(&self, cid: &Cid) -> Option<Bytes> {
        let guard = self
            .anchors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        guard.0.get(cid).cloned()
    }

    fn insert(&self, cid: Cid, bytes: Bytes) {
        let mut guard = self
            .anchors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (map, order) = &mut *guard;
        if map.insert(cid, bytes).is_none() {
            order.push_back(cid);
            if order.len() > Self::CAPACITY
                && let Some(oldest) = order.pop_front()
            {
                map.remove(&oldest);
            }
        }
    }
}

/// Stored bytes of block `cid` as a block, checked against the CID: a
/// mismatch is stored data gone bad ([`Error::Corrupt`]).
fn stored_block_checked(cid: &Cid, bytes: Bytes) -> Result<Block, Error> {
    Block::verify(*cid, bytes).map_err(|e| match e {
        Error::HashMismatch { cid } => Error::Corrupt { cid },
        e => e,
    })
}

/// See [`Store::pin_window`].
#[derive(Debug)]
pub struct PinWindow<'a> {
    pins: &'a Arc<Mutex<std::collections::HashMap<Cid, usize>>>,
    _roots_wait: tokio::sync::RwLockReadGuard<'a, ()>,
}

impl PinWindow<'_> {
    /// Keeps `commit` (its block, its tree and the tree's records, not
    /// its predecessors) from garbage collection until the pin is
    /// dropped, as if it were a retained commit. Pin only commits read in
    /// this window (see [`Store::pin_window`]).
    pub fn pin(&self, commit: Cid) -> PinnedCommit {
        *self
            .pins
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(commit)
            .or_default() += 1;
        PinnedCommit {
            pins: Arc::clone(self.pins),
            commit,
        }
    }
}

/// A commit kept from garbage collection ([`PinWindow::pin`]) until dropped.
#[derive(Debug)]
#[must_use = "the commit is kept only while the pin lives"]
pub struct PinnedCommit {
    pins: Arc<Mutex<std::collections::HashMap<Cid, usize>>>,
    commit: Cid,
}

impl Drop for PinnedCommit {
    fn drop(&mut self) {
        let mut pins = self
            .pins
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = pins.get_mut(&self.commit) {
            *n -= 1;
            if *n == 0 {
                pins.remove(&self.commit);
            }
        }
    }
}

/// How long a commit waits to be confirmed durable before
/// [`Error::DurabilityTimeout`].
pub const DEFAULT_DURABILITY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

impl<K: Kv> Store<K> {
    /// A store over `kv` with the default shard cache.
    pub fn new(kv: K) -> Self {
        Self::with_cache_bytes(kv, DEFAULT_SHARD_CACHE_BYTES)
    }

    /// A store over `kv` whose shard cache holds at most `limit` bytes.
    pub fn with_cache_bytes(kv: K, limit: usize) -> Self {
        Self {
            kv,
            commit_lock: tokio::sync::Mutex::new(None),
            gc_lock: tokio::sync::RwLock::new(()),
            pins: Arc::default(),
            pin_windows: tokio::sync::RwLock::new(()),
            written_during_gc: Mutex::new(None),
            sweep_order: tokio::sync::Mutex::new(()),
            index_scopes: tokio::sync::Mutex::new(()),
            cache: Mutex::new(ShardCache::new(limit)),
            durability_timeout: DEFAULT_DURABILITY_TIMEOUT,
        }
    }

    /// Sets how long a commit waits to be confirmed durable.
    #[must_use]
    pub fn with_durability_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.durability_timeout = timeout;
        self
    }

    /// Held while a field index is added, from choosing its scope (the
    /// number its keys are stored under, unique in the store) until it is
    /// declared, and while indexes are dropped or rebuilt: two index
    /// builds, of any of the store's repositories, never choose the same
    /// scope, and a build that does not hold a repository's write lock is
    /// the only change to that collection's indexes meanwhile.
    pub async fn lock_index_scopes(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.index_scopes.lock().await
    }

    /// Opens a window in which a long reader reads the commits it will
    /// read for a while (the head, the log) and pins them
    /// ([`PinWindow::pin`]). A collection reads its roots only while no
    /// window is open (it waits for open ones, and a window opened
    /// meanwhile waits for it), so a commit that was the head or retained
    /// when read in a window stays readable until its pin is dropped,
    /// however many commits and collections follow. (A commit read in a
    /// window that a running collection had already decided to drop can
    /// still go: one outside `--keep-last` read from the log.)
    ///
    /// Keep a window open only to read and pin: a collection waits for it.
    pub async fn pin_window(&self) -> PinWindow<'_> {
        PinWindow {
            pins: &self.pins,
            _roots_wait: self.pin_windows.read().await,
        }
    }

    /// The pinned commits.
    pub(crate) fn pinned(&self) -> Vec<Cid> {
        self.pins
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .keys()
            .copied()
            .collect()
    }

    /// The underlying KV store.
    pub fn kv(&self) -> &K {
        &self.kv
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, ShardCache> {
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Updates the shard cache after a commit: drops the shards it
    /// `replaced` (the tree no longer uses them; a later read of one that
    /// another tree shares fetches it again). The commit's new shards were
    /// cached, with how each is stored, when it was staged.
    pub fn forget_shards(&self, replaced: &[Cid]) {
        let mut cache = self.cache();
        for cid in replaced {
            cache.remove(cid);
        }
    }

    /// Stores blocks, each checked against its CID, in one durable write.
    ///
    /// # Errors
    ///
    /// [`Error::HashMismatch`] (nothing is written),
    /// [`Error::DurabilityTimeout`] or a storage error.
    pub async fn put_blocks(&self, blocks: &[(Cid, Bytes)]) -> Result<(), Error> {
        let mut ops = Vec::with_capacity(blocks.len());
        for (cid, bytes) in blocks {
            if !crate::block::verify(cid, bytes)? {
                return Err(Error::HashMismatch { cid: *cid });
            }
            ops.push(WriteOp::Put(block_key(cid), bytes.clone()));
        }
        let durability = {
            let _sweep = self.sweep_order.lock().await;
            self.note_written(blocks.iter().map(|(cid, _)| *cid));
            self.kv.apply(ops).await?
        };
        self.wait_durable(durability).await
    }

    /// Notes blocks being written for a collection that is running.
    fn note_written(&self, cids: impl IntoIterator<Item = Cid>) {
        let mut written = self
            .written_during_gc
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(set) = written.as_mut() {
            set.extend(cids);
        }
    }

    /// Applies `ops` and waits, at most the durability timeout, until they
    /// are durable.
    pub(crate) async fn write_durably(&self, ops: Vec<WriteOp>) -> Result<(), Error> {
        let durability = self.kv.apply(ops).await?;
        self.wait_durable(durability).await
    }

    /// Waits for an applied write to be durable, within the store's bound.
    pub(crate) async fn wait_durable(
        &self,
        durability: crate::kv::Durability,
    ) -> Result<(), Error> {
        PendingCommit {
            seq: None,
            local_dir: self.kv.local_dir(),
            durability,
            timeout: self.durability_timeout,
        }
        .durable()
        .await
    }

    /// A block's bytes, checked against its CID.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] when the stored bytes do not hash to `cid`, or a
    /// storage error.
    pub async fn get_block(&self, cid: &Cid) -> Result<Option<Block>, Error> {
        let Some((bytes, _)) = self.stored_block(cid, false).await? else {
            return Ok(None);
        };
        stored_block_checked(cid, bytes).map(Some)
    }

    /// The block of shard `cid` for a reader that goes through many shard
    /// versions in commit order (a firehose replay): most versions are
    /// stored as deltas, so the delta key is tried first, and the anchors
    /// they are rebuilt from come from `anchors` (the versions of a shard
    /// share one anchor for many commits) or the decoded-shard cache before
    /// the store. Checked against its CID like [`Store::get_block`].
    ///
    /// # Errors
    ///
    /// As [`Store::get_block`].
    pub async fn get_shard_block(
        &self,
        cid: &Cid,
        anchors: &AnchorMemo,
    ) -> Result<Option<Block>, Error> {
        let bytes = match self.kv.get(&BlockKey::delta(cid)).await? {
            None => match self.kv.get(&BlockKey::new(cid)).await? {
                Some(bytes) => bytes,
                None => return Ok(None),
            },
            Some(value) => {
                let (bytes, anchor) = self
                    .apply_delta(cid, &value, |a| {
                        anchors
                            .get(a)
                            .or_else(|| self.cache().get(a).map(|s| s.encoded()))
                    })
                    .await?;
                anchors.insert(anchor.cid, anchor.bytes);
                bytes
            }
        };
        stored_block_checked(cid, bytes).map(Some)
    }

    /// Puts `block`, a new version of a shard, as a change to the full
    /// block its previous version is stored as or changes, when that is
    /// much smaller (`delta.rs`); returns the anchor it is stored against.
    fn delta_put(&self, block: &Block, shard: &Shard, ops: &mut Vec<WriteOp>) -> Option<Anchor> {
        let anchor = shard
            .previous()
            .and_then(|previous| self.cache().anchor_for(&previous))
            .filter(|anchor| anchor.cid != block.cid());
        if let Some(anchor) = anchor
            && let Some(delta) = delta::encode(&anchor.cid, &anchor.bytes, block.bytes())
        {
            ops.push(WriteOp::Put(BlockKey::delta(&block.cid()).to_vec(), delta));
            return Some(anchor);
        }
        ops.push(block_put(block));
        None
    }

    /// The stored bytes of block `cid`, unverified, and the anchor they
    /// were rebuilt from if it is stored as a delta.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] for a delta that does not decode or fit its
    /// anchor, [`Error::MissingAnchor`], or a storage error.
    ///
    /// With `cached`, an anchor in the decoded-shard cache is not read
    /// again; without, everything comes from storage (what a check needs).
    pub(crate) async fn stored_block(
        &self,
        cid: &Cid,
        cached: bool,
    ) -> Result<Option<(Bytes, Option<Anchor>)>, Error> {
        if let Some(bytes) = self.kv.get(&BlockKey::new(cid)).await? {
            return Ok(Some((bytes, None)));
        }
        let Some(value) = self.kv.get(&BlockKey::delta(cid)).await? else {
            return Ok(None);
        };
        let (bytes, anchor) = self
            .apply_delta(cid, &value, |a| {
                cached
                    .then(|| self.cache().get(a).map(|s| s.encoded()))
                    .flatten()
            })
            .await?;
        Ok(Some((bytes, Some(anchor))))
    }

    /// Block `cid` rebuilt from its stored delta `value`, and the anchor it
    /// was rebuilt from: the bytes `known` gives for the anchor's CID, else
    /// those the store holds.
    async fn apply_delta(
        &self,
        cid: &Cid,
        value: &[u8],
        known: impl FnOnce(&Cid) -> Option<Bytes>,
    ) -> Result<(Bytes, Anchor), Error> {
        let corrupt = |_| Error::Corrupt { cid: *cid };
        let delta = delta::Delta::decode(value).map_err(corrupt)?;
        let anchor_bytes = match known(&delta.anchor) {
            Some(bytes) => bytes,
            None => self
                .kv
                .get(&BlockKey::new(&delta.anchor))
                .await?
                .ok_or_else(|| Error::MissingAnchor {
                    cid: *cid,
                    anchor: Box::new(delta.anchor),
                })?,
        };
        let bytes = delta.apply(&anchor_bytes).map_err(corrupt)?;
        let anchor = Anchor {
            cid: delta.anchor,
            bytes: anchor_bytes,
        };
        Ok((Bytes::from(bytes), anchor))
    }

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

    async fn head_in(&self, repo: &str, view: View) -> Result<Option<Head>, Error> {
        match self.kv_get(&records::head_key(repo), view).await? {
            Some(bytes) => Head::decode(&bytes).map(Some),
            None => Ok(None),
        }
    }

    pub(crate) async fn kv_get(&self, key: &[u8], view: View) -> Result<Option<Bytes>, Error> {
        match view {
            View::Written => self.kv.get(key).await,
            View::Durable => self.kv.get_durable(key).await,
        }
    }

    pub(crate) async fn kv_scan(
        &self,
        range: &KeyRange,
        reverse: bool,
        limit: usize,
        view: View,
    ) -> Result<Vec<(Bytes, Bytes)>, Error> {
        match view {
            View::Written => self.kv.scan(range, reverse, limit).await,
            View::Durable => self.kv.scan_durable(range, reverse, limit).await,
        }
    }

    /// Writes a commit atomically and durably: its blocks, the head (if it
    /// still is `commit.expected`), the commit-log entry and the record
    /// index changes, all in one write batch.
    ///
    /// # Errors
    ///
    /// [`Error::Conflict`] when the head moved (nothing is written),
    /// [`Error::DurabilityTimeout`] when durability is not confirmed in time
    /// (outcome unknown), or a storage error (nothing acknowledged). Blocks
    /// are [`Block`]s: their CIDs were checked when they were made.
    pub async fn commit(&self, commit: Commit) -> Result<(), Error> {
        self.stage_commit(commit).await?.durable().await
    }

    /// The first half of [`Store::commit`]: checks and applies the commit
    /// (later reads, and the next compare-and-swap, see it) and returns
    /// without waiting for durability. A caller that serializes its own
    /// commits releases its lock before awaiting [`PendingCommit::durable`],
    /// so that commits arriving together share one durable write.
    ///
    /// # Errors
    ///
    /// [`Error::Conflict`] when the head moved (nothing is written), or a
    /// storage error.
    pub async fn stage_commit(&self, commit: Commit) -> Result<PendingCommit, Error> {
        self.stage(commit, true).await
    }

    /// [`Store::commit`] for a commit too large for one write batch (an
    /// import's). Its blocks, the commit's and its records', are written
    /// first, in batches of about [`Kv::bulk_batch_bytes`] each made
    /// durable; then the head, the commit log, the record index and the
    /// collections change in one atomic batch, as in `commit`, so readers
    /// see all of the new state or none of it. A failed bulk commit (a
    /// conflict, a storage error) leaves the blocks it wrote ahead
    /// unreferenced until the next garbage collection. A collection in this
    /// process waits for bulk commits in progress, and they for it, so none
    /// deletes blocks written ahead before the head that names them lands.
    /// A collection in another process opens the database as its writer,
    /// which fences this one: the bulk commit then fails instead of landing
    /// on deleted blocks.
    ///
    /// Over a store that takes one batch of any size (`bulk_batch_bytes`
    /// is `None`), this is [`Store::commit`]. `progress(written, total)`
    /// follows the blocks written ahead.
    ///
    /// # Errors
    ///
    /// As [`Store::commit`].
    pub async fn bulk_commit(
        &self,
        commit: Commit,
        mut progress: impl FnMut(usize, usize) + Send,
    ) -> Result<(), Error> {
        let total = commit.blocks.len() + record_blocks(&commit.records).count();
        let Some(limit) = self.kv.bulk_batch_bytes() else {
            // One batch: the blocks are written with the state.
            progress(total, total);
            return self.commit(commit).await;
        };
        let _no_gc = self.gc_lock.read().await;
        // Checked again, atomically, with the final batch; checked here so
        // that a stale import writes nothing.
        self.check_head(&commit.repo, commit.expected).await?;
        let blocks = commit.blocks.iter().chain(record_blocks(&commit.records));
        let (mut ops, mut bytes, mut written) = (Vec::new(), 0, 0);
        progress(0, total);
        for block in blocks {
            let op = block_put(block);
            if let WriteOp::Put(key, value) = &op {
                bytes += key.len() + value.len();
            }
            ops.push(op);
            if bytes >= limit {
                written += ops.len();
                self.write_durably(std::mem::take(&mut ops)).await?;
                progress(written, total);
                bytes = 0;
            }
        }
        if !ops.is_empty() {
            self.write_durably(ops).await?;
        }
        progress(total, total);
        self.stage(commit, false).await?.durable().await
    }

    async fn check_head(&self, repo: &str, expected: Option<Cid>) -> Result<(), Error> {
        let actual = self.head(repo).await?.map(|h| h.commit);
        if actual == expected {
            Ok(())
        } else {
            Err(Error::Conflict(Box::new(crate::error::Conflict {
                repo: repo.to_owned(),
                expected,
                actual,
            })))
        }
    }

    /// Checks the head and applies `commit`, its blocks too unless they
    /// were written already (`with_blocks` false).
    async fn stage(&self, commit: Commit, with_blocks: bool) -> Result<PendingCommit, Error> {
        let Commit {
            repo,
            expected,
            head,
            blocks,
            records,
            collections,
            index: index_ops,
            history,
            event,
        } = commit;
        let mut ops = Vec::with_capacity(blocks.len() + 2 * records.len() + collections.len() + 2);
        // The commit's shards and how each is stored, cached once it lands.
        let mut shards = Vec::new();
        // The blocks it writes, for a collection that may be running.
        let mut written = Vec::new();
        if with_blocks {
            written.extend(blocks.iter().chain(record_blocks(&records)).map(Block::cid));
            for block in &blocks {
                let Some(shard) = block.shard() else {
                    ops.push(block_put(block));
                    continue;
                };
                let anchor = self.delta_put(block, shard, &mut ops);
                shards.push((Arc::clone(shard), anchor));
            }
        }
        drop(blocks);
        ops.push(WriteOp::Put(records::head_key(&repo), head.encode()));
        if history.replace {
            for (rev, _) in self
                .commit_log_in(&repo, false, usize::MAX, View::Written)
                .await?
            {
                ops.push(WriteOp::Delete(records::commit_log_key(&repo, rev)));
            }
        }
        for entry in history.older.iter().chain([&head]) {
            ops.push(WriteOp::Put(
                records::commit_log_key(&repo, entry.rev),
                Bytes::from(entry.commit.to_bytes()),
            ));
        }
        // The records' blocks, then their index rows: index keys of a
        // commit often come in order, and a store that sorts a batch finds
        // them as one run. Each change is dropped as it is turned into
        // operations, so that a large commit's memory serves its own keys.
        let mut index = Vec::with_capacity(records.len());
        for r in records {
            let key = records::record_index_key(&repo, &r.collection, &r.rkey);
            match r.record {
                Some(block) => {
                    index.push(WriteOp::Put(key, index_value(&block)));
                    if with_blocks {
                        ops.push(block_put(&block));
                    }
                }
                None => index.push(WriteOp::Delete(key)),
            }
        }
        ops.append(&mut index);
        drop(index);
        for (collection, bytes) in collections {
            ops.push(WriteOp::Put(
                records::collection_key(&repo, &collection),
                bytes,
            ));
        }
        ops.extend(index_ops);
        let (durability, seq) = {
            let mut next_seq = self.commit_lock.lock().await;
            self.check_head(&repo, expected).await?;
            let seq = match event {
                Some(bytes) => {
                    let seq = match *next_seq {
                        Some(seq) => seq,
                        None => self
                            .last_event_seq(View::Written)
                            .await?
                            .map_or(1, |s| s + 1),
                    };
                    ops.push(WriteOp::Put(records::event_key(seq), bytes));
                    Some(seq)
                }
                None => None,
            };
            let _sweep = self.sweep_order.lock().await;
            self.note_written(written);
            let durability = self.kv.apply(ops).await?;
            if let Some(seq) = seq {
                *next_seq = Some(seq + 1);
            }
            (durability, seq)
        };
        let mut cache = self.cache();
        for (shard, anchor) in shards {
            cache.insert(shard, anchor);
        }
        drop(cache);
        Ok(PendingCommit {
            seq,
            local_dir: self.kv.local_dir(),
            durability,
            timeout: self.durability_timeout,
        })
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

    /// Sets a collection declaration (opaque bytes) durably, outside any commit.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn put_collection(
        &self,
        repo: &str,
        collection: &str,
        bytes: Bytes,
    ) -> Result<(), Error> {
        self.write_durably(vec![WriteOp::Put(
            records::collection_key(repo, collection),
            bytes,
        )])
        .await
    }

    /// Sets (`Some`) or removes (`None`) a Lexicon document that declares
    /// no collection, durably, outside any commit.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn put_lexicon(
        &self,
        repo: &str,
        nsid: &str,
        json: Option<Bytes>,
    ) -> Result<(), Error> {
        let key = records::lexicon_key(repo, nsid);
        self.write_durably(vec![match json {
            Some(bytes) => WriteOp::Put(key, bytes),
            None => WriteOp::Delete(key),
        }])
        .await
    }

    /// A repository's Lexicon documents that declare no collection, as
    /// (NSID, the document's JSON), in NSID order.
    ///
    /// # Errors
    ///
    /// [`Error::Malformed`] or a storage error.
    pub async fn lexicons(&self, repo: &str) -> Result<Vec<(String, Bytes)>, Error> {
        let rows = self
            .kv
            .scan(&records::lexicon_range(repo), false, usize::MAX)
            .await?;
        rows.into_iter()
            .map(|(k, v)| match records::decode_key(&k) {
                Ok(records::DecodedKey::Lexicon { nsid, .. }) => Ok((nsid.into_owned(), v)),
                _ => Err(Error::Malformed {
                    what: "lexicon key",
                    reason: "not a lexicon key".into(),
                }),
            })
            .collect()
    }

    /// Sets a repository's signing keys (opaque bytes) durably, outside any
    /// commit.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn put_signing_keys(&self, repo: &str, bytes: Bytes) -> Result<(), Error> {
        self.write_durably(vec![WriteOp::Put(records::signing_keys_key(repo), bytes)])
            .await
    }

    /// A repository's signing keys, as [`Store::put_signing_keys`] set them.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn signing_keys(&self, repo: &str) -> Result<Option<Bytes>, Error> {
        self.kv.get(&records::signing_keys_key(repo)).await
    }

    async fn last_event_seq(&self, view: View) -> Result<Option<u64>, Error> {
        let last = self
            .kv_scan(&RecordType::Event.range(), true, 1, view)
            .await?;
        last.first()
            .map(|(key, _)| match records::decode_key(key) {
                Ok(records::DecodedKey::Event { seq }) => Ok(seq),
                _ => Err(Error::Malformed {
                    what: "event key",
                    reason: "not an event key".into(),
                }),
            })
            .transpose()
    }

    /// The sequence number of the newest durable event, if any.
    ///
    /// # Errors
    ///
    /// [`Error::Malformed`] or a storage error.
    pub async fn newest_event(&self) -> Result<Option<u64>, Error> {
        self.last_event_seq(View::Durable).await
    }

    /// Up to `limit` durable events with sequence numbers above `after`, in
    /// order, as (seq, bytes).
    ///
    /// # Errors
    ///
    /// [`Error::Malformed`] or a storage error.
    pub async fn events(&self, after: u64, limit: usize) -> Result<Vec<(u64, Bytes)>, Error> {
        let Some(first) = after.checked_add(1) else {
            return Ok(Vec::new());
        };
        let range = KeyRange {
            start: records::event_key(first),
            end: RecordType::Event.range().end,
        };
        self.kv_scan(&range, false, limit, View::Durable)
            .await?
            .into_iter()
            .map(|(key, value)| match records::decode_key(&key) {
                Ok(records::DecodedKey::Event { seq }) => Ok((seq, value)),
                _ => Err(Error::Malformed {
                    what: "event key",
                    reason: "not an event key".into(),
                }),
            })
            .collect()
    }

    /// Deletes the events with sequence numbers up to `through`, durably
    /// (the firehose's retention).
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn delete_events_through(&self, through: u64) -> Result<u64, Error> {
        let mut deleted = 0;
        loop {
            let range = KeyRange {
                start: RecordType::Event.range().start,
                end: Some(records::event_key(through.saturating_add(1))),
            };
            let keys = self.kv_scan(&range, false, 10_000, View::Written).await?;
            if keys.is_empty() {
                return Ok(deleted);
            }
            deleted += keys.len() as u64;
            self.write_durably(
                keys.into_iter()
                    .map(|(k, _)| WriteOp::Delete(k.to_vec()))
                    .collect(),
            )
            .await?;
        }
    }

    /// A repository's collection declarations as (collection, bytes), in
    /// collection order.
    ///
    /// # Errors
    ///
    /// [`Error::Malformed`] or a storage error.
    pub async fn collections(&self, repo: &str) -> Result<Vec<(String, Bytes)>, Error> {
        let rows = self
            .kv
            .scan(&records::collection_range(repo), false, usize::MAX)
            .await?;
        rows.into_iter()
            .map(|(k, v)| match records::decode_key(&k) {
                Ok(records::DecodedKey::Collection { collection, .. }) => {
                    Ok((collection.into_owned(), v))
                }
                _ => Err(Error::Malformed {
                    what: "collection key",
                    reason: "not a collection key".into(),
                }),
            })
            .collect()
    }

    /// Up to `limit` records of a collection as (rkey, CID), in rkey order
    /// (descending with `reverse`), strictly after `cursor` in that order.
    ///
    /// # Errors
    ///
    /// [`Error::Malformed`] or a storage error.
    pub async fn list_records(
        &self,
        repo: &str,
        collection: &str,
        cursor: Option<&str>,
        reverse: bool,
        limit: usize,
    ) -> Result<Vec<(String, Cid)>, Error> {
        let rows = self
            .index_rows(repo, collection, cursor, reverse, limit, View::Durable)
            .await?;
        rows.into_iter()
            .map(|(rkey, value)| Ok((rkey, parse_index_value(&value)?.0)))
            .collect()
    }

    /// Like [`Store::list_records`], with each record's block (checked
    /// against its CID): one range scan for records kept inline in the
    /// index, and concurrent block reads for the others.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`], [`Error::Malformed`] or a storage error.
    pub async fn list_record_blocks(
        &self,
        repo: &str,
        collection: &str,
        cursor: Option<&str>,
        reverse: bool,
        limit: usize,
    ) -> Result<Vec<(String, Block)>, Error> {
        self.record_blocks_in(repo, collection, cursor, reverse, limit, View::Durable)
            .await
    }

    /// [`Store::list_record_blocks`] as writers see the store (a commit
    /// applied but not yet durable included): what an index build reads,
    /// with commits held off.
    ///
    /// # Errors
    ///
    /// As [`Store::list_record_blocks`].
    pub async fn list_written_record_blocks(
        &self,
        repo: &str,
        collection: &str,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Block)>, Error> {
        self.record_blocks_in(repo, collection, cursor, false, limit, View::Written)
            .await
    }

    async fn record_blocks_in(
        &self,
        repo: &str,
        collection: &str,
        cursor: Option<&str>,
        reverse: bool,
        limit: usize,
        view: View,
    ) -> Result<Vec<(String, Block)>, Error> {
        let rows = self
            .index_rows(repo, collection, cursor, reverse, limit, view)
            .await?;
        // Inline records are checked here; the others are read together.
        let rows = rows
            .into_iter()
            .map(|(rkey, value)| Ok((rkey, inline_block(&value)?)))
            .collect::<Result<Vec<_>, Error>>()?;
        let stored = rows.iter().filter_map(|(_, b)| b.as_ref().err());
        let mut fetched = futures::future::try_join_all(stored.map(|cid| self.indexed_block(*cid)))
            .await?
            .into_iter();
        rows.into_iter()
            .map(|(rkey, block)| match block {
                Ok(block) => Ok((rkey, block)),
                // One fetched block per `Err`, in order.
                Err(cid) => {
                    fetched
                        .next()
                        .map(|block| (rkey, block))
                        .ok_or_else(|| Error::Malformed {
                            what: "record index entry",
                            reason: format!("no block read for {cid}"),
                        })
                }
            })
            .collect()
    }

    /// Up to `limit` record-index rows of a repository, every collection,
    /// in key order (by collection, then rkey), starting after the row
    /// whose storage key is `after`; read as a reader sees the store. Each
    /// row is decoded on its own ([`IndexRow`]), so a malformed row does
    /// not hide the others.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn record_index_rows(
        &self,
        repo: &str,
        after: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<IndexRow>, Error> {
        let mut range = records::repo_record_index_range(repo);
        if let Some(key) = after {
            // The smallest key after that row's: append a zero byte.
            range.start = [key, &[0]].concat();
        }
        let rows = self.kv_scan(&range, false, limit, View::Durable).await?;
        Ok(rows
            .into_iter()
            .map(|(key, value)| {
                let malformed = |reason: String| Error::Malformed {
                    what: "record index entry",
                    reason,
                };
                let path = match records::decode_key(&key) {
                    Ok(records::DecodedKey::RecordIndex {
                        collection, rkey, ..
                    }) => Ok((collection.into_owned(), rkey.into_owned())),
                    Ok(_) => Err(malformed("not a record index key".into())),
                    Err(e) => Err(malformed(format!("its key: {e}"))),
                };
                IndexRow {
                    path,
                    value: parse_index_value(&value),
                    key,
                }
            })
            .collect())
    }

    async fn index_block(&self, value: &Bytes) -> Result<Block, Error> {
        match inline_block(value)? {
            Ok(block) => Ok(block),
            Err(cid) => self.indexed_block(cid).await,
        }
    }

    /// The block a record index entry names (not kept inline).
    async fn indexed_block(&self, cid: Cid) -> Result<Block, Error> {
        self.get_block(&cid).await?.ok_or_else(|| Error::Malformed {
            what: "record index entry",
            reason: format!("names block {cid}, which is not stored"),
        })
    }

    async fn index_rows(
        &self,
        repo: &str,
        collection: &str,
        cursor: Option<&str>,
        reverse: bool,
        limit: usize,
        view: View,
    ) -> Result<Vec<(String, Bytes)>, Error> {
        let mut range = records::record_index_range(repo, collection);
        if let Some(c) = cursor {
            let key = records::record_index_key(repo, collection, c);
            if reverse {
                range.end = Some(key);
            } else {
                // The smallest key after `key`: append a zero byte.
                let mut after = key;
                after.push(0);
                range.start = after;
            }
        }
        let rows = self.kv_scan(&range, reverse, limit, view).await?;
        rows.into_iter()
            .map(|(k, v)| {
                let decoded = records::decode_key(&k).map_err(|e| Error::Malformed {
                    what: "record index entry",
                    reason: e.to_string(),
                })?;
                let records::DecodedKey::RecordIndex { rkey, .. } = decoded else {
                    return Err(Error::Malformed {
                        what: "record index entry",
                        reason: "not a record index key".into(),
                    });
                };
                Ok((rkey.into_owned(), v))
            })
            .collect()
    }

    /// A record's CID from the index.
    ///
    /// # Errors
    ///
    /// [`Error::Malformed`] or a storage error.
    pub async fn record(
        &self,
        repo: &str,
        collection: &str,
        rkey: &str,
    ) -> Result<Option<Cid>, Error> {
        match self.index_entry(repo, collection, rkey).await? {
            Some(v) => Ok(Some(parse_index_value(&v)?.0)),
            None => Ok(None),
        }
    }

    async fn index_entry(
        &self,
        repo: &str,
        collection: &str,
        rkey: &str,
    ) -> Result<Option<Bytes>, Error> {
        self.kv_get(
            &records::record_index_key(repo, collection, rkey),
            View::Durable,
        )
        .await
    }

    /// A record's block (checked against its CID), in one lookup when the
    /// record is kept inline in the index.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`], [`Error::Malformed`] or a storage error.
    pub async fn record_block(
        &self,
        repo: &str,
        collection: &str,
        rkey: &str,
    ) -> Result<Option<Block>, Error> {
        match self.index_entry(repo, collection, rkey).await? {
            Some(v) => self.index_block(&v).await.map(Some),
            None => Ok(None),
        }
    }

    /// [`Store::record_block`] as writers see the store: a commit that is
    /// applied but not yet durable included (field-index queries read this
    /// view, the one their bitmaps are kept in).
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`], [`Error::Malformed`] or a storage error.
    pub async fn written_record_block(
        &self,
        repo: &str,
        collection: &str,
        rkey: &str,
    ) -> Result<Option<Block>, Error> {
        let key = records::record_index_key(repo, collection, rkey);
        match self.kv_get(&key, View::Written).await? {
            Some(v) => self.index_block(&v).await.map(Some),
            None => Ok(None),
        }
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

    async fn commit_log_range_in(
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

impl<K: Kv> Store<K> {
    /// A shard read from storage, bypassing (and not filling) the
    /// decoded-shard cache: what is stored, checked against `cid`.
    ///
    /// # Errors
    ///
    /// [`pail::Error::MissingBlock`], [`Error::Corrupt`] (as
    /// [`pail::Error::Store`]) when the bytes do not hash to `cid`,
    /// [`pail::Error::InvalidShard`] for a valid block that is not a shard,
    /// or a storage error.
    pub async fn read_shard(&self, cid: &Cid) -> Result<Shard, pail::Error> {
        self.read_stored_shard(cid, false)
            .await
            .map(|(shard, _)| shard)
    }

    /// [`Store::read_shard`], and the anchor it was rebuilt from if it is
    /// stored as a delta.
    async fn read_stored_shard(
        &self,
        cid: &Cid,
        cached: bool,
    ) -> Result<(Shard, Option<Anchor>), pail::Error> {
        let store_err = |e: Error| pail::Error::Store(Box::new(e));
        let (bytes, anchor) = self
            .stored_block(cid, cached)
            .await
            .map_err(store_err)?
            .ok_or(pail::Error::MissingBlock(*cid))?;
        // Decoding hashes the bytes to compute the shard's CID, so comparing
        // it with `cid` is the verification: each shard is hashed once.
        let corrupt = || store_err(Error::Corrupt { cid: *cid });
        match Shard::decode(&bytes) {
            Ok(shard) if shard.cid() == *cid => Ok((shard, anchor)),
            Ok(_) => Err(corrupt()),
            // Undecodable bytes are corrupt unless they are a valid block
            // that is simply not a shard.
            Err(e) => Err(if crate::block::verify(cid, &bytes).map_err(store_err)? {
                e
            } else {
                corrupt()
            }),
        }
    }
}

impl<K: Kv> Store<K> {
    /// The shard `cid` if the decoded-shard cache holds it (a recent
    /// commit's shards do), without reading the store (a miss adds
    /// nothing to the cache).
    #[must_use]
    pub fn cached_shard(&self, cid: &Cid) -> Option<Arc<Shard>> {
        self.cache().get(cid)
    }
}

impl<K: Kv> ShardFetcher for Store<K> {
    async fn get_shard(&self, cid: &Cid) -> Result<Arc<Shard>, pail::Error> {
        if let Some(shard) = self.cache().get(cid) {
            return Ok(shard);
        }
        let (shard, anchor) = self.read_stored_shard(cid, true).await?;
        let shard = Arc::new(shard);
        self.cache().insert(Arc::clone(&shard), anchor);
        Ok(shard)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pins of one commit are counted: it stays pinned until the last goes.
    #[tokio::test]
    async fn a_commit_stays_pinned_until_its_last_pin_goes() {
        use multihash_codetable::{Code, MultihashDigest};
        let store = Store::new(crate::kv::MemoryKv::new());
        let (one, two) = (
            Cid::new_v1(0x71, Code::Sha2_256.digest(b"one")),
            Cid::new_v1(0x71, Code::Sha2_256.digest(b"two")),
        );
        let window = store.pin_window().await;
        let (a, b, c) = (window.pin(one), window.pin(one), window.pin(two));
        drop(window);
        let pinned = |store: &Store<crate::kv::MemoryKv>| {
            let mut p = store.pinned();
            p.sort();
            p
        };
        let mut both = vec![one, two];
        both.sort();
        assert_eq!(pinned(&store), both);
        drop(a);
        assert_eq!(pinned(&store), both);
        drop(c);
        assert_eq!(pinned(&store), vec![one]);
        drop(b);
        assert!(pinned(&store).is_empty());
    }

    /// Block keys built on the stack are the keys `keycodec` defines, for
    /// the usual CIDs (laid out directly) and any other (written as CID
    /// bytes), up to the largest a `Cid` can hold.
    #[test]
    fn block_keys_are_keycodec_block_keys() {
        use multihash_codetable::{Code, MultihashDigest};
        let largest = Cid::new_v1(
            u64::MAX,
            cid::multihash::Multihash::wrap(u64::MAX, &[7; 64]).unwrap(),
        );
        let cids = [
            Cid::new_v1(0x71, Code::Sha2_256.digest(b"a record")),
            Cid::new_v1(0x55, Code::Sha2_256.digest(b"raw bytes")),
            Cid::new_v1(0x7f, Code::Sha2_256.digest(b"largest 1-byte codec")),
            Cid::new_v1(0x80, Code::Sha2_256.digest(b"smallest 2-byte codec")),
            Cid::new_v1(0x71, Code::Sha2_512.digest(b"another hash")),
            Cid::new_v1(0x71, Code::Sha2_256.digest(b"x").truncate(20)),
            Cid::new_v0(Code::Sha2_256.digest(b"version 0")).unwrap(),
            largest,
        ];
        for cid in cids {
            let expected = records::block_key(&cid.to_bytes());
            assert_eq!(&*BlockKey::new(&cid), &expected[..], "{cid}");
            assert_eq!(block_key(&cid), expected);
        }
    }

    /// The direct parse of SHA-256 CIDv1s reads what the general CID
    /// reader reads, and anything else still goes to the general reader.
    #[test]
    fn index_values_parse_as_the_cid_reader_reads_them() {
        use multihash_codetable::{Code, MultihashDigest};
        let cids = [
            Cid::new_v1(0x71, Code::Sha2_256.digest(b"a record")),
            Cid::new_v1(0x55, Code::Sha2_256.digest(b"raw bytes")),
            Cid::new_v1(0x71, Code::Sha2_512.digest(b"another hash")),
            Cid::new_v1(0x0129, Code::Sha2_256.digest(b"a two-byte codec")),
            Cid::new_v0(Code::Sha2_256.digest(b"version 0")).unwrap(),
        ];
        for cid in cids {
            for inline in [&b""[..], b"x", &[0xa1; 200]] {
                let mut value = cid.to_bytes();
                value.extend_from_slice(inline);
                let (parsed, rest) = parse_index_value(&Bytes::from(value)).unwrap();
                assert_eq!(parsed, cid);
                assert_eq!(rest.as_deref().unwrap_or_default(), inline);
            }
            // Cut short: an error, never a panic.
            let bytes = cid.to_bytes();
            for len in 0..bytes.len() {
                assert!(parse_index_value(&Bytes::copy_from_slice(&bytes[..len])).is_err());
            }
        }
    }
}
