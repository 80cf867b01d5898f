//! [`Repos::check`]: reads a repository back and reports what is damaged
//! or inconsistent, without changing anything.

use std::collections::HashSet;

use bytes::Bytes;
use cid::Cid;
use store::{Block, Kv, Store};

use crate::{commit::CommitData, error::Error, repository::repos::Repos};

/// Problems listed in full; past this many, only counted.
const LISTED_PROBLEMS: usize = 100;
/// Record-index rows read per range scan.
const INDEX_PAGE: usize = 1024;

/// What [`Repos::check`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckReport {
    /// The head commit when the check began.
    pub commit: Cid,
    /// Records in the head's tree.
    pub records: u64,
    /// Pail shards in the head's tree.
    pub shards: u64,
    /// Commit-log entries checked.
    pub commits: u64,
    /// Of those, commits that carry a signature: each verified against the
    /// public keys the store knows for the repository, when it knows some
    /// (one that does not verify is a problem).
    pub signed: u64,
    /// What is wrong, each in a sentence; empty when the repository is
    /// intact. At most 100 are listed (see `problem_count`).
    pub problems: Vec<String>,
    /// How many problems were found in all.
    pub problem_count: u64,
    /// With [`CheckOptions::history`]: shards that only older retained
    /// commits reach, read and hashed.
    pub older_shards: u64,
    /// With [`CheckOptions::history`]: record blocks that only older
    /// retained commits reach, read and hashed.
    pub older_records: u64,
    /// The head moved while the check ran (a writer was active), so a
    /// difference between the tree and the record index may be that write
    /// rather than damage: run the check again when writes pause.
    pub head_moved: bool,
    /// Records that do not validate against their collection's current
    /// Lexicon (written before it was added, or with validation off).
    pub invalid_records: u64,
    /// Warnings, not damage: such records (the first 100, each with the
    /// validator's message), stored Lexicons that no longer parse, and
    /// references to definitions no Lexicon has.
    pub warnings: Vec<String>,
    /// Blobs the head's records refer to, each read and hashed (one that
    /// is missing, or whose bytes are not what its CID names, is a
    /// problem).
    pub blobs: u64,
}

impl CheckReport {
    fn problem(&mut self, what: String) {
        self.problem_count += 1;
        if self.problems.len() < LISTED_PROBLEMS {
            self.problems.push(what);
        }
    }

    /// Whether nothing is wrong.
    #[must_use]
    pub fn is_intact(&self) -> bool {
        self.problem_count == 0
    }
}

/// What a check covers beyond the head.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckOptions {
    /// Also walk the tree of every retained commit older than the head,
    /// reading and hashing each shard and record block they reach that
    /// was not already read (what `get --at`, `diff` and `export --since`
    /// read). Subtrees shared between commits are read once.
    pub history: bool,
}

/// How far a check is, passed to its progress callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckProgress {
    /// Reading the head's tree: so many records so far.
    Tree {
        /// Records found so far.
        records: u64,
    },
    /// Comparing the record index with the tree: `done` of `total` records.
    Index {
        /// Index rows checked so far.
        done: u64,
        /// Records in the tree.
        total: u64,
    },
    /// Walking older commits' trees: `done` of `total` commits.
    History {
        /// Commits whose trees were walked.
        done: u64,
        /// Retained commits.
        total: u64,
    },
}

/// Whether `e` says something stored is damaged (a problem to report), as
/// opposed to the store being unreachable (which ends the check).
fn is_damage(e: &Error) -> bool {
    match e {
        Error::MissingBlock(_) | Error::MalformedBlock { .. } | Error::Pail(_) => true,
        Error::Store(s) => matches!(
            s,
            store::Error::Corrupt { .. }
                | store::Error::MissingAnchor { .. }
                | store::Error::HashMismatch { .. }
                | store::Error::UnsupportedHash { .. }
                | store::Error::Malformed { .. }
        ),
        _ => false,
    }
}

/// A block by CID, checked against it; a missing block is an error.
async fn read_block<K: Kv>(store: &Store<K>, cid: Cid) -> Result<Block, Error> {
    store.get_block(&cid).await?.ok_or(Error::MissingBlock(cid))
}

