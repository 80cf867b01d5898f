//! Garbage collection of blocks that no retained commit reaches.
//!
//! A commit's link to its predecessor does not keep the predecessor alive:
//! with [`Retention::Last`], the oldest retained commit's `prev` may name a
//! collected commit (history is truncated there).
//!
//! Safe while writes continue: the candidate blocks are listed *before* the
//! roots are read, so any block written by a commit that lands later is not
//! a candidate, and any commit that landed earlier is a root. A commit is
//! built on the current head, so the old blocks it reuses are reachable from
//! a root that was read. A bulk commit writes its blocks before its head
//! ([`Store::bulk_commit`]); a collection and bulk commits in one process
//! exclude each other; a collection in another process fences this
//! process's writer, so a bulk commit in progress fails instead of landing.

use std::collections::HashSet;

use cid::Cid;
use ipld_core::ipld::Ipld;
use keycodec::{KeyRange, RecordType, records};

use crate::{Error, Kv, Store, WriteOp};

/// Which commits keep their blocks alive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retention {
    /// Every commit in every repository's commit log.
    All,
    /// The newest `n` commits (at least 1: the head) of each repository.
    Last(usize),
}

/// What a collection did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GcReport {
    /// Blocks stored when the collection started.
    pub listed: usize,
    /// Blocks reachable from retained commits.
    pub reachable: usize,
    /// Blocks deleted.
    pub deleted: usize,
    /// Bytes freed.
    pub bytes_freed: u64,
    /// Links to blocks that were not stored (nothing to keep alive).
    pub missing: usize,
}

const DAG_CBOR: u64 = 0x71;
const PAGE: usize = 4096;

fn links(ipld: &Ipld, out: &mut Vec<Cid>) {
    match ipld {
        Ipld::Link(cid) => out.push(*cid),
        Ipld::List(items) => items.iter().for_each(|i| links(i, out)),
        Ipld::Map(map) => map.values().for_each(|v| links(v, out)),
        _ => {}
    }
}

impl<K: Kv> Store<K> {
    /// Deletes every block that no retained commit reaches (following every
    /// link of every dag-cbor block), calling `progress(done, total)` as it
    /// goes through the listed blocks.
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
        mut progress: impl FnMut(usize, usize),
    ) -> Result<GcReport, Error> {
        let _no_bulk_commits = self.gc_lock.write().await;
        // 1. The candidates: every block stored now.
        let mut candidates: Vec<(Vec<u8>, u64)> = Vec::new();
        let mut range = RecordType::Block.range();
        loop {
            let page = self.kv().scan(&range, false, PAGE).await?;
            let Some((last, _)) = page.last() else { break };
            let mut next = last.to_vec();
            next.push(0);
            candidates.extend(page.iter().map(|(k, v)| (k.to_vec(), v.len() as u64)));
            if page.len() < PAGE {
                break;
            }
            range = KeyRange {
                start: next,
                end: range.end,
            };
        }

        // 2. The roots, read after listing: retained commits of every
        // repository. Commits link to their predecessors; those links do not
        // keep a commit alive (retention decides), so all logged commits are
        // collected to be skipped when met as links.
        let mut roots = Vec::new();
        let mut commits: HashSet<Cid> = HashSet::new();
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
                Retention::All => usize::MAX,
                Retention::Last(n) => n.max(1),
            };
            let log = self.commit_log(&repo, true, usize::MAX).await?;
            commits.extend(log.iter().map(|(_, c)| *c));
            roots.extend(log.into_iter().take(limit).map(|(_, c)| c));
            if let Some(h) = self.head(&repo).await? {
                roots.push(h.commit);
            }
        }

        // 3. Mark. A root is a commit, whose `prev` is not followed: an
        // imported repository's first commit names a predecessor it never
        // had, and a retained commit's predecessor is a root or is dropped.
        let root_set: HashSet<Cid> = roots.iter().copied().collect();
        let mut reachable: HashSet<Cid> = HashSet::new();
        let mut missing = 0;
        let mut todo = roots;
        while let Some(cid) = todo.pop() {
            if !reachable.insert(cid) {
                continue;
            }
            if cid.codec() != DAG_CBOR {
                continue;
            }
            let Some(bytes) = self.get_block(&cid).await? else {
                missing += 1;
                continue;
            };
            if let Ok(mut ipld) = serde_ipld_dagcbor::from_slice::<Ipld>(bytes.bytes()) {
                if root_set.contains(&cid)
                    && let Ipld::Map(commit) = &mut ipld
                {
                    commit.remove("prev");
                }
                let mut found = Vec::new();
                links(&ipld, &mut found);
                todo.extend(
                    found
                        .into_iter()
                        .filter(|c| !reachable.contains(c) && !commits.contains(c)),
                );
            }
        }

        // 4. Sweep the listed blocks that are not reachable.
        let reachable_keys: HashSet<Vec<u8>> =
            reachable.iter().map(crate::store::block_key).collect();
        let total = candidates.len();
        let mut report = GcReport {
            listed: total,
            reachable: reachable.len(),
            missing,
            ..GcReport::default()
        };
        let mut batch = Vec::new();
        for (i, (key, len)) in candidates.into_iter().enumerate() {
            if !reachable_keys.contains(&key) {
                report.deleted += 1;
                report.bytes_freed += len;
                batch.push(WriteOp::Delete(key));
            }
            if batch.len() >= PAGE {
                self.write_durably(std::mem::take(&mut batch)).await?;
            }
            if i % PAGE == 0 {
                progress(i, total);
            }
        }
        if !batch.is_empty() {
            self.write_durably(batch).await?;
        }
        progress(total, total);
        Ok(report)
    }
}
