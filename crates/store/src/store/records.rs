//! The record index: a repository's current records by collection and
//! record key, each with its CID and, when small, its block.

use bytes::Bytes;
use cid::Cid;
use keycodec::records;

use super::{
    commit::IndexRow,
    index_value::{inline_block, parse_index_value},
    state::{Store, View},
};
use crate::{block::Block, error::Error, kv::interface::Kv};

impl<K: Kv> Store<K> {
    /// Up to `limit` records of a collection as (rkey, CID), in rkey order
    /// (descending with `reverse`), strictly after `cursor` in that order.
    ///
    /// # Errors
    ///
    /// [`Error::Malformed`] or a storage error.
    pub async fn list_records(
        &self,
        repo: &str,
        collection: &str,
        cursor: Option<&str>,
        reverse: bool,
        limit: usize,
    ) -> Result<Vec<(String, Cid)>, Error> {
        let rows = self
            .index_rows(repo, collection, cursor, reverse, limit, View::Durable)
            .await?;
        rows.into_iter()
            .map(|(rkey, value)| Ok((rkey, parse_index_value(&value)?.0)))
            .collect()
    }

    /// Like [`Store::list_records`], with each record's block (checked
    /// against its CID): one range scan for records kept inline in the
    /// index, and concurrent block reads for the others.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`], [`Error::Malformed`] or a storage error.
    pub async fn list_record_blocks(
        &self,
        repo: &str,
        collection: &str,
        cursor: Option<&str>,
        reverse: bool,
        limit: usize,
    ) -> Result<Vec<(String, Block)>, Error> {
        self.record_blocks_in(repo, collection, cursor, reverse, limit, View::Durable)
            .await
    }

    /// [`Store::list_record_blocks`] as writers see the store (a commit
    /// applied but not yet durable included): what an index build reads,
    /// with commits held off.
    ///
    /// # Errors
    ///
    /// As [`Store::list_record_blocks`].
    pub async fn list_written_record_blocks(
        &self,
        repo: &str,
        collection: &str,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Block)>, Error> {
        self.record_blocks_in(repo, collection, cursor, false, limit, View::Written)
            .await
    }

    pub(super) async fn record_blocks_in(
        &self,
        repo: &str,
        collection: &str,
        cursor: Option<&str>,
        reverse: bool,
        limit: usize,
        view: View,
    ) -> Result<Vec<(String, Block)>, Error> {
        let rows = self
            .index_rows(repo, collection, cursor, reverse, limit, view)
            .await?;
        // Inline records are checked here; the others are read together.
        let rows = rows
            .into_iter()
            .map(|(rkey, value)| Ok((rkey, inline_block(&value)?)))
            .collect::<Result<Vec<_>, Error>>()?;
        let stored = rows.iter().filter_map(|(_, b)| b.as_ref().err());
        let mut fetched = futures::future::try_join_all(stored.map(|cid| self.indexed_block(*cid)))
            .await?
            .into_iter();
        rows.into_iter()
            .map(|(rkey, block)| match block {
                Ok(block) => Ok((rkey, block)),
                // One fetched block per `Err`, in order.
                Err(cid) => {
                    fetched
                        .next()
                        .map(|block| (rkey, block))
                        .ok_or_else(|| Error::Malformed {
                            what: "record index entry",
                            reason: format!("no block read for {cid}"),
                        })
                }
            })
            .collect()
    }

    /// Up to `limit` record-index rows of a repository, every collection,
    /// in key order (by collection, then rkey), starting after the row
    /// whose storage key is `after`; read as a reader sees the store. Each
    /// row is decoded on its own ([`IndexRow`]), so a malformed row does
    /// not hide the others.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn record_index_rows(
        &self,
        repo: &str,
        after: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<IndexRow>, Error> {
        let mut range = records::repo_record_index_range(repo);
        if let Some(key) = after {
            // The smallest key after that row's: append a zero byte.
            range.start = [key, &[0]].concat();
        }
        let rows = self.kv_scan(&range, false, limit, View::Durable).await?;
        Ok(rows
            .into_iter()
            .map(|(key, value)| {
                let malformed = |reason: String| Error::Malformed {
                    what: "record index entry",
                    reason,
                };
                let path = match records::decode_key(&key) {
                    Ok(records::DecodedKey::RecordIndex {
                        collection, rkey, ..
                    }) => Ok((collection.into_owned(), rkey.into_owned())),
                    Ok(_) => Err(malformed("not a record index key".into())),
                    Err(e) => Err(malformed(format!("its key: {e}"))),
                };
                IndexRow {
                    path,
                    value: parse_index_value(&value),
                    key,
                }
            })
            .collect())
    }