impl<K: Kv> Repos<K> {
    /// Checks repository `id` as a reader sees it (durable commits only):
    ///
    /// - the head commit and every commit in the log exist, hash to their
    ///   CIDs and decode; the log's newest entry is the head, and each
    ///   entry's `prev` is the entry before it (the oldest may name a
    ///   commit garbage collection removed); a signed commit's signature
    ///   is by one of the repository's known keys;
    /// - every shard of the head's tree exists, hashes to its CID and is a
    ///   canonical Pail shard;
    /// - the record index holds exactly the tree's records with the same
    ///   CIDs (it answers listings and reads), and every record's bytes
    ///   hash to its CID.
    ///
    /// Damage is reported in the [`CheckReport`], as much as can be found;
    /// nothing is written. Holds `collection/rkey → CID` for every record
    /// in memory (a few hundred bytes each).
    ///
    /// # Errors
    ///
    /// [`Error::RepoNotFound`], or a storage error that stops the check
    /// (the store unreachable, not damaged).
    pub async fn check(
        &self,
        id: &str,
        progress: impl FnMut(CheckProgress),
    ) -> Result<CheckReport, Error> {
        self.check_with(id, CheckOptions::default(), progress).await
    }

    /// [`Repos::check`], covering what `options` adds.
    ///
    /// # Errors
    ///
    /// As [`Repos::check`].
    pub async fn check_with(
        &self,
        id: &str,
        options: CheckOptions,
        mut progress: impl FnMut(CheckProgress),
    ) -> Result<CheckReport, Error> {
        let store = &**self.store();
        let head = store
            .durable_head(id)
            .await?
            .ok_or_else(|| Error::RepoNotFound(id.to_owned()))?;
        let mut report = CheckReport {
            commit: head.commit,
            records: 0,
            shards: 0,
            commits: 0,
            signed: 0,
            problems: Vec::new(),
            problem_count: 0,
            older_shards: 0,
            older_records: 0,
            head_moved: false,
            invalid_records: 0,
            warnings: Vec::new(),
            blobs: 0,
        };
        let head_commit = match load(store, head.commit).await {
            Ok(commit) => Some(commit),
            Err(e) if is_damage(&e) => {
                report.problem(format!("head commit {}: {e}", head.commit));
                None
            }
            Err(e) => return Err(e),
        };
        if let Some(commit) = &head_commit {
            if let Some(why) =
                crate::repository::head::unusable_rev(commit.rev, self.env().now_micros())
            {
                report.problem(format!(
                    "head commit {}: {why}; this repository cannot take new commits \
                     (see docs/repo.md, \"Revs\")",
                    head.commit
                ));
            }
            if commit.rev.as_u64() != head.rev {
                report.problem(format!(
                    "head commit {} has rev {}, the head record says {}",
                    head.commit,
                    commit.rev,
                    rkey::Tid::from_u64(head.rev)
                ));
            }
            if commit.repo != id {
                report.problem(format!(
                    "head commit {} belongs to repository {:?}",
                    head.commit, commit.repo
                ));
            }
        }
        let roots = self.check_log(id, head.commit, &mut report).await?;
        let mut examined = Examined::default();
        if let Some(commit) = head_commit {
            let records = crate::repository::reads::records_hint(store, id).await;
            let tree = walk_tree(
                store,
                commit.data,
                records,
                &mut examined.shards,
                &mut report,
                &mut progress,
            )
            .await?;
            // What the history walk skips (the head's records are read
            // already); without it, nothing needs them.
            if options.history {
                examined.records.extend(tree.iter().map(|(_, cid)| *cid));
            }
            let mut counts: std::collections::BTreeMap<String, u64> = store
                .collections(id)
                .await?
                .into_iter()
                .map(|(c, _)| (c, 0))
                .collect();
            for (path, _) in &tree {
                if let Some((collection, _)) = path.split_once('/') {
                    *counts.entry(collection.to_owned()).or_default() += 1;
                }
            }
            check_index(store, id, tree, &mut report, &mut progress).await?;
            for (collection, n) in counts {
                if let Some(kept) = store.kept_record_count(id, &collection).await?
                    && kept != n
                {
                    report.problem(format!(
                        "the record count of {collection} says {kept}, and the tree holds {n} \
                         records (counts and queries without --where answer {kept})"
                    ));
                }
            }
            // Field indexes: each rebuilt in memory and compared.
            for difference in self.open(id).await?.index_differences().await? {
                report.problem(format!("field index of {difference}"));
            }
            check_blobs(store, id, &mut report).await?;
        }
        if options.history {
            walk_history(store, &roots, examined, &mut report, &mut progress).await?;
        }
        report.head_moved = store.durable_head(id).await?.map(|h| h.commit) != Some(head.commit);
        self.check_lexicons(id, &mut report).await?;
        let keys = crate::keys::SigningKeys::load(store, id).await?;
        if keys.current.is_none()
            && let Some(key) = keys.known.last()
        {
            report.warnings.push(format!(
                "{id} is signed (by {key}), and this store has no private key for its next \
                 commit: writes are refused until `datarepo key rotate --signing-key FILE` gives one"
            ));
        }
        Ok(report)
    }

