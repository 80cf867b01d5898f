//! Declaring, building (beside writers that do not pause), dropping and
//! rebuilding field indexes.

use keycodec::records;
use store::{Kv, WriteOp};

use index::{Declared, IndexDecl, IndexKind};

use crate::{error::Error, repository::state::Repository};

/// How far an index build is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexProgress {
    /// Records read so far.
    pub records: u64,
    /// Records in the collection when the build started (an estimate).
    pub total: u64,
    /// Once the records are read: the changes commits made since that the
    /// build is applying (0 while reading); in the last report, those it
    /// applied with commits held.
    pub behind: u64,
    /// Whether this is the last report: the index is declared.
    pub declared: bool,
}

/// Changes few enough to apply with commits held: catching up a new index
/// goes round beside commits until the changes since its last round are
/// this few, then applies them with commits held.
const CAUGHT_UP: usize = 256;

/// After this many rounds beside commits that never come down to
/// [`CAUGHT_UP`] (writers faster than the catch-up), the changes it takes
/// with commits held double, every so many rounds, up to
/// [`MAX_HELD_CHANGES`].
const ROUNDS_PER_DOUBLING: u32 = 16;

/// The most changes ever applied with commits held.
pub const MAX_HELD_CHANGES: usize = 16 * 1024;

/// How many changes the catch-up applies with commits held after `round`
/// rounds beside them.
fn held_changes(round: u32) -> usize {
    let doublings = (round / ROUNDS_PER_DOUBLING).min(6);
    (CAUGHT_UP << doublings).min(MAX_HELD_CHANGES)
}

/// Where an index being added finds the records' columns as it catches up.
pub(super) enum CatchUp {
    /// Its own new scope: the catch-up assigns and frees columns as the
    /// commits would have.
    Fresh,
    /// The collection's scope, whose columns the commits keep: the column
    /// at which the rows hold each record's values so far.
    Stored {
        packed: index::Packed,
        used: UsedColumns,
    },
}

/// The column at which a build's rows hold each record's values: the
/// build's columns as read (in rkey order), then the catch-up's moves.
pub(super) struct UsedColumns {
    built: Vec<(String, u32)>,
    /// Records the catch-up moved (`None`: no longer held).
    moved: std::collections::HashMap<String, Option<u32>>,
}

impl UsedColumns {
    /// `built` is in rkey order, as a build reads records.
    fn new(built: Vec<(String, u32)>) -> Self {
        debug_assert!(built.is_sorted_by(|a, b| a.0 < b.0));
        Self {
            built,
            moved: std::collections::HashMap::new(),
        }
    }

    fn get(&self, rkey: &str) -> Option<u32> {
        match self.moved.get(rkey) {
            Some(moved) => *moved,
            None => self
                .built
                .binary_search_by(|(r, _)| r.as_str().cmp(rkey))
                .ok()
                .map(|i| self.built[i].1),
        }
    }

    fn set(&mut self, rkey: &str, column: Option<u32>) {
        self.moved.insert(rkey.to_owned(), column);
    }
}

/// The longest path an index may have, in bytes.
const MAX_PATH_BYTES: usize = 256;

fn valid_path(path: &str) -> Result<(), Error> {
    let ok = path.len() <= MAX_PATH_BYTES
        && path.split('.').all(|s| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$')
        });
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidQuery(format!(
            "{path:?} is not a path: segments of A-Z a-z 0-9 _ $, separated by single dots, at most {MAX_PATH_BYTES} bytes"
        )))
    }
}

impl<K: Kv> Repository<K> {
    /// The declared field indexes, of one collection or all, in
    /// (collection, path) order.
    ///
    /// # Errors
    ///
    /// [`Error::Syntax`] for an invalid collection, or a storage error.
    pub async fn indexes(&self, collection: Option<&str>) -> Result<Vec<IndexDecl>, Error> {
        if let Some(c) = collection {
            rkey::validate_nsid(c)?;
        }
        Ok(index::declarations(self.store.kv(), &self.id, collection)
            .await?
            .into_iter()
            .map(|d| d.decl)
            .collect())
    }

    /// How many records `collection` holds: its record count, kept in
    /// each commit's batch (one read).
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn record_count(&self, collection: &str) -> Result<u64, Error> {
        Ok(self.store.record_count(&self.id, collection).await?)
    }