    pub(super) async fn index_block(&self, value: &Bytes) -> Result<Block, Error> {
        match inline_block(value)? {
            Ok(block) => Ok(block),
            Err(cid) => self.indexed_block(cid).await,
        }
    }

    /// The block a record index entry names (not kept inline).
    pub(super) async fn indexed_block(&self, cid: Cid) -> Result<Block, Error> {
        self.get_block(&cid).await?.ok_or_else(|| Error::Malformed {
            what: "record index entry",
            reason: format!("names block {cid}, which is not stored"),
        })
    }

    pub(super) async fn index_rows(
        &self,
        repo: &str,
        collection: &str,
        cursor: Option<&str>,
        reverse: bool,
        limit: usize,
        view: View,
    ) -> Result<Vec<(String, Bytes)>, Error> {
        let mut range = records::record_index_range(repo, collection);
        if let Some(c) = cursor {
            let key = records::record_index_key(repo, collection, c);
            if reverse {
                range.end = Some(key);
            } else {
                // The smallest key after `key`: append a zero byte.
                let mut after = key;
                after.push(0);
                range.start = after;
            }
        }
        let rows = self.kv_scan(&range, reverse, limit, view).await?;
        rows.into_iter()
            .map(|(k, v)| {
                let decoded = records::decode_key(&k).map_err(|e| Error::Malformed {
                    what: "record index entry",
                    reason: e.to_string(),
                })?;
                let records::DecodedKey::RecordIndex { rkey, .. } = decoded else {
                    return Err(Error::Malformed {
                        what: "record index entry",
                        reason: "not a record index key".into(),
                    });
                };
                Ok((rkey.into_owned(), v))
            })
            .collect()
    }

    /// A record's CID from the index.
    ///
    /// # Errors
    ///
    /// [`Error::Malformed`] or a storage error.
    pub async fn record(
        &self,
        repo: &str,
        collection: &str,
        rkey: &str,
    ) -> Result<Option<Cid>, Error> {
        match self.index_entry(repo, collection, rkey).await? {
            Some(v) => Ok(Some(parse_index_value(&v)?.0)),
            None => Ok(None),
        }
    }

    pub(super) async fn index_entry(
        &self,
        repo: &str,
        collection: &str,
        rkey: &str,
    ) -> Result<Option<Bytes>, Error> {
        self.kv_get(
            &records::record_index_key(repo, collection, rkey),
            View::Durable,
        )
        .await
    }

    /// A record's block (checked against its CID), in one lookup when the
    /// record is kept inline in the index.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`], [`Error::Malformed`] or a storage error.
    pub async fn record_block(
        &self,
        repo: &str,
        collection: &str,
        rkey: &str,
    ) -> Result<Option<Block>, Error> {
        match self.index_entry(repo, collection, rkey).await? {
            Some(v) => self.index_block(&v).await.map(Some),
            None => Ok(None),
        }
    }

    /// [`Store::record_block`] as writers see the store: a commit that is
    /// applied but not yet durable included (field-index queries read this
    /// view, the one their bitmaps are kept in).
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`], [`Error::Malformed`] or a storage error.
    pub async fn written_record_block(
        &self,
        repo: &str,
        collection: &str,
        rkey: &str,
    ) -> Result<Option<Block>, Error> {
        let key = records::record_index_key(repo, collection, rkey);
        match self.kv_get(&key, View::Written).await? {
            Some(v) => self.index_block(&v).await.map(Some),
            None => Ok(None),
        }
    }
}
