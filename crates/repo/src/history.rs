//! Each record's history: one entry per commit that created, updated or
//! deleted it, written in that commit's batch under
//! `keycodec::records::record_history_key` (repo, collection, rkey, rev).
//! An entry's value is the commit's CID followed by the record's CID after
//! it (nothing when the commit deleted the record); both are
//! self-delimiting.
//!
//! A repository's *history start* (`history_start_key`, a `u64`
//! big-endian rev) is the lowest rev from which every commit has its
//! entries. A repository created by this datarepo starts at 0; one written
//! before histories were kept starts at its first commit after, and an
//! import moves the start past its head (the file's commits have no
//! entries). Below the start, a record's history is found by reading the
//! record in each commit ([`crate::repository::state::Repository::record_history`]).

use bytes::Bytes;
use cid::Cid;
use keycodec::records;
use rkey::Tid;
use store::{Kv, Store, WriteOp};

use crate::error::Error;

/// One history entry: the commit with `rev` left the record at `cid`
/// (`None`: deleted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) rev: u64,
    pub(crate) commit: Cid,
    pub(crate) cid: Option<Cid>,
}

/// The write of one history entry.
pub(crate) fn entry_op(
    repo: &str,
    collection: &str,
    rkey: &str,
    rev: u64,
    commit: Cid,
    cid: Option<Cid>,
) -> WriteOp {
    let mut value = commit.to_bytes();
    if let Some(cid) = cid {
        value.extend(cid.to_bytes());
    }
    WriteOp::Put(
        records::record_history_key(repo, collection, rkey, rev),
        Bytes::from(value),
    )
}

/// The write that starts a repository's histories at `rev`.
pub(crate) fn start_at(repo: &str, rev: u64) -> WriteOp {
    WriteOp::Put(
        records::history_start_key(repo),
        Bytes::copy_from_slice(&rev.to_be_bytes()),
    )
}

/// The write that starts a repository's histories after the commit with
/// `rev` (an import's head, whose commits have no entries).
pub(crate) fn start_after(repo: &str, rev: Tid) -> WriteOp {
    start_at(repo, rev.as_u64().saturating_add(1))
}

fn malformed(reason: String) -> Error {
    Error::Store(store::Error::Malformed {
        what: "record history",
        reason,
    })
}

/// Where the repository's histories start (`None`: it has none yet),
/// as a writer sees it (every applied write).
pub(crate) async fn start<K: Kv>(store: &Store<K>, repo: &str) -> Result<Option<u64>, Error> {
    match store.kv().get(&records::history_start_key(repo)).await? {
        Some(v) => {
            let bytes: [u8; 8] = v.as_ref().try_into().map_err(|_| {
                malformed(format!(
                    "the history start of {repo} is {} bytes, not 8",
                    v.len()
                ))
            })?;
            Ok(Some(u64::from_be_bytes(bytes)))
        }
        None => Ok(None),
    }
}

fn decode_entry(rev: u64, value: &[u8]) -> Result<Entry, Error> {
    let mut reader = std::io::Cursor::new(value);
    let commit = Cid::read_bytes(&mut reader)
        .map_err(|e| malformed(format!("an entry's commit CID does not decode: {e}")))?;
    let at = usize::try_from(reader.position()).unwrap_or(usize::MAX);
    let cid = match value.get(at..) {
        None | Some([]) => None,
        Some(rest) => Some(
            Cid::try_from(rest)
                .map_err(|e| malformed(format!("an entry's record CID does not decode: {e}")))?,
        ),
    };
    Ok(Entry { rev, commit, cid })
}

/// Up to `limit` entries of a record's history with revs below `before`
/// (all when `None`), newest first (durable writes only).
pub(crate) async fn entries<K: Kv>(
    store: &Store<K>,
    repo: &str,
    collection: &str,
    rkey: &str,
    before: Option<u64>,
    limit: usize,
) -> Result<Vec<Entry>, Error> {
    let mut range = records::record_history_range(repo, collection, rkey);
    if let Some(before) = before {
        range.end = Some(records::record_history_key(repo, collection, rkey, before));
    }
    let rows = store.kv().scan_durable(&range, true, limit).await?;
    rows.into_iter()
        .map(|(key, value)| match records::decode_key(&key) {
            Ok(records::DecodedKey::RecordHistory { rev, .. }) => decode_entry(rev, &value),
            _ => Err(malformed(
                "a key in a record's history range is not an entry".into(),
            )),
        })
        .collect()
}

/// The deletion of every history entry of a repository (its start stays).
pub(crate) async fn deletions<K: Kv>(store: &Store<K>, repo: &str) -> Result<Vec<WriteOp>, Error> {
    let start = records::history_start_key(repo);
    Ok(store
        .kv()
        .scan(&records::repo_history_range(repo), false, usize::MAX)
        .await?
        .into_iter()
        .filter(|(key, _)| key.as_ref() != start.as_slice())
        .map(|(key, _)| WriteOp::Delete(key.to_vec()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    use multihash_codetable::MultihashDigest as _;

    fn cid(data: &[u8]) -> Cid {
        Cid::new_v1(0x71, multihash_codetable::Code::Sha2_256.digest(data))
    }

    #[test]
    fn entry_value_is_pinned() {
        let (commit, record) = (cid(b"commit"), cid(b"record"));
        let WriteOp::Put(key, value) = entry_op("r", "a.b.c", "x", 5, commit, Some(record)) else {
            panic!("an entry is a put");
        };
        assert_eq!(key, records::record_history_key("r", "a.b.c", "x", 5));
        // 36 bytes each: version 01, codec 71, sha2-256 (12 20), 32 bytes.
        assert_eq!(value.len(), 72);
        assert_eq!(&value[..4], [0x01, 0x71, 0x12, 0x20]);
        assert_eq!(value[..36], commit.to_bytes()[..]);
        assert_eq!(value[36..], record.to_bytes()[..]);
        assert_eq!(
            decode_entry(5, &value).ok(),
            Some(Entry {
                rev: 5,
                commit,
                cid: Some(record)
            })
        );
        let WriteOp::Put(_, deleted) = entry_op("r", "a.b.c", "x", 6, commit, None) else {
            panic!("an entry is a put");
        };
        assert_eq!(deleted[..], commit.to_bytes()[..]);
        assert_eq!(decode_entry(6, &deleted).ok().and_then(|e| e.cid), None);
        assert!(decode_entry(6, &deleted[..10]).is_err());
        assert!(decode_entry(6, &[&deleted[..], &[0x01, 0x71]].concat()).is_err());
        let WriteOp::Put(_, start) = start_after("r", Tid::from_u64(41)) else {
            panic!("a start is a put");
        };
        assert_eq!(start[..], 42u64.to_be_bytes());
    }
}
