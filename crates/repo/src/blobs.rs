//! A repository's blobs: the files its records refer to.
//!
//! An uploaded blob is the repository's **temporary** blob until a commit
//! refers to it; the commit that does makes it **permanent**, in the same
//! atomic write (`Repository::apply_writes`). Each record's references are
//! kept beside it, and each blob counts the head's records that refer to
//! it, so that a blob referred to by two records stays until both are
//! gone. Keys: `docs/storage-keys.md` (`0x42`, `0x43`).

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use cid::Cid;
use keycodec::records;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use store::{Kv, WriteOp};

use crate::{error::Error, repository::state::Repository};

/// What a repository knows of one of its blobs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlobInfo {
    /// Its type, sniffed from its bytes when recognized, else the
    /// uploader's claim.
    pub mime_type: String,
    /// Its length in bytes.
    pub size: u64,
    /// When it was uploaded (seconds since the Unix epoch).
    pub created_at: u64,
    /// How many of the head's records refer to it.
    pub refs: u64,
    /// Whether a commit has referred to it (else it is temporary).
    pub permanent: bool,
    /// The rev of the first commit that referred to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_rev: Option<u64>,
    /// The rev of the commit that removed its last reference, while no
    /// record of the head refers to it (older retained commits may).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub released_rev: Option<u64>,
}

impl BlobInfo {
    fn encode(&self) -> Bytes {
        Bytes::from(serde_json::to_vec(self).unwrap_or_default())
    }

    fn decode(bytes: &[u8]) -> Result<Self, Error> {
        serde_json::from_slice(bytes).map_err(|e| {
            Error::Store(store::Error::Malformed {
                what: "blob",
                reason: e.to_string(),
            })
        })
    }
}

/// A blob reference in a record: `{"$type": "blob", "ref": {"$link":
/// CID}, "mimeType", "size"}`, as the record claims it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobRef {
    /// The blob's CID.
    pub cid: Cid,
    /// The type the record claims.
    pub mime_type: Option<String>,
    /// The size the record claims.
    pub size: Option<u64>,
}

/// Whether a record's dag-cbor bytes may hold a blob reference: they hold
/// the text `blob` (a `$type` value) somewhere. A quick scan, so that
/// records without blobs are never decoded for references.
#[must_use]
pub(crate) fn may_refer_to_blobs(dag_cbor: &[u8]) -> bool {
    // CBOR's text string of length 4, then `blob`.
    dag_cbor.windows(5).any(|w| w == b"\x64blob")
}

/// Every blob reference in `value` (a record in AT Protocol JSON), in the
/// order met.
#[must_use]
pub fn blob_refs(value: &Value) -> Vec<BlobRef> {
    let mut found = Vec::new();
    collect(value, &mut found);
    found
}

fn collect(value: &Value, found: &mut Vec<BlobRef>) {
    match value {
        Value::Object(map) => {
            if map.get("$type").and_then(Value::as_str) == Some("blob")
                && let Some(cid) = map
                    .get("ref")
                    .and_then(|r| r.get("$link"))
                    .and_then(Value::as_str)
                    .and_then(|s| Cid::try_from(s).ok())
            {
                found.push(BlobRef {
                    cid,
                    mime_type: map
                        .get("mimeType")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    size: map.get("size").and_then(Value::as_u64),
                });
                return;
            }
            for v in map.values() {
                collect(v, found);
            }
        }
        Value::Array(items) => {
            for v in items {
                collect(v, found);
            }
        }
        _ => {}
    }
}

/// A blob's type: what its first bytes show (`infer`), else the type the
/// uploader claims (its parameters dropped), else
/// `application/octet-stream`.
#[must_use]
pub fn blob_type(head: &[u8], claimed: Option<&str>) -> String {
    infer::get(head)
        .map(|t| t.mime_type().to_owned())
        .or_else(|| {
            claimed
                .map(|v| v.split(';').next().unwrap_or(v).trim().to_ascii_lowercase())
                .filter(|v| !v.is_empty() && v != "*/*")
        })
        .unwrap_or_else(|| "application/octet-stream".to_owned())
}

