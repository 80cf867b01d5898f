//! Garbage collection of blocks that no retained commit reaches.
//!
//! A commit's link to its predecessor does not keep the predecessor alive:
//! with [`Retention::Last`], the oldest retained commit's `prev` may name a
//! collected commit (history is truncated there), and the commit log keeps
//! only the retained commits.
//!
//! Safe while writes continue: the candidate blocks are listed *before* the
//! roots are read, so any block written by a commit that lands later is not
//! a candidate, and any commit that landed earlier is a root. A commit is
//! built on the current head, so the old blocks it reuses are reachable from
//! a root that was read. Commits pinned by a long reader
//! ([`Store::pin_window`]: read and pinned in a window the roots are not
//! read during) are roots too. A
//! bulk commit writes its blocks before its head
//! ([`Store::bulk_commit`]); a collection and bulk commits in one process
//! exclude each other; a collection in another process fences this
//! process's writer, so a bulk commit in progress fails instead of landing.
//!
//! A commit may write again, with the same content, a block the collection
//! found unreachable; the sweep spares every block written while it runs
//! (`Store::written_during_gc`).
//!
//! A reachable block stored as a delta keeps its anchor (a full block),
//! whose own links are not followed. A commit that lands after the roots
//! were read anchors its deltas on a shard of a marked tree, on that
//! shard's anchor, or on a block written after the listing: all kept.

mod known;

use std::collections::{HashMap, HashSet};

use cid::Cid;
use ipld_core::ipld::Ipld;
use keycodec::{KeyRange, RecordType, records};

use known::{Content, Known, cid_bytes};
use roaring::RoaringBitmap;

use crate::{
    error::Error,
    kv::interface::Kv,
    kv::interface::WriteOp,
    store::state::{Store, View},
};

/// Which commits keep their blocks alive.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Retention {
    /// Every commit in every repository's commit log.
    #[default]
    All,
    /// The newest `n` commits (at least 1: the head) of each repository;
    /// older commits leave the commit log.
    Last(usize),
}

/// How far a collection is, passed to its progress callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GcProgress {
    /// Listing the stored blocks (and reading their links): so many so far.
    Listing {
        /// Blocks listed so far.
        listed: usize,
    },
    /// Marking what the retained commits reach: so many blocks so far.
    Marking {
        /// Blocks found reachable so far.
        reached: usize,
    },
    /// Deleting the unreachable blocks: `done` of `total`.
    Sweeping {
        /// Blocks deleted so far.
        done: usize,
        /// Blocks to delete.
        total: usize,
    },
}

/// What a collection did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GcReport {
    /// Blocks stored when the collection started.
    pub listed: usize,
    /// Blocks reachable from retained commits.
    pub reachable: usize,
    /// Blocks kept though unreachable: the anchors of reachable blocks
    /// stored as deltas.
    pub anchors: usize,
    /// Blocks deleted.
    pub deleted: usize,
    /// Bytes freed.
    pub bytes_freed: u64,
    /// Links to blocks that were not stored (nothing to keep alive).
    pub missing: usize,
    /// Commit-log entries removed: those of commits older than the
    /// retained ones, whose blocks went with them.
    pub commits_dropped: usize,
}

/// What a collection does besides its default (every repository's
/// retention, deleting what it finds).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct GcOptions {
    /// Which commits stay in each log.
    pub retention: Retention,
    /// Apply `retention` to this repository only (the others keep every
    /// commit). Blocks no repository reaches are collected whichever wrote
    /// them: a block belongs to no repository, it is shared by content.
    pub repo: Option<String>,
    /// Report what would be dropped and deleted, changing nothing.
    pub dry_run: bool,
}

impl GcOptions {
    /// Options with this retention.
    pub fn new(retention: Retention) -> Self {
        Self {
            retention,
            ..Self::default()
        }
    }

    /// Retention for `repo` only.
    #[must_use]
    pub fn repo(mut self, repo: impl Into<String>) -> Self {
        self.repo = Some(repo.into());
        self
    }

    /// A dry run.
    #[must_use]
    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }
}

const DAG_CBOR: u64 = 0x71;
const PAGE: usize = 4096;

