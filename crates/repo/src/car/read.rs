//! Reading a CAR v1 file: its blocks checked against their CIDs, its root
//! commit and the commits before it. Import and offline verification both
//! start here.

use bytes::Bytes;
use cid::Cid;
use store::Block;
use tokio::io::AsyncRead;

use crate::{commit::CommitData, error::Error, record::is_supported};

pub(crate) fn car_err(e: impl std::fmt::Display) -> Error {
    Error::InvalidCar(e.to_string())
}

/// A CAR file's blocks, each checked against its CID, in file order
/// (a block given twice is kept once), found by CID through a table of
/// their positions.
///
/// The table holds positions and hashes of the SHA-256 digest (import
/// accepts no other hash), not CIDs: ~32 MiB for a million blocks where a
/// map from CID to block takes ~350 MiB; growing it rehashes without
/// touching the blocks; and a walk of a file written in pre-order reads
/// `blocks` front to back.
pub(crate) struct FileBlocks {
    pub(super) blocks: Vec<Block>,
    /// (hash, position in `blocks`).
    positions: hashbrown::HashTable<(u64, u32)>,
    hasher: foldhash::fast::RandomState,
}

impl FileBlocks {
    /// The file's blocks in file order, a block the file gives again
    /// dropped at its later places.
    fn new(mut blocks: Vec<Block>) -> Result<Self, Error> {
        if u32::try_from(blocks.len()).is_err() {
            return Err(car_err("the file has more than 4,294,967,295 blocks"));
        }
        let hasher = foldhash::fast::RandomState::default();
        let mut positions = hashbrown::HashTable::with_capacity(blocks.len());
        let mut repeated = Vec::new();
        // Positions fit a u32: the count was checked above.
        for (p, block) in (0u32..).zip(&blocks) {
            let cid = block.cid();
            let hash = hash_of(&hasher, &cid);
            match positions.entry(hash, is_at(&blocks, hash, &cid), |&(h, _)| h) {
                hashbrown::hash_table::Entry::Vacant(slot) => {
                    slot.insert((hash, p));
                }
                hashbrown::hash_table::Entry::Occupied(_) => repeated.push(p),
            }
        }
        if repeated.is_empty() {
            return Ok(Self {
                blocks,
                positions,
                hasher,
            });
        }
        // Rare: drop the repeats and place the rest again.
        drop(positions);
        let mut repeated = repeated.into_iter().peekable();
        let mut p = 0u32;
        blocks.retain(|_| {
            let keep = repeated.next_if_eq(&p).is_none();
            p += 1;
            keep
        });
        Self::new(blocks)
    }

    fn hash(&self, cid: &Cid) -> u64 {
        hash_of(&self.hasher, cid)
    }

    /// Where the block `cid` is in [`FileBlocks::blocks`].
    pub(super) fn position(&self, cid: &Cid) -> Option<usize> {
        let hash = self.hash(cid);
        self.positions
            .find(hash, is_at(&self.blocks, hash, cid))
            .map(|&(_, p)| p as usize)
    }

    /// [`FileBlocks::position`], trying `guess` first: a walk of a file
    /// written in pre-order meets its blocks one after another.
    pub(super) fn position_from(&self, guess: usize, cid: &Cid) -> Option<usize> {
        match self.blocks.get(guess) {
            Some(block) if block.cid() == *cid => Some(guess),
            _ => self.position(cid),
        }
    }

    pub(crate) fn get(&self, cid: &Cid) -> Option<&Block> {
        self.position(cid).map(|p| &self.blocks[p])
    }

    pub(crate) fn len(&self) -> usize {
        self.blocks.len()
    }
}

fn hash_of(hasher: &foldhash::fast::RandomState, cid: &Cid) -> u64 {
    std::hash::BuildHasher::hash_one(hasher, cid.hash().digest())
}

/// Whether a table entry of [`FileBlocks`] is the block `cid` (whose
/// digest hashes to `hash`).
fn is_at<'a>(blocks: &'a [Block], hash: u64, cid: &'a Cid) -> impl Fn(&(u64, u32)) -> bool + 'a {
    move |&(h, p)| h == hash && blocks[p as usize].cid() == *cid
}

/// A block of the file being imported: as read, then checked.
enum FileBlock {
    Read(Cid, Bytes),
    Checked(Block),
}

impl FileBlock {
    /// Checks the block against its CID, once.
    fn check(&mut self) -> Result<(), Error> {
        let Self::Read(cid, bytes) = self else {
            return Ok(());
        };
        let cid = *cid;
        if !is_supported(&cid) {
            return Err(car_err(format!(
                "block {cid} uses an unsupported hash (only sha2-256)"
            )));
        }
        let block = Block::verify(cid, std::mem::take(bytes)).map_err(|_| {
            car_err(format!(
                "block {cid} does not hash to its CID (the file is corrupt or was tampered with)"
            ))
        })?;
        *self = Self::Checked(block);
        Ok(())
    }
}