impl<K: Kv> Repository<K> {
    /// Stores `body` as a temporary blob of this repository (at most
    /// `max_bytes`; hashed as it streams, under the temporary object name
    /// `temp_name` until its CID is known), its type sniffed from its bytes
    /// ([`blob_type`]): its CID and what the repository knows of it.
    ///
    /// # Errors
    ///
    /// [`store::BlobError`] (as [`Error::Blob`]), or a storage error.
    pub async fn store_blob<S, E>(
        &self,
        body: S,
        max_bytes: u64,
        claimed_type: Option<&str>,
        temp_name: &str,
    ) -> Result<(Cid, BlobInfo), Error>
    where
        S: futures::Stream<Item = Result<Bytes, E>> + Unpin + Send,
        E: std::fmt::Display,
    {
        let stored = self
            .store
            .kv()
            .blobs()
            .put(body, max_bytes, temp_name)
            .await?;
        let mime_type = blob_type(&stored.head, claimed_type);
        let info = self.add_blob(&stored.cid, &mime_type, stored.size).await?;
        Ok((stored.cid, info))
    }

    /// Makes an uploaded blob this repository's: temporary until a commit
    /// refers to it. A blob it holds already is left as it is.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn add_blob(&self, cid: &Cid, mime_type: &str, size: u64) -> Result<BlobInfo, Error> {
        let _state = self.state.lock().await;
        if let Some(info) = self.blob(cid).await? {
            return Ok(info);
        }
        // Now, by the repository's injected clock (a TID's microseconds).
        let now_secs = (self.tids.next_tid()?.as_u64() >> 10) / 1_000_000;
        let info = BlobInfo {
            mime_type: mime_type.to_owned(),
            size,
            created_at: now_secs,
            refs: 0,
            permanent: false,
            first_rev: None,
            released_rev: None,
        };
        self.store
            .kv()
            .write(vec![WriteOp::Put(
                records::blob_key(&self.id, &cid.to_string()),
                info.encode(),
            )])
            .await?;
        Ok(info)
    }

    /// What the repository knows of blob `cid`, if it holds it.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn blob(&self, cid: &Cid) -> Result<Option<BlobInfo>, Error> {
        blob_info(self.store.kv(), &self.id, cid).await
    }

    /// The repository's blobs after `after` (a CID's string), at most
    /// `limit`, in CID order.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn list_blobs(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, BlobInfo)>, Error> {
        let mut range = records::blobs_range(&self.id);
        if let Some(after) = after {
            let mut start = records::blob_key(&self.id, after);
            start.push(0);
            range.start = start;
        }
        let rows = self.store.kv().scan(&range, false, limit).await?;
        rows.iter()
            .map(|(k, v)| {
                let cid = match records::decode_key(k) {
                    Ok(records::DecodedKey::Blob { cid, .. }) => cid.into_owned(),
                    _ => String::new(),
                };
                Ok((cid, BlobInfo::decode(v)?))
            })
            .collect()
    }

    /// The blob CIDs record `collection/rkey` refers to, as stored.
    pub(crate) async fn record_blobs(
        &self,
        collection: &str,
        rkey: &str,
    ) -> Result<Vec<Cid>, Error> {
        record_blobs(self.store.kv(), &self.id, collection, rkey).await
    }
}

/// What repository `repo` knows of blob `cid`, if it holds it.
async fn blob_info<K: Kv>(kv: &K, repo: &str, cid: &Cid) -> Result<Option<BlobInfo>, Error> {
    kv.get(&records::blob_key(repo, &cid.to_string()))
        .await?
        .map(|b| BlobInfo::decode(&b))
        .transpose()
}

