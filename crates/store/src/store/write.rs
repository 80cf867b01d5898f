//! The write path: commits staged under the head compare-and-swap, then
//! made durable ([`PendingCommit`]).

use std::sync::Arc;

use bytes::Bytes;
use cid::Cid;
use keycodec::records;

use super::{
    commit::{Commit, RecordChange},
    index_value::index_value,
    keys::block_put,
    state::{Store, View},
};
use crate::{block::Block, error::Error, kv::interface::Kv, kv::interface::WriteOp};

/// A commit that is applied (later reads see it) but not yet confirmed
/// durable; see [`Store::stage_commit`].
#[must_use = "await the commit's durability before reporting success"]
pub struct PendingCommit {
    /// The sequence number of the commit's event, if it had one.
    seq: Option<u64>,
    durability: crate::kv::interface::Durability,
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
            crate::kv::location::probe_writable(dir)
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

impl<K: Kv> Store<K> {
    /// Notes blocks being written for a collection that is running.
    pub(super) fn note_written(&self, cids: impl IntoIterator<Item = Cid>) {
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
        durability: crate::kv::interface::Durability,
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

    pub(super) async fn check_head(&self, repo: &str, expected: Option<Cid>) -> Result<(), Error> {
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
    pub(super) async fn stage(
        &self,
        commit: Commit,
        with_blocks: bool,
    ) -> Result<PendingCommit, Error> {
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
            stream,
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
            let mut sequences = self.commit_lock.lock().await;
            self.check_head(&repo, expected).await?;
            let seq = match event {
                Some(bytes) => {
                    let seq = match sequences.next_seq {
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
            let last_time = match &stream {
                Some(stream) => {
                    self.stamp_stream_events(&sequences, stream, &mut ops)
                        .await?
                }
                None => None,
            };
            let _sweep = self.sweep_order.lock().await;
            self.note_written(written);
            let durability = self.kv.apply(ops).await?;
            if let Some(seq) = seq {
                sequences.next_seq = Some(seq + 1);
            }
            if last_time.is_some() {
                sequences.last_stream_time = last_time;
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
}
