//! A partitioned store's merged event log: the order in which one stream
//! delivers every partition's firehose events, kept in partition 0.
//!
//! Each entry (`merged_event_key(seq)`) points at one partition's event:
//! 12 bytes, the partition (u32) and its event's sequence number (u64),
//! big-endian. Each partition's mark (`merge_mark_key(p)`) is the last of
//! its events the log holds (u64, big-endian). Entries and the marks they
//! move are written in one atomic write, so the log holds every
//! partition's events once each, in each partition's order, whoever
//! writes it next.

use keycodec::{KeyRange, records};

use super::state::{Store, View};
use crate::{error::Error, kv::interface::Kv, kv::interface::WriteOp};

/// An entry of the merged event log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MergedEvent {
    /// Its sequence number in the merged stream.
    pub seq: u64,
    /// The partition whose event it is.
    pub partition: u32,
    /// The event's sequence number in that partition.
    pub event: u64,
}

impl<K: Kv> Store<K> {
    /// Up to `limit` durable entries of the merged log after `after`, in
    /// order.
    ///
    /// # Errors
    ///
    /// [`Error::Malformed`] or a storage error.
    pub async fn merged_events(&self, after: u64, limit: usize) -> Result<Vec<MergedEvent>, Error> {
        let Some(first) = after.checked_add(1) else {
            return Ok(Vec::new());
        };
        let range = KeyRange {
            start: records::merged_event_key(first),
            end: records::merged_events_range().end,
        };
        self.kv_scan(&range, false, limit, View::Durable)
            .await?
            .into_iter()
            .map(|(key, value)| decode_entry(&key, &value))
            .collect()
    }

    /// The newest durable entry's sequence number, if any (the sequencer
    /// waits for each append to be durable, so it is also the newest
    /// written).
    ///
    /// # Errors
    ///
    /// [`Error::Malformed`] or a storage error.
    pub async fn newest_merged_event(&self) -> Result<Option<u64>, Error> {
        let last = self
            .kv_scan(&records::merged_events_range(), true, 1, View::Durable)
            .await?;
        last.first()
            .map(|(key, value)| decode_entry(key, value).map(|e| e.seq))
            .transpose()
    }

    /// Every partition's mark: the last of its events the log holds.
    ///
    /// # Errors
    ///
    /// [`Error::Malformed`] or a storage error.
    pub async fn merge_marks(&self) -> Result<Vec<(u32, u64)>, Error> {
        self.kv_scan(
            &records::merge_marks_range(),
            false,
            usize::MAX,
            View::Written,
        )
        .await?
        .into_iter()
        .map(|(key, value)| match records::decode_key(&key) {
            Ok(records::DecodedKey::MergeMark { partition }) => {
                Ok((partition, be_u64(&value, "merge mark")?))
            }
            _ => Err(malformed("merge mark key", "not a merge mark key")),
        })
        .collect()
    }

    /// Appends `entries` to the merged log and sets `marks`, in one durable
    /// atomic write.
    ///
    /// # Errors
    ///
    /// A storage error; nothing is written then.
    pub async fn append_merged_events(
        &self,
        entries: &[MergedEvent],
        marks: &[(u32, u64)],
    ) -> Result<(), Error> {
        let mut ops = Vec::with_capacity(entries.len() + marks.len());
        for entry in entries {
            let mut value = Vec::with_capacity(12);
            value.extend_from_slice(&entry.partition.to_be_bytes());
            value.extend_from_slice(&entry.event.to_be_bytes());
            ops.push(WriteOp::Put(
                records::merged_event_key(entry.seq),
                value.into(),
            ));
        }
        for (partition, last) in marks {
            ops.push(WriteOp::Put(
                records::merge_mark_key(*partition),
                bytes::Bytes::copy_from_slice(&last.to_be_bytes()),
            ));
        }
        self.write_durably(ops).await
    }

    /// Deletes the merged log's entries up to `through`, durably.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn delete_merged_events_through(&self, through: u64) -> Result<u64, Error> {
        self.delete_range_durably(KeyRange {
            start: records::merged_events_range().start,
            end: Some(records::merged_event_key(through.saturating_add(1))),
        })
        .await
    }
}

fn decode_entry(key: &[u8], value: &[u8]) -> Result<MergedEvent, Error> {
    let Ok(records::DecodedKey::MergedEvent { seq }) = records::decode_key(key) else {
        return Err(malformed("merged event key", "not a merged event key"));
    };
    let (partition, event) = match value {
        [p0, p1, p2, p3, rest @ ..] if rest.len() == 8 => (
            u32::from_be_bytes([*p0, *p1, *p2, *p3]),
            be_u64(rest, "merged event")?,
        ),
        _ => return Err(malformed("merged event", "not 12 bytes")),
    };
    Ok(MergedEvent {
        seq,
        partition,
        event,
    })
}

fn be_u64(bytes: &[u8], what: &'static str) -> Result<u64, Error> {
    <[u8; 8]>::try_from(bytes)
        .map(u64::from_be_bytes)
        .map_err(|_| malformed(what, "not 8 bytes"))
}

fn malformed(what: &'static str, reason: &str) -> Error {
    Error::Malformed {
        what,
        reason: reason.to_owned(),
    }
}