/// The blob CIDs record `collection/rkey` of `repo` refers to, as stored.
pub(crate) async fn record_blobs<K: Kv>(
    kv: &K,
    repo: &str,
    collection: &str,
    rkey: &str,
) -> Result<Vec<Cid>, Error> {
    let Some(bytes) = kv
        .get(&records::record_blobs_key(repo, collection, rkey))
        .await?
    else {
        return Ok(Vec::new());
    };
    Ok(decode_cid_list(&bytes))
}

fn decode_cid_list(bytes: &[u8]) -> Vec<Cid> {
    let cids: Vec<String> = serde_json::from_slice(bytes).unwrap_or_default();
    cids.iter()
        .filter_map(|s| Cid::try_from(s.as_str()).ok())
        .collect()
}

/// How one commit changes a repository's blob references.
#[derive(Debug, Default)]
pub(crate) struct BlobChanges {
    /// Per record path, its references after the commit.
    records: BTreeMap<(String, String), Vec<Cid>>,
    /// Per blob, how many more (or fewer) of the head's records refer to it.
    counts: BTreeMap<Cid, i64>,
    /// The references new records make, with what they claim.
    claimed: Vec<BlobRef>,
}

impl BlobChanges {
    /// Notes that record `collection/rkey` referred to `before` and now
    /// refers to `after` (`None`: deleted).
    pub(crate) fn record(
        &mut self,
        collection: &str,
        rkey: &str,
        before: &[Cid],
        after: Option<&Value>,
    ) {
        let refs = after.map(blob_refs).unwrap_or_default();
        let now: BTreeSet<Cid> = refs.iter().map(|r| r.cid).collect();
        let was: BTreeSet<Cid> = before.iter().copied().collect();
        for cid in now.difference(&was) {
            *self.counts.entry(*cid).or_default() += 1;
        }
        for cid in was.difference(&now) {
            *self.counts.entry(*cid).or_default() -= 1;
        }
        self.claimed.extend(refs);
        self.records.insert(
            (collection.to_owned(), rkey.to_owned()),
            now.into_iter().collect(),
        );
    }

    /// The references of record `collection/rkey` as of the writes noted
    /// so far, if one of them wrote it.
    pub(crate) fn current(&self, collection: &str, rkey: &str) -> Option<&[Cid]> {
        self.records
            .get(&(collection.to_owned(), rkey.to_owned()))
            .map(Vec::as_slice)
    }

    /// The blobs the commit's new records refer to, each once.
    pub(crate) fn referred(&self) -> Vec<Cid> {
        let cids: BTreeSet<Cid> = self.claimed.iter().map(|r| r.cid).collect();
        cids.into_iter().collect()
    }

    /// Whether the commit changes no blob reference.
    pub(crate) fn is_empty(&self) -> bool {
        self.records.values().all(Vec::is_empty) && self.counts.is_empty()
    }
}

impl<K: Kv> Repository<K> {
    /// The write operations of `changes` in a commit of `rev`: every blob
    /// a new reference names must be the repository's, with the type and
    /// size the record claims ([`Error::BlobNotFound`],
    /// [`Error::BlobMismatch`]); a blob referred to becomes permanent.
    pub(crate) async fn blob_ops(
        &self,
        changes: &BlobChanges,
        rev: u64,
    ) -> Result<Vec<WriteOp>, Error> {
        blob_ops(self.store.kv(), &self.id, changes, rev, true).await
    }
}