    /// Validates each collection's records against its Lexicon: warnings.
    async fn check_lexicons(&self, id: &str, report: &mut CheckReport) -> Result<(), Error> {
        let repo = self.open(id).await?;
        let collections = repo.collections().await;
        let others = self.store().lexicons(id).await?;
        let (lexicons, unusable) = crate::validation::compile(
            collections.iter().filter_map(|(_, i)| i.lexicon.as_ref()),
            &others,
        );
        for u in unusable {
            report
                .warnings
                .push(format!("Lexicon {u} (it is not used for validation)"));
        }
        for uri in lexicons.missing_refs() {
            report.warnings.push(format!(
                "a Lexicon refers to {uri}, which no Lexicon defines (records that reach it fail validation)"
            ));
        }
        for (collection, _) in &collections {
            let (_, invalid, failures) = repo
                .validate_collection(collection, LISTED_PROBLEMS)
                .await?;
            report.invalid_records += invalid;
            for f in failures {
                if report.warnings.len() < LISTED_PROBLEMS {
                    report.warnings.push(format!(
                        "{collection}/{} does not validate against its Lexicon: {}",
                        f.rkey, f.error
                    ));
                }
            }
        }
        Ok(())
    }

    /// The commit log: each entry's commit readable, newest first from the
    /// head, each `prev` the next older entry. Returns the tree root and
    /// rev of each commit it could read, newest first.
    async fn check_log(
        &self,
        id: &str,
        head: Cid,
        report: &mut CheckReport,
    ) -> Result<Vec<(rkey::Tid, Cid)>, Error> {
        let store = &**self.store();
        let log = store.commit_log(id, true, usize::MAX).await?;
        let keys = crate::keys::SigningKeys::load(store, id).await?.known;
        match log.first() {
            Some((_, newest)) if *newest != head => report.problem(format!(
                "the commit log's newest entry is {newest}, the head is {head}"
            )),
            None => report.problem(format!("the commit log is empty; the head is {head}")),
            _ => {}
        }
        // The `prev` the next (older) entry must have been named by.
        let mut expected: Option<Option<Cid>> = None;
        // Unsigned commits newer than every signed one read so far: once a
        // repository signs, each later commit is signed.
        let mut unsigned_newer: Vec<(Cid, rkey::Tid)> = Vec::new();
        let mut roots = Vec::with_capacity(log.len());
        for (rev, cid) in log {
            report.commits += 1;
            if let Some(prev) = expected.take()
                && prev != Some(cid)
            {
                report.problem(format!(
                    "commit-log entry {cid} is not the previous commit ({}) of the entry after it",
                    prev.map_or_else(|| "none".to_owned(), |c| c.to_string())
                ));
            }
            match load(store, cid).await {
                Ok(commit) => {
                    if commit.rev.as_u64() != rev {
                        report.problem(format!(
                            "commit {cid} has rev {}, but the log lists it under another rev",
                            commit.rev
                        ));
                    }
                    if commit.is_signed() {
                        for (unsigned, rev) in unsigned_newer.drain(..) {
                            report.problem(format!(
                                "commit {unsigned} (rev {rev}) is not signed, but an earlier \
                                 commit ({cid}, rev {}) is: a signed history took an unsigned \
                                 commit",
                                commit.rev
                            ));
                        }
                        report.signed += 1;
                        if !keys.is_empty()
                            && let Err(e) = commit.verify(&keys)
                        {
                            report.problem(format!(
                                "commit {cid} (rev {}): {e} (not by any of the repository's \
                                 known keys)",
                                commit.rev
                            ));
                        }
                    }
                    if !commit.is_signed() {
                        unsigned_newer.push((cid, commit.rev));
                    }
                    expected = Some(commit.prev);
                    roots.push((commit.rev, commit.data));
                }
                Err(e) if is_damage(&e) => report.problem(format!("commit {cid}: {e}")),
                Err(e) => return Err(e),
            }
        }
        Ok(roots)
    }
}