    /// Declares an index on `path` of `collection`'s records and builds it
    /// over the records there; every later commit maintains it. Returns
    /// the records indexed.
    ///
    /// The index is built beside writes: over the records as of the head
    /// when the build starts, then caught up with the commits made since
    /// (the last few with commits held, in the batch that declares it).
    /// Additions run one at a time in a store.
    ///
    /// # Errors
    ///
    /// [`Error::IndexExists`], [`Error::InvalidQuery`] for a malformed
    /// path, [`Error::Syntax`] for a malformed collection, or a storage
    /// error (nothing is declared then).
    pub async fn add_index(
        &self,
        collection: &str,
        path: &str,
        kind: IndexKind,
        progress: impl FnMut(IndexProgress) + Send,
    ) -> Result<u64, Error> {
        rkey::validate_nsid(collection)?;
        valid_path(path)?;
        let _scopes = self.store.lock_index_scopes().await;
        // Declarations as stored (another process may have changed them).
        let declared = index::declarations(self.store.kv(), &self.id, Some(collection)).await?;
        if declared.iter().any(|d| d.decl.path == path) {
            return Err(Error::IndexExists {
                collection: collection.to_owned(),
                path: path.to_owned(),
            });
        }
        let decl = IndexDecl {
            collection: collection.to_owned(),
            path: path.to_owned(),
            kind,
        };
        let scope = declared.first().map(|d| d.scope);
        self.add_beside_writes(decl, scope, progress).await
    }

    /// [`Repository::add_index`]: the index built over the records as of
    /// the head when it starts, under a new scope for a collection without
    /// indexes (`scope` `None`) or the collection's; then caught up with
    /// the commits made meanwhile, the last few with commits held.
    pub(super) async fn add_beside_writes(
        &self,
        decl: IndexDecl,
        scope: Option<u32>,
        mut progress: impl FnMut(IndexProgress) + Send,
    ) -> Result<u64, Error> {
        let kv = self.store.kv();
        // Leftovers of an interrupted build or drop are cleared first.
        let (scope, columns) = match scope {
            None => {
                let scope = index::free_scope(kv).await?;
                index::delete_scope(kv, scope).await?;
                (scope, index::BuildColumns::Fresh)
            }
            Some(scope) => {
                index::delete_index_data(kv, scope, &decl.path).await?;
                (scope, index::BuildColumns::Stored(scope))
            }
        };
        let fresh = matches!(columns, index::BuildColumns::Fresh);
        let decl = Declared { decl, scope };
        let declared = std::slice::from_ref(&decl);
        let collection = decl.decl.collection.as_str();
        // The trees the build reads stay readable however many commits
        // garbage collection drops meanwhile: it holds on to the commit it
        // reads, and to each one it catches up from or to.
        let (commit, tree, mut _at_pin) = self.pinned_latest_head().await?;
        let total = self.record_count(collection).await?;
        progress(IndexProgress {
            records: 0,
            total,
            behind: 0,
            declared: false,
        });
        let (mut built, mut records) = index::compute_at(
            &self.store,
            &self.id,
            commit,
            tree,
            collection,
            declared,
            columns,
            |p: index::BuildProgress| {
                progress(IndexProgress {
                    records: p.records,
                    total: total.max(p.records),
                    behind: 0,
                    declared: false,
                });
            },
        )
        .await?;
        // Where the rows hold each record's values, as the catch-up moves
        // them (a collection with indexes: the commits' columns).
        let mut catch_up = if fresh {
            CatchUp::Fresh
        } else {
            CatchUp::Stored {
                packed: index::load_packed(kv, scope).await?,
                // Only a fresh build writes its columns.
                used: UsedColumns::new(std::mem::take(&mut built.columns)),
            }
        };
        let batch = kv.bulk_batch_bytes().unwrap_or(usize::MAX);
        index::write_built(kv, scope, built, fresh, batch).await?;

        // The commits since `tree`, applied as they would have changed the
        // index: while they are many, beside commits (the index is no one
        // else's until declared), round after round; when the changes
        // since the last round are few, with commits held, in the batch
        // that declares it. Writers never wait for more than
        // `held_changes` changes, however fast they write.
        let mut at = tree;
        let mut round = 0u32;
        let (mut state, changes) = loop {
            let (_, head, head_pin) = self.pinned_latest_head().await?;
            let changes = self.tree_changes(collection, at, head).await?;
            if changes.len() <= held_changes(round) {
                let mut state = self.state.lock().await;
                self.follow_stored_head(&mut state).await?;
                let held = self.tree_changes(collection, at, state.head.data).await?;
                if held.len() <= held_changes(round) {
                    break (state, held);
                }
                // Writers got ahead meanwhile: another round beside them.
                drop(state);
            }
            progress(IndexProgress {
                records: total.max(records),
                total,
                behind: changes.len() as u64,
                declared: false,
            });
            let ops = self
                .index_changes(declared, &changes, &mut catch_up, &mut records)
                .await?;
            kv.write(ops).await?;
            at = head;
            _at_pin = head_pin;
            round = round.saturating_add(1);
        };
        let held = changes.len() as u64;
        let mut ops = self
            .index_changes(declared, &changes, &mut catch_up, &mut records)
            .await?;
        ops.push(WriteOp::Put(
            records::field_index_key(&self.id, collection, &decl.decl.path),
            index::encode_decl(decl.decl.kind, scope),
        ));
        ops.push(index::raise_epoch(kv, &self.id, None).await?);
        let search = self.search.write().await;
        kv.write(ops).await?;
        self.clear_cache();
        drop(search);
        state.counters.remove(&scope);
        state.known_rows.retain(|(s, _, _), _| *s != scope);
        state
            .indexes
            .entry(collection.to_owned())
            .or_default()
            .push(decl);
        drop(state);
        // Reported once commits go on: a progress callback never runs
        // with commits held.
        progress(IndexProgress {
            records: total.max(records),
            total,
            behind: held,
            declared: true,
        });
        Ok(records)
    }