/// How many links the listing keeps (4 bytes each: 64 MiB). Past it,
/// listed dag-cbor blocks are neither checked nor decoded, and those that
/// turn out reachable are read again by CID while marking. A live
/// repository's links fit (about one per record); a store full of
/// superseded shard versions would otherwise need memory in proportion to
/// all of them.
const LISTED_LINKS_BUDGET: usize = 16_000_000;

/// What reading a listed block finds: its content and its links.
fn read_listed(cid: &Cid, bytes: &[u8]) -> (Content, Vec<Cid>) {
    if cid.codec() != DAG_CBOR {
        return (Content::Leaf, Vec::new());
    }
    if !matches!(crate::block::verify(cid, bytes), Ok(true)) {
        return (Content::Corrupt, Vec::new());
    }
    let links = links_of(bytes, false);
    if links.is_empty() {
        (Content::Leaf, links)
    } else {
        (Content::Links, links)
    }
}

/// The CID a block key names, if it is a block key as datarepo writes them.
fn block_cid(key: &[u8]) -> Option<Cid> {
    let records::DecodedKey::Block { cid } = records::decode_key(key).ok()? else {
        return None;
    };
    let cid = Cid::try_from(cid).ok()?;
    (*crate::store::keys::BlockKey::new(&cid) == *key).then_some(cid)
}

/// The CID a block-delta key names, if it is one as datarepo writes them.
fn delta_cid(key: &[u8]) -> Option<Cid> {
    let records::DecodedKey::BlockDelta { cid } = records::decode_key(key).ok()? else {
        return None;
    };
    let cid = Cid::try_from(cid).ok()?;
    (*crate::store::keys::BlockKey::delta(&cid) == *key).then_some(cid)
}

/// The links of a dag-cbor block (none if it does not decode); for a
/// commit (`is_commit`), all but `prev`.
fn links_of(bytes: &[u8], is_commit: bool) -> Vec<Cid> {
    let mut found = Vec::new();
    if let Ok(mut ipld) = serde_ipld_dagcbor::from_slice::<Ipld>(bytes) {
        if is_commit && let Ipld::Map(commit) = &mut ipld {
            commit.remove("prev");
        }
        links(&ipld, &mut found);
    }
    found
}

fn links(ipld: &Ipld, out: &mut Vec<Cid>) {
    match ipld {
        Ipld::Link(cid) => out.push(*cid),
        Ipld::List(items) => items.iter().for_each(|i| links(i, out)),
        Ipld::Map(map) => map.values().for_each(|v| links(v, out)),
        _ => {}
    }
}

/// While alive, commits note the blocks they write for the running
/// collection's sweep (`Store::written_during_gc`).
struct NotingWrites<'a> {
    written: &'a std::sync::Mutex<Option<HashSet<Cid>>>,
}

impl<'a> NotingWrites<'a> {
    fn start<K>(store: &'a Store<K>) -> Self {
        let written = &store.written_during_gc;
        *written
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(HashSet::new());
        Self { written }
    }
}

impl Drop for NotingWrites<'_> {
    fn drop(&mut self) {
        *self
            .written
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    }
}

impl<K: Kv> Store<K> {
    /// Calls `f` with every stored entry of `record_type`, a page at a
    /// time, letting the tasks sharing this thread run between pages (a
    /// page of checked and decoded blocks is CPU work).
    async fn for_each_page(
        &self,
        record_type: RecordType,
        mut f: impl FnMut(&[(bytes::Bytes, bytes::Bytes)]),
    ) -> Result<(), Error> {
        let mut range = record_type.range();
        loop {
            let page = self.kv().scan(&range, false, PAGE).await?;
            let Some((last, _)) = page.last() else {
                return Ok(());
            };
            let mut next = last.to_vec();
            next.push(0);
            f(&page);
            if page.len() < PAGE {
                return Ok(());
            }
            tokio::task::yield_now().await;
            range = KeyRange {
                start: next,
                end: range.end,
            };
        }
    }

