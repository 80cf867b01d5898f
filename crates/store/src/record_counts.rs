//! Each collection's record count, under its record-count key
//! (`keycodec::records::record_count_key`): a `u64`, big-endian. Writers
//! keep it in the same batch as each commit that changes the number; a
//! store written before counts were kept has none, and the count is then
//! the length of the collection's record index.

use bytes::Bytes;
use keycodec::records;

use crate::store::state::View;
use crate::{error::Error, kv::interface::Kv, kv::interface::WriteOp, store::state::Store};

/// Record-index rows read per page when counting them.
const COUNT_PAGE: usize = 4096;

/// The write that sets a collection's record count to `n`.
#[must_use]
pub fn record_count_op(repo: &str, collection: &str, n: u64) -> WriteOp {
    WriteOp::Put(
        records::record_count_key(repo, collection),
        Bytes::copy_from_slice(&n.to_be_bytes()),
    )
}

/// The write that moves a collection's record count from `before` by
/// `change` (records created less records deleted).
///
/// # Errors
///
/// [`Error::Malformed`] when the count would fall below zero or past
/// `u64::MAX`: the stored count is wrong (`check` reports it).
pub fn record_count_change(
    repo: &str,
    collection: &str,
    before: u64,
    change: i64,
) -> Result<WriteOp, Error> {
    let after = before
        .checked_add_signed(change)
        .ok_or_else(|| Error::Malformed {
            what: "record count",
            reason: format!(
                "{collection} of {repo} counts {before} records, and a commit changes that by {change}"
            ),
        })?;
    Ok(record_count_op(repo, collection, after))
}

fn decode_count(bytes: &[u8]) -> Result<u64, Error> {
    let bytes: [u8; 8] = bytes.try_into().map_err(|_| Error::Malformed {
        what: "record count",
        reason: format!("{} bytes, not 8", bytes.len()),
    })?;
    Ok(u64::from_be_bytes(bytes))
}

impl<K: Kv> Store<K> {
    /// How many records a collection holds, as clients see it (durable
    /// writes): its record count, or for a store that kept none, its
    /// record-index rows counted.
    ///
    /// # Errors
    ///
    /// [`Error::Malformed`] or a storage error.
    pub async fn record_count(&self, repo: &str, collection: &str) -> Result<u64, Error> {
        self.record_count_in(repo, collection, View::Durable).await
    }

    /// How many records a collection holds as a writer builds on it (every
    /// applied write, durable or not); see [`Store::record_count`].
    ///
    /// # Errors
    ///
    /// As [`Store::record_count`].
    pub async fn written_record_count(&self, repo: &str, collection: &str) -> Result<u64, Error> {
        self.record_count_in(repo, collection, View::Written).await
    }

    /// The collection's record count, if one is kept (durable writes).
    ///
    /// # Errors
    ///
    /// As [`Store::record_count`].
    pub async fn kept_record_count(
        &self,
        repo: &str,
        collection: &str,
    ) -> Result<Option<u64>, Error> {
        match self
            .kv_get(&records::record_count_key(repo, collection), View::Durable)
            .await?
        {
            Some(v) => decode_count(&v).map(Some),
            None => Ok(None),
        }
    }

    async fn record_count_in(
        &self,
        repo: &str,
        collection: &str,
        view: View,
    ) -> Result<u64, Error> {
        if let Some(v) = self
            .kv_get(&records::record_count_key(repo, collection), view)
            .await?
        {
            return decode_count(&v);
        }
        self.counted_index_rows(repo, collection, view).await
    }

    /// The collection's record-index rows, counted.
    async fn counted_index_rows(
        &self,
        repo: &str,
        collection: &str,
        view: View,
    ) -> Result<u64, Error> {
        let mut range = records::record_index_range(repo, collection);
        let mut n = 0u64;
        loop {
            let page = self.kv_scan(&range, false, COUNT_PAGE, view).await?;
            n += page.len() as u64;
            match page.last() {
                Some((last, _)) if page.len() == COUNT_PAGE => {
                    let mut after = last.to_vec();
                    after.push(0);
                    range.start = after;
                }
                _ => return Ok(n),
            }
        }
    }

    /// The collection's record-index rows counted, whatever its record
    /// count says (durable writes): what `check` compares the count with.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn indexed_record_count(&self, repo: &str, collection: &str) -> Result<u64, Error> {
        self.counted_index_rows(repo, collection, View::Durable)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_value_is_pinned() {
        let WriteOp::Put(key, value) = record_count_op("r", "a.b.c", 0x0102) else {
            panic!("a count is a put");
        };
        assert_eq!(key, records::record_count_key("r", "a.b.c"));
        assert_eq!(value[..], [0, 0, 0, 0, 0, 0, 0x01, 0x02]);
        assert_eq!(decode_count(&value).ok(), Some(0x0102));
        assert!(decode_count(&value[..7]).is_err());
        assert!(record_count_change("r", "a.b.c", 1, -2).is_err());
        let WriteOp::Put(_, after) = record_count_change("r", "a.b.c", 1, 2).unwrap() else {
            panic!("a count is a put");
        };
        assert_eq!(decode_count(&after).ok(), Some(3));
    }
}