    /// The latest head (durable or not, moved on by any handle): its
    /// commit and tree, and the commit pinned ([`store::Store::pin_window`]).
    pub(super) async fn pinned_latest_head(
        &self,
    ) -> Result<(cid::Cid, cid::Cid, store::PinnedCommit), Error> {
        // The window first: a collection reading its roots holds off new
        // windows, and must not hold off commits too.
        let window = self.store.pin_window().await;
        let mut state = self.state.lock().await;
        self.follow_stored_head(&mut state).await?;
        let head = &state.head;
        Ok((head.commit, head.data, window.pin(head.commit)))
    }

    /// The record with this CID as JSON (`None` for none).
    pub(super) async fn record_json(
        &self,
        cid: Option<cid::Cid>,
    ) -> Result<Option<serde_json::Value>, Error> {
        Ok(match cid {
            Some(cid) => Some(self.load_record(cid).await?.to_json()),
            None => None,
        })
    }

    /// The changes to `collection`'s records from the tree `from` to the
    /// tree `to`: (rkey, old CID, new CID).
    pub(super) async fn tree_changes(
        &self,
        collection: &str,
        from: cid::Cid,
        to: cid::Cid,
    ) -> Result<Vec<(String, Option<cid::Cid>, Option<cid::Cid>)>, Error> {
        let prefix = format!("{collection}/");
        Ok(pail::diff(&*self.store, from, to)
            .await?
            .keys
            .into_iter()
            .filter_map(|c| {
                let rkey = c.key.strip_prefix(&prefix)?.to_owned();
                Some((rkey, c.old, c.new))
            })
            .collect())
    }

    /// The index operations of `changes` to the records of the collection
    /// `declared` (a new index) is for: in a new scope as the commits that
    /// made them would have written them, in the collection's scope at the
    /// columns `catch_up` follows; `records` follows the creates and
    /// deletes.
    pub(super) async fn index_changes(
        &self,
        declared: &[Declared],
        changes: &[(String, Option<cid::Cid>, Option<cid::Cid>)],
        catch_up: &mut CatchUp,
        records: &mut u64,
    ) -> Result<Vec<WriteOp>, Error> {
        let kv = self.store.kv();
        let mut index = index::CommitIndex::default();
        let (no_counters, no_rows) = (Default::default(), Default::default());
        for (rkey, old, new) in changes {
            let (old, new) = (self.record_json(*old).await?, self.record_json(*new).await?);
            match (&old, &new) {
                (None, Some(_)) => *records += 1,
                (Some(_), None) => *records = records.saturating_sub(1),
                _ => {}
            }
            match catch_up {
                CatchUp::Fresh => {
                    index
                        .record(
                            kv,
                            &no_counters,
                            &no_rows,
                            declared,
                            rkey,
                            old.as_ref(),
                            new.as_ref(),
                        )
                        .await?;
                }
                CatchUp::Stored { packed, used } => {
                    let scope = declared[0].scope;
                    // The record's column now, which a commit gave it.
                    let now = match new {
                        Some(_) => index::column_of(kv, scope, packed, rkey).await?,
                        None => None,
                    };
                    let was = used.get(rkey);
                    index
                        .record_at_columns(
                            kv,
                            &no_counters,
                            &no_rows,
                            declared,
                            (was, old.as_ref()),
                            (now, new.as_ref()),
                        )
                        .await?;
                    used.set(rkey, now);
                }
            }
        }
        Ok(index.into_write()?.ops)
    }