    /// Deletes every block that no retained commit reaches (following every
    /// link of every dag-cbor block), calling `progress` as it goes.
    ///
    /// # Errors
    ///
    /// A storage error ([`Error::DurabilityTimeout`] when a batch of
    /// deletions is not confirmed durable in time), or [`Error::Corrupt`]
    /// for a reachable block whose bytes do not match its CID (nothing is
    /// deleted then).
    pub async fn gc(
        &self,
        retention: Retention,
        progress: impl FnMut(GcProgress),
    ) -> Result<GcReport, Error> {
        self.gc_with(
            &GcOptions {
                retention,
                ..GcOptions::default()
            },
            progress,
        )
        .await
    }

    /// [`Store::gc`] with options: retention for one repository only, or
    /// a dry run.
    ///
    /// # Errors
    ///
    /// As [`Store::gc`].
    pub async fn gc_with(
        &self,
        options: &GcOptions,
        progress: impl FnMut(GcProgress),
    ) -> Result<GcReport, Error> {
        self.gc_keeping_links(options, LISTED_LINKS_BUDGET, progress)
            .await
    }

    /// [`Store::gc_with`], keeping at most `links_budget` links from the
    /// listing.
    async fn gc_keeping_links(
        &self,
        options: &GcOptions,
        links_budget: usize,
        mut progress: impl FnMut(GcProgress),
    ) -> Result<GcReport, Error> {
        let retention = options.retention;
        let _no_bulk_commits = self.gc_lock.write().await;
        let _noting = NotingWrites::start(self);
        // 1. The candidates: every block stored now. Their bytes come with
        // the listing (a range scan), so dag-cbor blocks are checked and
        // their links read here, rather than each fetched again by CID
        // while marking (1,000,000 point reads took most of a collection).
        let mut known = Known::default();
        let mut listed = 0usize;
        let mut stray: Vec<(Vec<u8>, u64)> = Vec::new();
        let mut link_ids: Vec<u32> = Vec::new();
        let mut failed: Option<Error> = None;
        self.for_each_page(RecordType::Block, |page| {
            progress(GcProgress::Listing {
                listed: listed + stray.len(),
            });
            for (key, bytes) in page {
                if failed.is_some() {
                    return;
                }
                let len = bytes.len() as u64;
                let Some(cid) = block_cid(key) else {
                    // Not a key datarepo writes: nothing can reach it.
                    stray.push((key.to_vec(), len));
                    continue;
                };
                let (content, links) = if known.links_kept() < links_budget {
                    read_listed(&cid, bytes)
                } else if cid.codec() == DAG_CBOR {
                    (Content::Unread, Vec::new())
                } else {
                    (Content::Leaf, Vec::new())
                };
                let noted = known.id_of_bytes(cid_bytes(key)).and_then(|id| {
                    link_ids.clear();
                    for link in &links {
                        link_ids.push(known.id(link)?);
                    }
                    known.list(id, len, content, &link_ids)
                });
                match noted {
                    Ok(()) => listed += 1,
                    Err(e) => failed = Some(e),
                }
            }
        })
        .await?;
        if let Some(e) = failed {
            return Err(e);
        }
        // The blocks stored as deltas, by id: their stored lengths. The
        // reachable ones are read by CID when marking, which names their
        // anchors.
        let mut deltas: HashMap<u32, u64, foldhash::fast::FixedState> = HashMap::default();
        self.for_each_page(RecordType::BlockDelta, |page| {
            for (key, value) in page {
                if failed.is_some() {
                    return;
                }
                let len = value.len() as u64;
                if delta_cid(key).is_none() {
                    stray.push((key.to_vec(), len));
                    continue;
                }
                match known.id_of_bytes(cid_bytes(key)) {
                    Ok(id) => {
                        deltas.insert(id, len);
                    }
                    Err(e) => failed = Some(e),
                }
            }
            progress(GcProgress::Listing {
                listed: listed + deltas.len() + stray.len(),
            });
        })
        .await?;
        if let Some(e) = failed {
            return Err(e);
        }

        // 2. The roots, read after listing: retained commits of every
        // repository. Commits link to their predecessors; those links do not
        // keep a commit alive (retention decides), so all logged commits are
        // collected to be skipped when met as links.
        // Read while no pin window is open (`Store::pin_window`).
        let no_pin_windows = self.pin_windows.write().await;
        let mut roots = Vec::new();
        let mut commits = RoaringBitmap::new();
        let mut dropped_log_keys = Vec::new();
        let heads = self
            .kv()
            .scan(&RecordType::Head.range(), false, usize::MAX)
            .await?;
        for (key, _) in heads {
            let records::DecodedKey::Head { repo } =
                records::decode_key(&key).map_err(|e| Error::Malformed {
                    what: "head key",
                    reason: e.to_string(),
                })?
            else {
                continue;
            };
            let limit = match retention {
                Retention::Last(n) if options.repo.as_ref().is_none_or(|r| *r == repo) => n.max(1),
                _ => usize::MAX,
            };
            let log = self
                .commit_log_in(&repo, true, usize::MAX, View::Written)
                .await?;
            for (_, commit) in &log {
                commits.insert(known.id(commit)?);
            }
            dropped_log_keys.extend(
                log.iter()
                    .skip(limit)
                    .map(|(rev, _)| records::commit_log_key(&repo, *rev)),
            );
            for (_, commit) in log.into_iter().take(limit) {
                roots.push(known.id(&commit)?);
            }
            if let Some(h) = self.head(&repo).await? {
                roots.push(known.id(&h.commit)?);
            }
        }
        for pinned in self.pinned() {
            roots.push(known.id(&pinned)?);
        }
        drop(no_pin_windows);

        // 3. Mark. A root is a commit, whose `prev` is not followed: an
        // imported repository's first commit names a predecessor it never
        // had, and a retained commit's predecessor is a root or is dropped.
        let root_set: RoaringBitmap = roots.iter().copied().collect();
        let mut reachable = RoaringBitmap::new();
        // Anchors of reachable blocks stored as deltas: kept, not followed
        // (an anchor is an older version; what it links to is not needed).
        let mut anchors = RoaringBitmap::new();
        let mut missing = 0;
        let mut todo = roots;
        let mut found: Vec<u32> = Vec::new();
        while let Some(id) = todo.pop() {
            if !reachable.insert(id) {
                continue;
            }
            if reachable.len().is_multiple_of(PAGE as u64) {
                progress(GcProgress::Marking {
                    reached: usize::try_from(reachable.len()).unwrap_or(usize::MAX),
                });
                // Marking blocks already listed never waits: let the tasks
                // sharing this thread (a server's requests) run.
                tokio::task::yield_now().await;
            }
            let is_root = root_set.contains(id);
            found.clear();
            match known.content(id) {
                Content::Links if !is_root => found.extend_from_slice(known.links(id)),
                Content::Leaf if !is_root => continue,
                // A root (read again to drop its `prev`), a block listed
                // past the links budget, or one not listed in full: stored
                // as a delta, or written since the listing (perhaps as a
                // delta). Read (and checked) by CID; a delta's anchor is
                // kept.
                content => {
                    let cid = known.ids.cid(id)?;
                    if cid.codec() != DAG_CBOR {
                        continue;
                    }
                    if content == Content::Corrupt && !is_root {
                        return Err(Error::Corrupt { cid });
                    }
                    match self.stored_block(&cid, true).await? {
                        Some((bytes, anchor)) => {
                            if !crate::block::verify(&cid, &bytes)? {
                                return Err(Error::Corrupt { cid });
                            }
                            if let Some(anchor) = anchor {
                                anchors.insert(known.id(&anchor.cid)?);
                            }
                            for link in links_of(&bytes, is_root) {
                                found.push(known.id(&link)?);
                            }
                        }
                        None => {
                            missing += 1;
                            continue;
                        }
                    }
                }
            }
            todo.extend(
                found
                    .iter()
                    .filter(|&&c| !reachable.contains(c) && !commits.contains(c)),
            );
        }

        // 4. Forget the commits older than the retained ones, then sweep the
        // listed blocks that are not reachable. In this order, a collection
        // that stops half-way leaves unreachable blocks for the next one,
        // never a log entry naming a deleted commit.
        let total = listed + deltas.len() + stray.len();
        let mut report = GcReport {
            listed: total,
            reachable: usize::try_from(reachable.len()).unwrap_or(usize::MAX),
            anchors: usize::try_from((&anchors - &reachable).len()).unwrap_or(usize::MAX),
            missing,
            commits_dropped: dropped_log_keys.len(),
            ..GcReport::default()
        };
        if !options.dry_run {
            for chunk in dropped_log_keys.chunks(PAGE) {
                self.write_durably(chunk.iter().cloned().map(WriteOp::Delete).collect())
                    .await?;
            }
        }
        // What to delete, in listing order: the unreachable whole blocks
        // (anchors kept), then the unreachable deltas, then stray keys.
        let mut keep = reachable;
        let mut unreachable_deltas: Vec<(u32, u64)> = deltas
            .into_iter()
            .filter(|(id, _)| !keep.contains(*id))
            .collect();
        unreachable_deltas.sort_unstable();
        keep |= anchors;
        let unreachable_blocks = || {
            (0..known.count())
                .filter_map(|id| u32::try_from(id).ok())
                .filter(|id| !keep.contains(*id))
                .filter_map(|id| known.listed_len(id).map(|len| (id, len)))
        };
        let to_delete = unreachable_blocks().count() + unreachable_deltas.len() + stray.len();
        let mut doomed = unreachable_blocks()
            .map(|(id, len)| (id, len, false))
            .chain(
                unreachable_deltas
                    .into_iter()
                    .map(|(id, len)| (id, len, true)),
            )
            .map(|(id, len, delta)| {
                let cid = known.ids.cid(id)?;
                let key = if delta {
                    crate::store::keys::BlockKey::delta(&cid).to_vec()
                } else {
                    crate::store::keys::block_key(&cid)
                };
                Ok::<_, Error>((Some(cid), key, len))
            })
            .chain(stray.into_iter().map(|(key, len)| Ok((None, key, len))));
        if options.dry_run {
            // What a collection now would delete (blocks the dry run cannot
            // see a commit write again are counted too).
            for doomed in doomed {
                let (_, _, len) = doomed?;
                report.deleted += 1;
                report.bytes_freed += len;
            }
            return Ok(report);
        }
        let mut chunk: Vec<(Option<Cid>, Vec<u8>, u64)> = Vec::with_capacity(PAGE);
        let mut done = 0;
        loop {
            chunk.clear();
            for doomed in doomed.by_ref().take(PAGE) {
                chunk.push(doomed?);
            }
            if chunk.is_empty() {
                break;
            }
            progress(GcProgress::Sweeping {
                done,
                total: to_delete,
            });
            done += chunk.len();
            // Blocks a commit wrote again since the listing are spared; a
            // block written again after this batch is simply back.
            let order = self.sweep_order.lock().await;
            let batch: Vec<WriteOp> = {
                let written = self
                    .written_during_gc
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let written = written.as_ref();
                chunk
                    .iter()
                    .filter(|(cid, _, _)| {
                        cid.is_none_or(|cid| written.is_none_or(|w| !w.contains(&cid)))
                    })
                    .map(|(_, key, len)| {
                        report.bytes_freed += len;
                        WriteOp::Delete(key.clone())
                    })
                    .collect()
            };
            report.deleted += batch.len();
            let durability = self.kv().apply(batch).await?;
            drop(order);
            self.wait_durable(durability).await?;
        }
        progress(GcProgress::Sweeping {
            done: to_delete,
            total: to_delete,
        });
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use bytes::Bytes;
    use multihash_codetable::{Code, MultihashDigest};

    use super::*;
    use crate::{
        block::Block,
        kv::memory::MemoryKv,
        store::commit::{Commit, Head},
    };

    const REPO: &str = "did:web:budget";

    fn dag_cbor(ipld: &Ipld) -> Block {
        let bytes = Bytes::from(serde_ipld_dagcbor::to_vec(ipld).unwrap());
        Block::verify(Cid::new_v1(DAG_CBOR, Code::Sha2_256.digest(&bytes)), bytes).unwrap()
    }

    fn map(entries: Vec<(&str, Ipld)>) -> Ipld {
        Ipld::Map(
            entries
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect::<BTreeMap<_, _>>(),
        )
    }

    /// Commits `n` times a commit -> tree -> records chain whose tree and
    /// records change each time (each tree also links one record that
    /// never changes); returns every block written.
    async fn history(store: &Store<MemoryKv>, n: u64) -> Vec<Block> {
        let mut all = Vec::new();
        let shared = dag_cbor(&map(vec![("text", Ipld::String("kept".into()))]));
        let mut head: Option<Head> = None;
        for i in 0..n {
            let records: Vec<Block> = (0..3)
                .map(|r| dag_cbor(&map(vec![("n", Ipld::Integer((i * 10 + r).into()))])))
                .collect();
            let mut links: Vec<Ipld> = records.iter().map(|b| Ipld::Link(b.cid())).collect();
            links.push(Ipld::Link(shared.cid()));
            let tree = dag_cbor(&map(vec![("entries", Ipld::List(links))]));
            let prev = head.map_or(Ipld::Null, |h| Ipld::Link(h.commit));
            let commit = dag_cbor(&map(vec![("data", Ipld::Link(tree.cid())), ("prev", prev)]));
            let mut blocks = records;
            blocks.extend([shared.clone(), tree, commit.clone()]);
            let next = Head {
                commit: commit.cid(),
                rev: i + 1,
            };
            store
                .commit(Commit {
                    repo: REPO.into(),
                    expected: head.map(|h| h.commit),
                    head: next,
                    blocks: blocks.clone(),
                    records: Vec::new(),
                    collections: Vec::new(),
                    index: Vec::new(),
                    history: crate::store::commit::LogChange::default(),
                    event: None,
                    stream: None,
                })
                .await
                .unwrap();
            head = Some(next);
            all.extend(blocks);
        }
        all
    }

    async fn stored(store: &Store<MemoryKv>, blocks: &[Block]) -> Vec<bool> {
        let mut present = Vec::new();
        for b in blocks {
            present.push(store.get_block(&b.cid()).await.unwrap().is_some());
        }
        present
    }

    /// Past the links budget, a collection reads reachable blocks by CID
    /// and keeps and deletes exactly what it does within the budget.
    #[tokio::test]
    async fn a_listing_past_its_links_budget_collects_the_same() {
        let mut outcomes = Vec::new();
        for budget in [0, 5, usize::MAX] {
            let store = Store::with_cache_bytes(MemoryKv::new(), 0);
            let blocks = history(&store, 6).await;
            let report = store
                .gc_keeping_links(&GcOptions::new(Retention::Last(2)), budget, |_| {})
                .await
                .unwrap();
            outcomes.push((report, stored(&store, &blocks).await));
        }
        let (report, present) = &outcomes[2];
        // Kept: 2 commits, their 2 trees, 6 records and the shared one.
        assert_eq!(report.reachable, 11, "{report:?}");
        // Each commit wrote [record x3, shared, tree, commit]: the last two
        // commits' blocks stay, and of the older ones only the shared record.
        for (i, present) in present.iter().enumerate() {
            let (commit, slot) = (i / 6, i % 6);
            assert_eq!(*present, commit >= 4 || slot == 3, "block {i}");
        }
        for other in &outcomes[..2] {
            assert_eq!(other, &outcomes[2]);
        }
    }

    /// A corrupt reachable block listed past the budget still stops the
    /// collection before it deletes anything.
    #[tokio::test]
    async fn a_corrupt_reachable_block_past_the_budget_deletes_nothing() {
        let store = Store::with_cache_bytes(MemoryKv::new(), 0);
        let blocks = history(&store, 3).await;
        let tree = &blocks[blocks.len() - 2];
        store
            .kv()
            .write(vec![WriteOp::Put(
                crate::store::keys::block_key(&tree.cid()),
                Bytes::from_static(b"not the tree"),
            )])
            .await
            .unwrap();
        let err = store
            .gc_keeping_links(&GcOptions::new(Retention::Last(1)), 0, |_| {})
            .await
            .unwrap_err();
        assert!(
            matches!(err, Error::Corrupt { cid } if cid == tree.cid()),
            "{err:?}"
        );
        assert!(
            stored(&store, &blocks[..blocks.len() - 2])
                .await
                .iter()
                .all(|p| *p)
        );
    }
}
