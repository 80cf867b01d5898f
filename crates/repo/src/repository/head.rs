//! A repository's head: the commit it names, which revs a head may take,
//! and the firehose event a new head writes.

use bytes::Bytes;
use cid::Cid;
use rkey::Tid;
use store::{Head, Kv, Store};

use crate::{commit::CommitData, error::Error};

/// A repository's current head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeadInfo {
    /// The head commit's CID.
    pub commit: Cid,
    /// Its rev.
    pub rev: Tid,
    /// Its Pail root.
    pub data: Cid,
}

/// How far past the local clock a commit's rev may be: an imported commit
/// further ahead would make every later commit here either wait for the
/// clock or run past what a TID can hold.
pub const MAX_REV_AHEAD: std::time::Duration = std::time::Duration::from_secs(300);

/// Why `rev` cannot be a repository's head, if it cannot: a rev no
/// conforming generator makes (the top bit set, first character `c`–`j`),
/// or one more than [`MAX_REV_AHEAD`] ahead of `now_micros`.
pub(crate) fn unusable_rev(rev: Tid, now_micros: u64) -> Option<String> {
    let value = rev.as_u64();
    if value >> 63 == 1 {
        return Some(format!(
            "rev {rev} has the top bit set, which no TID generator makes \
             (later commits could not have higher revs)"
        ));
    }
    let micros = value >> 10;
    let limit = now_micros.saturating_add(MAX_REV_AHEAD.as_micros() as u64);
    (micros > limit).then(|| {
        format!(
            "rev {rev} is {} s ahead of this machine's clock (at most {} s allowed; \
             later commits could not have higher revs)",
            (micros - now_micros) / 1_000_000,
            MAX_REV_AHEAD.as_secs()
        )
    })
}

/// A stored head with its commit's rev and Pail root.
pub(super) async fn head_info<K: Kv>(
    store: &Store<K>,
    head: Option<Head>,
) -> Result<Option<HeadInfo>, Error> {
    let Some(head) = head else {
        return Ok(None);
    };
    let commit = load_commit(store, head.commit).await?;
    Ok(Some(HeadInfo {
        commit: head.commit,
        rev: commit.rev,
        data: commit.data,
    }))
}

/// The stored firehose event of `commit` (CID `cid`), made on `previous`
/// (the head it follows), adding `shards`.
pub(super) fn commit_event(
    commit: &CommitData,
    cid: Cid,
    previous: Option<&HeadInfo>,
    shards: Vec<Cid>,
    ops: Vec<crate::event::RepoOp>,
    blobs: Vec<Cid>,
) -> Bytes {
    crate::event::StoredEvent {
        repo: commit.repo.clone(),
        commit: cid,
        rev: commit.rev.to_string(),
        since: previous.map(|h| h.rev.to_string()),
        ops,
        time: commit.time(),
        prev_data: previous.map(|h| h.data),
        shards,
        blobs,
    }
    .encode()
}

/// Reads and decodes a commit block.
pub(crate) async fn load_commit<K: Kv>(store: &Store<K>, cid: Cid) -> Result<CommitData, Error> {
    let block = store
        .get_block(&cid)
        .await?
        .ok_or(Error::MissingBlock(cid))?;
    CommitData::decode(cid, block.bytes())
}