    /// Drops the index on `path` of `collection`, deleting its containers
    /// (and the collection's columns with its last index).
    ///
    /// # Errors
    ///
    /// [`Error::IndexNotFound`], or a storage error.
    pub async fn drop_index(&self, collection: &str, path: &str) -> Result<(), Error> {
        rkey::validate_nsid(collection)?;
        // Not while an index of the collection builds beside commits: the
        // last index's drop deletes the scope that build writes into.
        let _scopes = self.store.lock_index_scopes().await;
        let mut state = self.state.lock().await;
        let kv = self.store.kv();
        let declared = index::declarations(kv, &self.id, Some(collection)).await?;
        let Some(found) = declared.iter().find(|d| d.decl.path == path) else {
            return Err(Error::IndexNotFound {
                collection: collection.to_owned(),
                path: path.to_owned(),
            });
        };
        let scope = found.scope;
        {
            // The declaration first: queries stop using the index at once.
            let _search = self.search.write().await;
            kv.write(vec![
                WriteOp::Delete(records::field_index_key(&self.id, collection, path)),
                index::raise_epoch(kv, &self.id, None).await?,
            ])
            .await?;
            self.clear_cache();
        }
        if let Some(list) = state.indexes.get_mut(collection) {
            list.retain(|d| d.decl.path != path);
        }
        state.counters.remove(&scope);
        state.known_rows.retain(|(s, _, _), _| *s != scope);
        if declared.len() == 1 {
            state.indexes.remove(collection);
            index::delete_scope(kv, scope).await?;
        } else {
            index::delete_index_data(kv, scope, path).await?;
        }
        Ok(())
    }

    /// Rebuilds every field index of the repository from its stored
    /// records, as an import does once its commit lands: the way out of
    /// [`Error::IndexRebuildPending`] when an import was interrupted.
    /// Writes wait until it finishes. Returns the records indexed.
    ///
    /// # Errors
    ///
    /// A storage error (the indexes stay pending).
    pub async fn rebuild_indexes(
        &self,
        progress: impl FnMut(IndexProgress) + Send,
    ) -> Result<u64, Error> {
        self.rebuild_indexes_with(index::ComputedScopes::new(), progress)
            .await
    }

    /// Whether an import changed the records and its index rebuild has not
    /// finished ([`Error::IndexRebuildPending`]).
    ///
    /// # Errors
    ///
    /// A storage error, or [`Error::MalformedIndex`].
    pub async fn index_rebuild_pending(&self) -> Result<bool, Error> {
        Ok(index::epoch(self.store.kv(), &self.id)
            .await?
            .rebuild_pending)
    }

    /// [`Repository::rebuild_indexes`], given `computed`: rows an import
    /// computed from the records it brought, by collection, with the
    /// declarations they are for; a collection without them (or declared
    /// otherwise since) is built from the stored records.
    pub(crate) async fn rebuild_indexes_with(
        &self,
        mut computed: index::ComputedScopes,
        mut progress: impl FnMut(IndexProgress) + Send,
    ) -> Result<u64, Error> {
        // Not while an index builds beside commits: a rebuild rewrites
        // whole scopes, that build's too.
        let _scopes = self.store.lock_index_scopes().await;
        let mut state = self.state.lock().await;
        let kv = self.store.kv();
        let by_collection = index::declarations_by_collection(kv, &self.id).await?;
        let mut done = 0;
        for (collection, declared) in &by_collection {
            let scope = declared[0].scope;
            let _search = self.search.write().await;
            index::delete_scope(kv, scope).await?;
            match computed.remove(collection) {
                Some((for_declared, built)) if for_declared == *declared => {
                    done += built.columns.len() as u64;
                    let batch = kv.bulk_batch_bytes().unwrap_or(usize::MAX);
                    index::write_built(kv, scope, built, true, batch).await?;
                    progress(IndexProgress {
                        records: done,
                        total: 0,
                        behind: 0,
                        declared: false,
                    });
                }
                _ => {
                    index::build_scope(
                        &self.store,
                        &self.id,
                        collection,
                        scope,
                        declared,
                        true,
                        |p| {
                            progress(IndexProgress {
                                records: done + p.records,
                                total: 0,
                                behind: 0,
                                declared: false,
                            });
                        },
                    )
                    .await
                    .map(|n| done += n)?;
                }
            }
            state.counters.remove(&scope);
            state.known_rows.retain(|(s, _, _), _| *s != scope);
        }
        // Rebuilt: the records an import brought are indexed (a repository
        // without indexes and nothing pending has no epoch to raise).
        let epoch = index::epoch(kv, &self.id).await?;
        if !by_collection.is_empty() || epoch.rebuild_pending {
            let _search = self.search.write().await;
            kv.write(vec![epoch.raised(&self.id, Some(false))]).await?;
        }
        self.clear_cache();
        Ok(done)
    }
}