/// The write operations of `changes` in a commit of `rev` to `repo`. With
/// `check_claims`, as [`Repository::blob_ops`]; without (an import, whose
/// file is what the repository was), references to blobs the repository
/// does not hold are kept all the same, for the blobs to be adopted once
/// their bytes are here ([`adopt_referenced_blobs`]).
pub(crate) async fn blob_ops<K: Kv>(
    kv: &K,
    repo: &str,
    changes: &BlobChanges,
    rev: u64,
    check_claims: bool,
) -> Result<Vec<WriteOp>, Error> {
    let mut infos: BTreeMap<Cid, BlobInfo> = BTreeMap::new();
    for claim in changes.claimed.iter().filter(|_| check_claims) {
        let info = match infos.get(&claim.cid) {
            Some(info) => info.clone(),
            None => blob_info(kv, repo, &claim.cid)
                .await?
                .ok_or(Error::BlobNotFound(claim.cid.to_string()))?,
        };
        if let Some(claimed) = &claim.mime_type
            && *claimed != info.mime_type
        {
            return Err(Error::BlobMismatch {
                cid: claim.cid.to_string(),
                field: "mimeType",
                claimed: claimed.clone(),
                stored: info.mime_type.clone(),
            });
        }
        if let Some(claimed) = claim.size
            && claimed != info.size
        {
            return Err(Error::BlobMismatch {
                cid: claim.cid.to_string(),
                field: "size",
                claimed: claimed.to_string(),
                stored: info.size.to_string(),
            });
        }
        infos.insert(claim.cid, info);
    }
    let mut ops = Vec::new();
    for ((collection, rkey), cids) in &changes.records {
        let key = records::record_blobs_key(repo, collection, rkey);
        if cids.is_empty() {
            ops.push(WriteOp::Delete(key));
        } else {
            let list: Vec<String> = cids.iter().map(Cid::to_string).collect();
            ops.push(WriteOp::Put(
                key,
                Bytes::from(serde_json::to_vec(&list).unwrap_or_default()),
            ));
        }
    }
    for (cid, change) in &changes.counts {
        if *change == 0 {
            continue;
        }
        let mut info = match infos.remove(cid) {
            Some(info) => info,
            // A reference going away from a blob no longer held.
            None => match blob_info(kv, repo, cid).await? {
                Some(info) => info,
                None => continue,
            },
        };
        let refs = i64::try_from(info.refs).unwrap_or(i64::MAX) + change;
        info.refs = u64::try_from(refs.max(0)).unwrap_or(0);
        if info.refs > 0 {
            info.permanent = true;
            info.first_rev.get_or_insert(rev);
            info.released_rev = None;
        } else {
            info.released_rev = Some(rev);
        }
        ops.push(WriteOp::Put(
            records::blob_key(repo, &cid.to_string()),
            info.encode(),
        ));
    }
    Ok(ops)
}

/// The blobs `records` (dag-cbor record bytes) refer to, each with the
/// type a record claims for it.
pub(crate) fn referred_blobs<'a>(
    records: impl IntoIterator<Item = &'a [u8]>,
) -> BTreeMap<Cid, Option<String>> {
    let mut found = BTreeMap::new();
    for bytes in records {
        if !may_refer_to_blobs(bytes) {
            continue;
        }
        for r in blob_refs(&datamodel::dag_cbor_to_json(bytes)) {
            let claim = found.entry(r.cid).or_insert(None);
            if claim.is_none() {
                *claim = r.mime_type;
            }
        }
    }
    found
}

/// What [`adopt_referenced_blobs`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct BlobAdoption {
    /// Blobs the repository holds now that it did not.
    pub(crate) adopted: u64,
    /// Blobs its records refer to whose bytes are not in the store.
    pub(crate) missing: Vec<Cid>,
}