async fn load<K: Kv>(store: &Store<K>, cid: Cid) -> Result<CommitData, Error> {
    let block = read_block(store, cid).await?;
    CommitData::decode(cid, block.bytes())
}

/// A tree's records, `(collection/rkey, CID)`, sorted by path.
type TreeRecords = Vec<(Box<str>, Cid)>;

/// Every record of the tree at `root`, reading every shard (adding each
/// to `shards`); a shard that cannot be read is a problem and its subtree
/// is skipped.
async fn walk_tree<K: Kv>(
    store: &Store<K>,
    root: Cid,
    records_hint: usize,
    shards: &mut HashSet<Cid>,
    report: &mut CheckReport,
    progress: &mut impl FnMut(CheckProgress),
) -> Result<TreeRecords, Error> {
    let mut records = Vec::new();
    let _ = records.try_reserve_exact(records_hint);
    // (shard CID, the key prefix its entries extend)
    let mut todo = vec![(root, String::new())];
    while let Some((cid, prefix)) = todo.pop() {
        shards.insert(cid);
        // Read from storage, not the decoded-shard cache: the check is of
        // what is stored.
        let shard = match store.read_shard(&cid).await.map_err(Error::from) {
            Ok(shard) => shard,
            Err(e) if is_damage(&e) => {
                report.problem(format!("shard {cid} ({}): {e}", under(&prefix)));
                continue;
            }
            Err(e) => return Err(e),
        };
        report.shards += 1;
        for (key, value) in shard.entries() {
            let key = format!("{prefix}{key}");
            if let Some(link) = value.link() {
                todo.push((link, key.clone()));
            }
            if let Some(data) = value.data() {
                records.push((key.into_boxed_str(), data));
                report.records += 1;
                if report.records.is_multiple_of(INDEX_PAGE as u64) {
                    progress(CheckProgress::Tree {
                        records: report.records,
                    });
                }
            }
        }
    }
    records.sort_unstable();
    Ok(records)
}

