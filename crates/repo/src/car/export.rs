//! CAR v1 export: a whole repository, or one record with its proof.
//!
//! A whole export streams the head commit, then the Pail in pre-order:
//! each shard, then for each of its entries in key order the entry's record
//! and then the shard it links to. Each block is written once. Only the
//! path from the root to the current shard is held in memory (plus the set
//! of CIDs already written).

use std::sync::{Arc, Mutex};

use cid::Cid;
use foldhash::HashSet;
use pail::{Shard, ShardFetcher};
use rkey::Tid;
use store::{Block, Kv, Store};
use tokio::io::AsyncWrite;

use crate::{
    car::declarations::{
        AccountBackup, DECLARATIONS_TYPE, Declarations, DeclaredCollection, DeclaredIndex,
        DeclaredKeys,
    },
    error::Error,
    record::is_supported,
    repository::head::load_commit,
    repository::reads::records_hint,
    repository::state::Repository,
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

    /// Makes room for `n` more CIDs at once, if it can be had: a set that
    /// grows by doubling holds the old and the new table together at each
    /// step (half again its size, at the largest step).
    fn reserve(&mut self, n: usize) {
        let _ = self.sha256.try_reserve(n);
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
    async fn finish(
        self,
        head: &crate::repository::head::HeadInfo,
    ) -> Result<(W, ExportReport), Error> {
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
                // A block per record, and a shard per few dozen records.
                let records = records_hint(store, self.id()).await;
                w.seen.reserve(records + records / 32);
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
    /// records it added. [`Repos::import_car`](crate::repository::repos::Repos::import_car) restores all of it: the
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
        let account = self.account_backup().await?;
        Ok(Declarations {
            kind: DECLARATIONS_TYPE.to_owned(),
            repo: self.id().to_owned(),
            collections,
            indexes,
            lexicons,
            keys: Some(DeclaredKeys {
                current: keys.current.map(|c| c.key.did_key()),
                known: keys
                    .known
                    .iter()
                    .map(crate::signing::PublicKey::did_key)
                    .collect(),
            }),
            account,
        })
    }

    /// The account that owns the repository, as stored, if any.
    async fn account_backup(&self) -> Result<Option<AccountBackup>, Error> {
        let kv = self.store.kv();
        let Some(record) = kv.get(&keycodec::records::account_key(&self.id)).await? else {
            return Ok(None);
        };
        let app_passwords = kv
            .scan(
                &keycodec::records::app_passwords_range(&self.id),
                false,
                usize::MAX,
            )
            .await?
            .into_iter()
            .map(|(_, v)| String::from_utf8_lossy(&v).into_owned())
            .collect();
        Ok(Some(AccountBackup {
            record: String::from_utf8_lossy(&record).into_owned(),
            app_passwords,
        }))
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
        let key = crate::repository::paths::pail_key(collection, rkey);
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