/// Makes every blob the records of `repo` refer to (the stored references)
/// one it holds, where the store has the blob's bytes and the repository
/// did not hold it: as after an import, which keeps the references of the
/// records it brings whether or not their blobs are here. Its type is
/// found as an upload's is (the bytes' sniffed type, else `claims`: the
/// type a record gives); `rev` is the commit it is permanent from.
pub(crate) async fn adopt_referenced_blobs<K: Kv>(
    kv: &K,
    repo: &str,
    claims: &BTreeMap<Cid, Option<String>>,
    rev: u64,
    now_secs: u64,
) -> Result<BlobAdoption, Error> {
    let mut counts: BTreeMap<Cid, u64> = BTreeMap::new();
    for (_, value) in kv
        .scan(&records::repo_record_blobs_range(repo), false, usize::MAX)
        .await?
    {
        for cid in decode_cid_list(&value) {
            *counts.entry(cid).or_default() += 1;
        }
    }
    let blobs = kv.blobs();
    let mut adoption = BlobAdoption::default();
    let mut ops = Vec::new();
    for (cid, refs) in counts {
        if blob_info(kv, repo, &cid).await?.is_some() {
            continue;
        }
        let head = match blobs.get(&cid, Some(0..store::SNIFF_BYTES as u64)).await {
            Ok(bytes) => bytes,
            Err(store::BlobError::NotFound(_)) => {
                adoption.missing.push(cid);
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let size = head.size;
        let head: Vec<Bytes> = futures::TryStreamExt::try_collect(head.stream).await?;
        let info = BlobInfo {
            mime_type: blob_type(&head.concat(), claims.get(&cid).and_then(Option::as_deref)),
            size,
            created_at: now_secs,
            refs,
            permanent: true,
            first_rev: Some(rev),
            released_rev: None,
        };
        ops.push(WriteOp::Put(
            records::blob_key(repo, &cid.to_string()),
            info.encode(),
        ));
        adoption.adopted += 1;
    }
    if !ops.is_empty() {
        kv.write(ops).await?;
    }
    Ok(adoption)
}

/// What a copy of blobs between stores did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlobCopyReport {
    /// Blobs copied.
    pub copied: u64,
    /// Bytes copied.
    pub bytes: u64,
    /// Blobs the destination had already (a blob's bytes never change).
    pub present: u64,
}

/// Copies the blobs `cids` from `from` into `to` where `to` lacks them,
/// each hashed on the way ([`store::BlobError::Damaged`] stops the copy);
/// those `from` lacks are returned. `progress` gets the report so far.
pub(crate) async fn copy_blobs(
    from: &store::Blobs,
    to: &store::Blobs,
    cids: impl IntoIterator<Item = Cid>,
    mut progress: impl FnMut(&BlobCopyReport) + Send,
) -> Result<(BlobCopyReport, Vec<Cid>), Error> {
    let mut report = BlobCopyReport::default();
    let mut absent = Vec::new();
    for cid in cids {
        if to.size(&cid).await?.is_some() {
            report.present += 1;
            continue;
        }
        match from.copy_to(&cid, to, &format!("copy-{cid}")).await {
            Ok(stored) => {
                report.copied += 1;
                report.bytes += stored.size;
            }
            Err(store::BlobError::NotFound(_)) => absent.push(cid),
            Err(e) => return Err(e.into()),
        }
        progress(&report);
    }
    Ok((report, absent))
}

impl<K: Kv> Repository<K> {
    /// Copies every blob the repository holds permanently (those a commit
    /// referred to) into `to`, for a backup (`export --blobs DIR`): those
    /// `to` has already are left, so that a backup directory grows by
    /// what is new. `progress` gets the report so far.
    ///
    /// # Errors
    ///
    /// [`Error::Blob`] when a blob's bytes are missing or damaged here, or
    /// a storage error.
    pub async fn export_blobs(
        &self,
        to: &store::Blobs,
        progress: impl FnMut(&BlobCopyReport) + Send,
    ) -> Result<BlobCopyReport, Error> {
        let held = self.list_blobs(None, usize::MAX).await?;
        let cids = held
            .iter()
            .filter(|(_, info)| info.permanent)
            .filter_map(|(cid, _)| Cid::try_from(cid.as_str()).ok());
        let (report, absent) = copy_blobs(&self.store.kv().blobs(), to, cids, progress).await?;
        match absent.first() {
            Some(cid) => Err(store::BlobError::NotFound(*cid).into()),
            None => Ok(report),
        }
    }
}