/// The record index against the tree's records, then every record's bytes
/// (the tree's, whatever the index says) against its CID.
async fn check_index<K: Kv>(
    store: &Store<K>,
    id: &str,
    tree: TreeRecords,
    report: &mut CheckReport,
    progress: &mut impl FnMut(CheckProgress),
) -> Result<(), Error> {
    // Which of the tree's records the index lists.
    let mut listed = vec![false; tree.len()];
    let find = |path: &str| tree.binary_search_by(|(p, _)| (**p).cmp(path)).ok();
    let mut after: Option<Bytes> = None;
    loop {
        let rows = store
            .record_index_rows(id, after.as_deref(), INDEX_PAGE)
            .await?;
        let Some(last) = rows.last() else { break };
        after = Some(last.key.clone());
        let full_page = rows.len() == INDEX_PAGE;
        for row in rows {
            let (collection, rkey) = match row.path {
                Ok(path) => path,
                Err(e) => {
                    let key: String = row.key.iter().map(|b| format!("{b:02x}")).collect();
                    report.problem(format!(
                        "a record-index row cannot be read ({e}); its storage key is {key} \
                         (`datarepo keys decode {key}`)"
                    ));
                    continue;
                }
            };
            let path = format!("{collection}/{rkey}");
            let at = find(&path);
            if let Some(at) = at {
                listed[at] = true;
            }
            let (row_cid, inline) = match row.value {
                Ok(value) => value,
                Err(e) => {
                    // One problem for the row, not a second one for the
                    // tree's record it fails to list.
                    report.problem(format!("the record-index row of {path}: {e}"));
                    continue;
                }
            };
            match at.map(|at| tree[at].1) {
                None => report.problem(format!(
                    "the record index lists {path} ({row_cid}), which the tree does not hold"
                )),
                Some(cid) if cid != row_cid => report.problem(format!(
                    "the record index names {row_cid} for {path}, the tree {cid}"
                )),
                Some(cid) => {
                    // A small record is kept twice, inline in its index row
                    // (read by listings) and as a block (read by CID).
                    if let Some(bytes) = inline
                        && Block::verify(cid, bytes).is_err()
                    {
                        report.problem(format!(
                            "record {path} ({cid}): the copy in its record-index row \
                             does not hash to its CID"
                        ));
                    }
                }
            }
        }
        if !full_page {
            break;
        }
    }
    for ((path, cid), _) in tree.iter().zip(&listed).filter(|(_, listed)| !**listed) {
        report.problem(format!(
            "the tree holds {path} ({cid}), which the record index does not list"
        ));
    }
    drop(listed);
    let total = tree.len() as u64;
    read_records(store, &tree, "", report, |done| {
        progress(CheckProgress::Index { done, total });
    })
    .await
}

/// Reads and hashes the record blocks of `records` (`(path, CID)`), and
/// checks that each keeps to the write API's data model (so it reads back
/// through the API's JSON unchanged); each damaged or invalid one is a
/// problem, named `record {path}{as_of}`; `done` hears how many are read
/// now and then, and at the end. The blocks are read in their keys'
/// order, by range scans ([`store::Store::each_block`]): each SST block
/// the records lie in is read once for all of them, so a small block cache
/// serves (in path order, the records of one SST block are far apart, and
/// each was read again unless the cache held every block), and no record
/// costs a point read of its own (one each was most of a check's time).
async fn read_records<K: Kv>(
    store: &Store<K>,
    records: &[(Box<str>, Cid)],
    as_of: &str,
    report: &mut CheckReport,
    mut done: impl FnMut(u64),
) -> Result<(), Error> {
    let mut read = 0;
    store
        .each_block(
            records.len(),
            |i| records[i].1,
            |i, result| -> Result<(), Error> {
                let (path, cid) = &records[i];
                let block = result
                    .map_err(Error::from)
                    .and_then(|b| b.ok_or(Error::MissingBlock(*cid)));
                match block {
                    Ok(block) => {
                        let collection = path.split_once('/').map_or(&**path, |(c, _)| c);
                        if let Err(e) =
                            crate::record::Record::check_data_model(collection, block.bytes())
                        {
                            report.problem(format!("record {path}{as_of}: {e}"));
                        }
                    }
                    Err(e) if is_damage(&e) => {
                        report.problem(format!("record {path}{as_of}: {e}"));
                    }
                    Err(e) => return Err(e),
                }
                read += 1;
                if read % INDEX_PAGE as u64 == 0 {
                    done(read);
                }
                Ok(())
            },
        )
        .await?;
    done(read);
    Ok(())
}

/// Where in a tree a shard lies, for a problem's sentence.
fn under(prefix: &str) -> String {
    if prefix.is_empty() {
        "the tree's root".to_owned()
    } else {
        format!("keys starting {prefix:?}")
    }
}

/// Blocks a check has read already (and hashed, or reported as damaged).
#[derive(Default)]
struct Examined {
    shards: HashSet<Cid>,
    records: HashSet<Cid>,
}

