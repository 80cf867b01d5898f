//! CAR v1 import: every block is checked against its CID, the commit
//! decoded, the whole Pail walked and every record checked before anything
//! is written; then the blocks, head, commit-log entry and record index go
//! in one atomic commit.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use cid::Cid;
use foldhash::{HashMap, HashMapExt, HashSet};
use pail::{EntriesOptions, ShardFetcher};
use rkey::{RecordKey, Tid};
use store::{Block, Commit, Head, Kv, RecordChange, Store};
use tokio::io::AsyncRead;

use super::{
    file_tree::{
        ImportBlocks, Located, TreeEntry, check_keys, check_records, located, record_block,
    },
    read::{FileBlocks, FileHistory, car_err, file_history, read_car, root_commit},
};
use crate::{
    car::declarations::Declarations, commit::CommitData, error::Error,
    repository::collection::CollectionInfo, repository::head::load_commit,
    repository::repos::Repos, repository::state::Repository,
};

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
    /// The account that owns the repository, as the file's declarations
    /// carry it: not restored here (the `accounts` crate restores it).
    pub account: Option<crate::car::declarations::AccountBackup>,
    /// Blobs copied in from [`ImportOptions::blobs`].
    pub blobs: crate::blobs::BlobCopyReport,
    /// Blobs the repository's records refer to whose bytes this store does
    /// not have (neither before nor from [`ImportOptions::blobs`]): the
    /// records are in, and the blobs can be given later by importing the
    /// file again with them (`check` lists them meanwhile).
    pub blobs_missing: Vec<Cid>,
}

/// How an import treats the file.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// The repository the file must hold, if any.
    pub repo: Option<String>,
    /// Public keys the file's commits may be signed with, besides those
    /// the store knows for the repository; recorded as known once the
    /// import succeeds.
    pub keys: Vec<crate::signing::PublicKey>,
    /// Imports commits that are unsigned or signed by a key nobody gave
    /// (the repository's key changed elsewhere) instead of refusing them,
    /// and trusts the keys the file declares.
    pub trust_new_key: bool,
    /// The private key (and its file) that signs the repository's next
    /// commits once the import succeeds; its public key is trusted for
    /// the file's commits too.
    pub signing_key: Option<(Arc<crate::signing::SigningKey>, std::path::PathBuf)>,
    /// Where the blobs the file's records refer to are (a backup's blob
    /// directory, `export --blobs DIR`): those the store lacks are copied
    /// in, each checked against its CID, before anything else is written.
    pub blobs: Option<store::Blobs>,
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
        if let Some(why) =
            crate::repository::head::unusable_rev(commit.rev, self.env().now_micros())
        {
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
        let stored_keys = crate::keys::SigningKeys::load(store, &commit.repo).await?;
        let mut given = options.keys.clone();
        given.extend(options.signing_key.as_ref().map(|(k, _)| *k.public_key()));
        let mut keys = stored_keys.known.clone();
        keys.extend(given.iter().copied());
        let check_signatures = !keys.is_empty() && !options.trust_new_key;
        if check_signatures {
            crate::car::verify::check_signature(root, &commit, &keys)?;
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
        // The blobs the file's records refer to, copied in where the store
        // lacks them before anything is written (the copy may be long; a
        // failed import leaves copies no repository holds, which `gc`
        // collects).
        let referred = crate::blobs::referred_blobs(
            records_in_file
                .iter()
                .map(|&p| blocks.blocks[p].bytes().as_ref()),
        );
        let copied = match &options.blobs {
            Some(from) if !referred.is_empty() => {
                crate::blobs::copy_blobs(
                    from,
                    &store.kv().blobs(),
                    referred.keys().copied(),
                    |_| {},
                )
                .await?
                .0
            }
            _ => crate::blobs::BlobCopyReport::default(),
        };

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
            let adoption = self
                .adopt_blobs(&commit.repo, &referred, commit.rev)
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
                account: declarations.and_then(|d| d.account),
                blobs: copied,
                blobs_missing: adoption.missing,
            });
        }
        let head_commit = current.map(|h| h.commit);
        let FileHistory {
            commits: history,
            follows,
        } = file_history(&blocks, root, &commit, head_commit)?;
        if check_signatures {
            for (cid, older) in &history {
                crate::car::verify::check_signature(*cid, older, &keys)?;
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
        // The blob references of the records the file changes, kept with
        // the commit (a whole repository's records referred to none before).
        let blob_changes = import_blob_changes(store, &commit.repo, &index, whole).await?;
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
        index_ops.extend(
            crate::blobs::blob_ops(
                store.kv(),
                &commit.repo,
                &blob_changes,
                commit.rev.as_u64(),
                false,
            )
            .await?,
        );
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
                    stream: None,
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
        let adoption = self
            .adopt_blobs(&commit.repo, &referred, commit.rev)
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
            account: declarations.and_then(|d| d.account),
            blobs: copied,
            blobs_missing: adoption.missing,
        })
    }

    /// After an import: the blobs the repository's records refer to whose
    /// bytes are here become the repository's
    /// ([`crate::blobs::adopt_referenced_blobs`]).
    async fn adopt_blobs(
        &self,
        id: &str,
        claims: &BTreeMap<Cid, Option<String>>,
        rev: Tid,
    ) -> Result<crate::blobs::BlobAdoption, Error> {
        let now_secs = self.env().now_micros() / 1_000_000;
        crate::blobs::adopt_referenced_blobs(self.store().kv(), id, claims, rev.as_u64(), now_secs)
            .await
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

/// How the records an import changes change the repository's blob
/// references: each new record's, in place of what the store kept for it
/// (nothing, for a whole repository).
async fn import_blob_changes<K: Kv>(
    store: &Store<K>,
    repo: &str,
    index: &[RecordChange],
    whole: bool,
) -> Result<crate::blobs::BlobChanges, Error> {
    let kv = store.kv();
    let stored_refs = !whole
        && !kv
            .scan(&keycodec::records::repo_record_blobs_range(repo), false, 1)
            .await?
            .is_empty();
    let mut changes = crate::blobs::BlobChanges::default();
    for change in index {
        let after = change
            .record
            .as_ref()
            .filter(|b| crate::blobs::may_refer_to_blobs(b.bytes()))
            .map(|b| datamodel::dag_cbor_to_json(b.bytes()));
        let before = if stored_refs {
            crate::blobs::record_blobs(kv, repo, &change.collection, &change.rkey).await?
        } else {
            Vec::new()
        };
        if after.is_some() || !before.is_empty() {
            changes.record(&change.collection, &change.rkey, &before, after.as_ref());
        }
    }
    Ok(changes)
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