/// Reads a CAR v1 file with one root: the root and the file's blocks, each
/// checked against its CID.
pub(crate) async fn read_car<R: AsyncRead + Unpin + Send>(
    input: R,
) -> Result<(Cid, FileBlocks), Error> {
    let mut reader = iroh_car::CarReader::new(input).await.map_err(|e| match e {
        // iroh-car's words for a header whose roots list is empty.
        iroh_car::Error::Parsing(m) if m == "empty CAR file" => {
            car_err("the file's header names no root (expected exactly one: the commit)".to_owned())
        }
        e => car_err(format!("not a CAR v1 file: {e}")),
    })?;
    let root = match reader.header().roots() {
        [root] => *root,
        roots => {
            return Err(car_err(format!(
                "expected exactly one root (the commit), found {}",
                roots.len()
            )));
        }
    };
    // Read, then hash on every core, then index: the same outcome as
    // checking block by block (the first bad block in file order is the
    // error, and a read error counts only after the blocks before it).
    // Each block is checked in place, the checked list takes the read
    // list's place, and the index is sized once, so the file's blocks are
    // never held in two lists at once.
    let mut read = Vec::new();
    let read_error = loop {
        match reader.next_block().await {
            Ok(Some((cid, bytes))) => read.push(FileBlock::Read(cid, Bytes::from(bytes))),
            Ok(None) => break None,
            Err(e) => break Some(car_err(format!("truncated or malformed block: {e}"))),
        }
    };
    let first_bad = crate::parallel::in_parts(&mut read, |part| {
        part.iter_mut().find_map(|block| block.check().err())
    });
    if let Some(e) = first_bad.into_iter().flatten().next() {
        return Err(e);
    }
    // Every block was checked above, or the import failed there. The
    // checked blocks take the place of the read ones (the list is reused
    // in place, not copied).
    let blocks = read
        .into_iter()
        .map(|block| match block {
            FileBlock::Checked(block) => Ok(block),
            FileBlock::Read(cid, _) => Err(car_err(format!("block {cid} was not checked"))),
        })
        .collect::<Result<Vec<Block>, Error>>()?;
    let blocks = FileBlocks::new(blocks)?;
    match read_error {
        Some(e) => Err(e),
        None => Ok((root, blocks)),
    }
}

/// The file's commits before `root` (decoded as `commit`), newest first:
/// from its `prev` back while each is in the file, stopping at `head` (the
/// store's head). Returns them and the commit the oldest of them (or the
/// root) follows.
pub(crate) fn file_history(
    blocks: &FileBlocks,
    root: Cid,
    commit: &CommitData,
    head: Option<Cid>,
) -> Result<FileHistory, Error> {
    let mut history: Vec<(Cid, CommitData)> = Vec::new();
    let mut follows = commit.prev;
    while let Some(prev) = follows {
        if Some(prev) == head || prev == root {
            break;
        }
        let Some(block) = blocks.get(&prev) else {
            break;
        };
        let older = CommitData::decode(prev, block.bytes())
            .map_err(|e| car_err(format!("commit {prev}, an older commit in the file: {e}")))?;
        let newer = history.last().map_or(commit, |(_, c)| c);
        if older.repo != commit.repo {
            return Err(car_err(format!(
                "commit {prev} belongs to {}, the root to {}",
                older.repo, commit.repo
            )));
        }
        if older.rev >= newer.rev {
            return Err(car_err(format!(
                "commit {prev} (rev {}) is not older than the commit after it (rev {})",
                older.rev, newer.rev
            )));
        }
        follows = older.prev;
        history.push((prev, older));
    }
    Ok(FileHistory {
        commits: history,
        follows,
    })
}

/// The file's root commit block, decoded.
pub(crate) fn root_commit(blocks: &FileBlocks, root: Cid) -> Result<(&Block, CommitData), Error> {
    let block = blocks
        .get(&root)
        .ok_or_else(|| car_err(format!("the root commit {root} is not in the file")))?;
    let commit = CommitData::decode(root, block.bytes())
        .map_err(|e| car_err(format!("the root is not a datarepo commit: {e}")))?;
    Ok((block, commit))
}

/// The file's commits before its root, newest first, and the commit the
/// oldest of them (or the root) follows.
pub(crate) struct FileHistory {
    pub(crate) commits: Vec<(Cid, CommitData)>,
    pub(crate) follows: Option<Cid>,
}