/// The trees of the commits at `roots` (newest first): every shard and
/// record block they reach that is not in `examined`, read and hashed.
/// A shard that cannot be read is a problem and its subtree is skipped.
async fn walk_history<K: Kv>(
    store: &Store<K>,
    roots: &[(rkey::Tid, Cid)],
    mut examined: Examined,
    report: &mut CheckReport,
    progress: &mut impl FnMut(CheckProgress),
) -> Result<(), Error> {
    let total = roots.len() as u64;
    for (done, (rev, root)) in (1..).zip(roots) {
        let mut todo = vec![(*root, String::new())];
        // Record blocks new to this commit: (path, CID).
        let mut to_read: Vec<(Box<str>, Cid)> = Vec::new();
        while let Some((cid, prefix)) = todo.pop() {
            if !examined.shards.insert(cid) {
                continue;
            }
            let shard = match store.read_shard(&cid).await.map_err(Error::from) {
                Ok(shard) => shard,
                Err(e) if is_damage(&e) => {
                    report.problem(format!(
                        "shard {cid} ({}) of commit {rev}: {e}",
                        under(&prefix)
                    ));
                    continue;
                }
                Err(e) => return Err(e),
            };
            report.older_shards += 1;
            for (key, value) in shard.entries() {
                if let Some(link) = value.link() {
                    todo.push((link, format!("{prefix}{key}")));
                }
                if let Some(data) = value.data()
                    && examined.records.insert(data)
                {
                    to_read.push((format!("{prefix}{key}").into_boxed_str(), data));
                }
            }
        }
        report.older_records += to_read.len() as u64;
        read_records(
            store,
            &to_read,
            &format!(" as of commit {rev}"),
            report,
            |_| {},
        )
        .await?;
        progress(CheckProgress::History { done, total });
    }
    Ok(())
}

/// Every blob the records of `id` refer to (their stored references): held
/// by the repository with as many references as the records make, and its
/// bytes there and hashing to its CID.
async fn check_blobs<K: Kv>(
    store: &Store<K>,
    id: &str,
    report: &mut CheckReport,
) -> Result<(), Error> {
    use keycodec::records;
    let kv = store.kv();
    // Per blob: how many records refer to it, and the first of them.
    let mut referred: std::collections::BTreeMap<Cid, (u64, String)> =
        std::collections::BTreeMap::new();
    for (key, value) in kv
        .scan(&records::repo_record_blobs_range(id), false, usize::MAX)
        .await?
    {
        let path = match records::decode_key(&key) {
            Ok(records::DecodedKey::RecordBlobs {
                collection, rkey, ..
            }) => format!("{collection}/{rkey}"),
            _ => String::from("a record"),
        };
        let cids: Vec<String> = serde_json::from_slice(&value).unwrap_or_default();
        for cid in cids {
            match Cid::try_from(cid.as_str()) {
                Ok(cid) => referred.entry(cid).or_insert((0, path.clone())).0 += 1,
                Err(_) => report.problem(format!(
                    "the blob references of {path} hold {cid:?}, which is not a CID"
                )),
            }
        }
    }
    let blobs = kv.blobs();
    for (cid, (refs, path)) in referred {
        report.blobs += 1;
        let Some(bytes) = kv.get(&records::blob_key(id, &cid.to_string())).await? else {
            report.problem(format!(
                "{path} refers to blob {cid}, which {id} does not hold (its bytes are not \
                 in this store: import the backup again with --blobs DIR)"
            ));
            continue;
        };
        if let Ok(info) = serde_json::from_slice::<crate::blobs::BlobInfo>(&bytes)
            && info.refs != refs
        {
            report.problem(format!(
                "blob {cid} counts {} references, and {refs} records refer to it",
                info.refs
            ));
        }
        match blobs.verify(&cid).await {
            Ok(()) => {}
            Err(store::BlobError::NotFound(_)) => report.problem(format!(
                "blob {cid} ({path} refers to it) is held, and its bytes are missing"
            )),
            Err(e @ store::BlobError::Damaged { .. }) => report.problem(e.to_string()),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
