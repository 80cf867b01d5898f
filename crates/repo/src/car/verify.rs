//! Offline verification of exported CAR files and record proofs: every
//! block against its CID, every commit's signature against the keys given,
//! and every commit's tree and records against the CIDs that name them. No
//! store is needed.

use std::{collections::HashSet, sync::Arc};

use cid::Cid;
use pail::{Shard, ShardFetcher};
use rkey::Tid;
use tokio::io::AsyncRead;

use crate::{
    car::read::{FileBlocks, FileHistory, car_err, file_history, read_car, root_commit},
    commit::CommitData,
    error::Error,
    signing::PublicKey,
    signing::SignatureError,
};

/// What [`verify_car`] checks beyond blocks and signatures.
#[derive(Debug, Clone, Default)]
pub struct VerifyOptions {
    /// The public keys that may have signed the commits (rotation: every
    /// key the history was signed with).
    pub keys: Vec<PublicKey>,
    /// Whether blocks named by a tree may be absent from the file (an
    /// incremental export holds only what changed since the export before
    /// it). Absent blocks are counted in [`VerifyReport::absent`].
    pub incremental: bool,
    /// Whether a file none of whose commits is signed (an unsigned
    /// repository's) passes with everything but signatures checked. A file
    /// with some commits signed and some not never does.
    pub unsigned_ok: bool,
}

/// One verified commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedCommit {
    /// The commit.
    pub cid: Cid,
    /// Its rev.
    pub rev: Tid,
    /// The key that signed it; `None` for an unsigned commit (only with
    /// [`VerifyOptions::unsigned_ok`], when no commit in the file is
    /// signed).
    pub key: Option<PublicKey>,
}

/// What [`verify_car`] verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// The repository.
    pub repo: String,
    /// The commits in the file, newest (the root) first.
    pub commits: Vec<VerifiedCommit>,
    /// Blocks in the file, each hashed and compared with its CID.
    pub blocks: u64,
    /// Distinct shards of the commits' trees, each decoded.
    pub shards: u64,
    /// Records in the root commit's tree.
    pub records: u64,
    /// Further record entries in older commits' trees (history).
    pub history_records: u64,
    /// Blocks the trees name that the file does not hold (only with
    /// [`VerifyOptions::incremental`]; otherwise each is an error).
    pub absent: u64,
}

/// The first of `keys` that signed `commit`, or an [`Error::Untrusted`]
/// naming the commit.
pub(crate) fn check_signature<'k>(
    cid: Cid,
    commit: &CommitData,
    keys: &'k [PublicKey],
) -> Result<&'k PublicKey, Error> {
    commit.verify(keys).map_err(|e| Error::Untrusted {
        commit: cid,
        reason: format!(
            "(rev {}) of {}: {}",
            commit.rev,
            commit.repo,
            match e {
                SignatureError::Unsigned => "the commit is not signed".to_owned(),
                SignatureError::Mismatch if keys.is_empty() => {
                    "no public key was given to check its signature against".to_owned()
                }
                SignatureError::Mismatch if keys.len() == 1 => {
                    format!("the signature is not by {}", keys[0])
                }
                SignatureError::Mismatch => format!(
                    "the signature is not by any of the {} keys given ({})",
                    keys.len(),
                    keys.iter()
                        .map(PublicKey::did_key)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                e => e.to_string(),
            }
        ),
    })
}

/// The root commit of a file and the commits before it in the file.
fn commits(blocks: &FileBlocks, root: Cid) -> Result<Vec<(Cid, CommitData)>, Error> {
    let (_, commit) = root_commit(blocks, root)?;
    let FileHistory { commits, .. } = file_history(blocks, root, &commit, None)?;
    let mut all = Vec::with_capacity(1 + commits.len());
    all.push((root, commit));
    all.extend(commits);
    Ok(all)
}

/// Verifies a CAR file made by `export` (plain, `--since` or `--history`):
/// every block hashes to its CID; every commit in the file (the root and
/// the chain of `prev` commits the file holds) is signed by one of
/// `options.keys` (or, with [`VerifyOptions::unsigned_ok`], none is); every commit's tree decodes, shard by shard, and every
/// shard and record it names is in the file (unless
/// [`VerifyOptions::incremental`]).
///
/// # Errors
///
/// The first failure: [`Error::InvalidCar`] naming the block (corrupt,
/// malformed, or absent), [`Error::Untrusted`] naming the commit whose
/// signature does not verify, or an I/O error.
pub async fn verify_car<R: AsyncRead + Unpin + Send>(
    input: R,
    options: &VerifyOptions,
) -> Result<VerifyReport, Error> {
    let (root, blocks) = read_car(input).await?;
    let commits = commits(&blocks, root)?;
    let unsigned = options.unsigned_ok && commits.iter().all(|(_, c)| !c.is_signed());
    let mut verified = Vec::with_capacity(commits.len());
    for (cid, commit) in &commits {
        let key = if unsigned {
            None
        } else {
            Some(*check_signature(*cid, commit, &options.keys)?)
        };
        verified.push(VerifiedCommit {
            cid: *cid,
            rev: commit.rev,
            key,
        });
    }
    let mut walk = TreeWalk {
        blocks: &blocks,
        incremental: options.incremental,
        seen: HashSet::new(),
        shards: 0,
        entries: 0,
        absent: 0,
    };
    let mut records = 0;
    for (i, (cid, commit)) in commits.iter().enumerate() {
        walk.tree(*cid, commit)?;
        if i == 0 {
            records = walk.entries;
        }
    }
    Ok(VerifyReport {
        repo: commits[0].1.repo.clone(),
        commits: verified,
        blocks: blocks.len() as u64,
        shards: walk.shards,
        records,
        history_records: walk.entries - records,
        absent: walk.absent,
    })
}

