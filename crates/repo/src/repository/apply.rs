//! The write path: checked writes become one commit (several requests'
//! writes, under group commit), staged in the store and made durable.

use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
};

use bytes::Bytes;
use cid::Cid;
use pail::Batch;
use rkey::RecordKey;
use serde_json::Value;
use store::{Block, Commit, Head, Kv, RecordChange};

use super::{
    collection::CollectionInfo,
    head::{HeadInfo, commit_event},
    paths::{pail_key, record_uri},
    state::{Repository, State, Waiting},
    write::{Checked, CommitResult, Write, WriteResult, check},
};
use crate::{
    commit::CommitData,
    error::Error,
    record::Record,
    validation::{Validation, validate_write},
};

/// Writes per group commit, at most (a single request may have more).
const GROUP_WRITES: usize = 200;

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

fn describe(cid: Option<Cid>) -> String {
    cid.map_or_else(|| "absent".to_owned(), |c| c.to_string())
}

impl<K: Kv> Repository<K> {
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
        let keep_stream = self.store.keeps_stream_events();
        let mut stream_ops = Vec::with_capacity(if keep_stream { checked.len() } else { 0 });
        // Records written earlier in this commit, for the index changes of
        // later writes to the same path.
        let mut written: HashMap<String, Option<Value>> = HashMap::new();
        // How each collection's record count changes.
        let mut count_changes: BTreeMap<String, i64> = BTreeMap::new();
        // How the records' blob references change.
        let mut blob_changes = crate::blobs::BlobChanges::default();
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
            let operation = match (new_cid, old) {
                (Some(_), None) => "create",
                (Some(_), Some(_)) => "update",
                (None, _) => "delete",
            };
            ops.push(crate::event::RepoOp {
                action: operation.to_owned(),
                path: path.clone(),
                cid: new_cid,
                prev: old,
            });
            // The record as JSON, once, when the stream, the indexes or
            // the blob references need it.
            let indexed = state
                .indexes
                .get(collection.as_str())
                .is_some_and(|d| !d.is_empty());
            let refers = new.is_some_and(|r| crate::blobs::may_refer_to_blobs(r.bytes()));
            let record_json = if keep_stream || indexed || refers {
                new.map(Record::to_json)
            } else {
                None
            };
            if keep_stream {
                stream_ops.push(crate::stream::StreamOp::new(
                    operation,
                    collection.as_str(),
                    rkey.as_str(),
                    new_cid,
                    record_json.as_ref(),
                ));
            }
            if let Some(declared) = state.indexes.get(collection.as_str())
                && !declared.is_empty()
            {
                let before = match (written.get(&path), old) {
                    (Some(v), _) => v.clone(),
                    (None, Some(cid)) => Some(self.load_record(cid).await?.to_json()),
                    (None, None) => None,
                };
                let after = record_json.clone();
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
            // Blob references: looked for only in records that may hold
            // one, looked up only where a record may have had one.
            let before = match blob_changes.current(collection.as_str(), rkey.as_str()) {
                Some(cids) => Some(cids.to_vec()),
                None if old.is_some() && state.blob_refs_exist => Some(
                    self.record_blobs(collection.as_str(), rkey.as_str())
                        .await?,
                ),
                None => None,
            };
            if refers || before.as_ref().is_some_and(|b| !b.is_empty()) {
                blob_changes.record(
                    collection.as_str(),
                    rkey.as_str(),
                    before.as_deref().unwrap_or_default(),
                    record_json.as_ref().filter(|_| refers),
                );
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
        let stream = keep_stream.then(|| {
            crate::stream::stream_events(
                &self.id,
                &commit.rev.to_string(),
                stream_ops,
                commit.rev.timestamp_micros(),
            )
        });
        let event = commit_event(
            &commit,
            commit_cid,
            Some(&state.head),
            mutation.additions.iter().map(|s| s.cid()).collect(),
            ops,
            blob_changes.referred(),
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
        // Every blob a record now refers to is the repository's, as the
        // record describes it; those referred to become permanent.
        let refers_to_blobs = !blob_changes.is_empty();
        if refers_to_blobs {
            index_ops.extend(self.blob_ops(&blob_changes, rev).await?);
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
        // The records the commit changes, for the cache to drop.
        let changed: Vec<String> = index
            .iter()
            .map(|r| format!("{}/{}", r.collection, r.rkey))
            .collect();
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
                stream,
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
            for path in &changed {
                cache.forget_record(path);
            }
            cache.set_head(commit_cid);
        }
        drop(search);
        state.counters.extend(counters);
        state.blob_refs_exist |= refers_to_blobs;
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
}