/// Walks trees over a file's blocks, each shard once.
struct TreeWalk<'a> {
    blocks: &'a FileBlocks,
    incremental: bool,
    seen: HashSet<Cid>,
    shards: u64,
    entries: u64,
    absent: u64,
}

impl TreeWalk<'_> {
    fn tree(&mut self, commit_cid: Cid, commit: &CommitData) -> Result<(), Error> {
        let mut stack = vec![commit.data];
        while let Some(cid) = stack.pop() {
            if !self.seen.insert(cid) {
                continue;
            }
            let Some(block) = self.blocks.get(&cid) else {
                self.absent(commit_cid, commit, "shard", cid)?;
                continue;
            };
            let shard = Shard::decode(block.bytes()).map_err(|e| {
                car_err(format!(
                    "shard {cid} of commit {commit_cid} (rev {}) is malformed: {e}",
                    commit.rev
                ))
            })?;
            self.shards += 1;
            for i in 0..shard.len() {
                if let Some(record) = shard.data(i) {
                    self.entries += 1;
                    if self.blocks.get(&record).is_none() {
                        self.absent(commit_cid, commit, "record", record)?;
                    }
                }
                if let Some(child) = shard.link(i) {
                    stack.push(child);
                }
            }
        }
        Ok(())
    }

    fn absent(
        &mut self,
        commit_cid: Cid,
        commit: &CommitData,
        what: &str,
        cid: Cid,
    ) -> Result<(), Error> {
        if self.incremental {
            self.absent += 1;
            return Ok(());
        }
        Err(car_err(format!(
            "{what} {cid}, in the tree of commit {commit_cid} (rev {}), is not in the file \
             (an incremental export? verify it with the exports before it, or as incremental)",
            commit.rev
        )))
    }
}

/// A record proven by [`verify_record`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedRecord {
    /// The commit that proves it.
    pub commit: VerifiedCommit,
    /// The record's CID, or `None`: the signed tree proves that there is
    /// no such record.
    pub cid: Option<Cid>,
    /// The record.
    pub record: Option<crate::record::Record>,
}

/// Shards from a file's blocks only.
struct FileShards<'a>(&'a FileBlocks);

impl ShardFetcher for FileShards<'_> {
    async fn get_shard(&self, cid: &Cid) -> Result<Arc<Shard>, pail::Error> {
        let block = self.0.get(cid).ok_or(pail::Error::MissingBlock(*cid))?;
        Ok(Arc::new(Shard::decode(block.bytes())?))
    }
}

/// Verifies a record proof (the CAR `com.atproto.sync.getRecord` returns):
/// the signed commit, the shards on the path from its tree's root to
/// `collection/rkey`, and the record. Proves the record's presence (and
/// bytes), or its absence at that commit.
///
/// # Errors
///
/// [`Error::InvalidCar`] naming what is corrupt or absent,
/// [`Error::Untrusted`] when the commit is not signed by one of `keys`, or
/// an I/O error.
pub async fn verify_record<R: AsyncRead + Unpin + Send>(
    input: R,
    repo: &str,
    collection: &str,
    rkey: &str,
    keys: &[PublicKey],
) -> Result<VerifiedRecord, Error> {
    let (root, blocks) = read_car(input).await?;
    let (_, commit) = root_commit(&blocks, root)?;
    if commit.repo != repo {
        return Err(car_err(format!(
            "the proof is for repository {}, not {repo}",
            commit.repo
        )));
    }
    let key = *check_signature(root, &commit, keys)?;
    let path = format!("{collection}/{rkey}");
    let cid = pail::get(&FileShards(&blocks), commit.data, &path)
        .await
        .map_err(|e| {
            car_err(format!(
                "the path to {path} in commit {root}'s tree cannot be followed: {e}"
            ))
        })?;
    let record = match cid {
        Some(cid) => {
            let block = blocks
                .get(&cid)
                .ok_or_else(|| car_err(format!("record {cid} ({path}) is not in the file")))?;
            Some(
                crate::record::Record::from_block(block.clone()).map_err(|e| {
                    car_err(format!("record {cid} ({path}) is not a valid record: {e}"))
                })?,
            )
        }
        None => None,
    };
    Ok(VerifiedRecord {
        commit: VerifiedCommit {
            cid: root,
            rev: commit.rev,
            key: Some(key),
        },
        cid,
        record,
    })
}
