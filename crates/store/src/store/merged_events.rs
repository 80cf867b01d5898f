//! A partitioned store's merged event logs: the order in which one stream
//! delivers every partition's events, kept in partition 0. Two logs
//! ([`MergedLog`]): the firehose's (`subscribeRepos`) and the
//! Jetstream-compatible stream's (`/subscribe`).
//!
//! Each entry (`merged_event_key(n)` / `merged_stream_event_key(t)`)
//! points at one partition's event: 12 bytes, the partition (u32) and the
//! event's sequence number or time there (u64), big-endian. Each
//! partition's mark (`merge_mark_key(p)` / `stream_merge_mark_key(p)`) is
//! the last of its events the log holds (u64, big-endian). Entries and the
//! marks they move are written in one atomic write, so a log holds every
//! partition's events once each, in each partition's order, whoever writes
//! it next.

use keycodec::{KeyRange, records};

use super::state::{Store, View};
use crate::{error::Error, kv::interface::Kv, kv::interface::WriteOp};

/// Which merged log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergedLog {
    /// The firehose's: entries by merged sequence number, pointing at
    /// partitions' firehose events by sequence number.
    Firehose,
    /// The `/subscribe` stream's: entries by merged time (unix
    /// microseconds, strictly increasing, never before the event's own),
    /// pointing at partitions' stream events by time.
    Stream,
}

impl MergedLog {
    fn entry_key(self, position: u64) -> Vec<u8> {
        match self {
            Self::Firehose => records::merged_event_key(position),
            Self::Stream => records::merged_stream_event_key(position),
        }
    }

    fn entries(self) -> KeyRange {
        match self {
            Self::Firehose => records::merged_events_range(),
            Self::Stream => records::merged_stream_events_range(),
        }
    }

    fn mark_key(self, partition: u32) -> Vec<u8> {
        match self {
            Self::Firehose => records::merge_mark_key(partition),
            Self::Stream => records::stream_merge_mark_key(partition),
        }
    }

    fn marks(self) -> KeyRange {
        match self {
            Self::Firehose => records::merge_marks_range(),
            Self::Stream => records::stream_merge_marks_range(),
        }
    }

    fn position(self, key: &[u8]) -> Result<u64, Error> {
        match (self, records::decode_key(key)) {
            (Self::Firehose, Ok(records::DecodedKey::MergedEvent { seq })) => Ok(seq),
            (Self::Stream, Ok(records::DecodedKey::MergedStreamEvent { time_us })) => Ok(time_us),
            _ => Err(malformed(
                "merged event key",
                "not a key of this merged log",
            )),
        }
    }

    fn mark_partition(self, key: &[u8]) -> Result<u32, Error> {
        match (self, records::decode_key(key)) {
            (Self::Firehose, Ok(records::DecodedKey::MergeMark { partition }))
            | (Self::Stream, Ok(records::DecodedKey::StreamMergeMark { partition })) => {
                Ok(partition)
            }
            _ => Err(malformed("merge mark key", "not a mark of this merged log")),
        }
    }
}

/// An entry of a merged log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MergedEvent {
    /// Its place in the merged stream: a sequence number, or a time.
    pub seq: u64,
    /// The partition whose event it is.
    pub partition: u32,
    /// The event's sequence number (or time) in that partition.
    pub event: u64,
}

impl<K: Kv> Store<K> {
    /// Up to `limit` durable entries of `log` after `after`, in order.
    ///
    /// # Errors
    ///
    /// [`Error::Malformed`] or a storage error.
    pub async fn merged_events(
        &self,
        log: MergedLog,
        after: u64,
        limit: usize,
    ) -> Result<Vec<MergedEvent>, Error> {
        let Some(first) = after.checked_add(1) else {
            return Ok(Vec::new());
        };
        let range = KeyRange {
            start: log.entry_key(first),
            end: log.entries().end,
        };
        self.kv_scan(&range, false, limit, View::Durable)
            .await?
            .into_iter()
            .map(|(key, value)| decode_entry(log, &key, &value))
            .collect()
    }

    /// The newest durable entry's place in `log`, if any (the sequencer
    /// waits for each append to be durable, so it is also the newest
    /// written).
    ///
    /// # Errors
    ///
    /// [`Error::Malformed`] or a storage error.
    pub async fn newest_merged_event(&self, log: MergedLog) -> Result<Option<u64>, Error> {
        let last = self.kv_scan(&log.entries(), true, 1, View::Durable).await?;
        last.first()
            .map(|(key, value)| decode_entry(log, key, value).map(|e| e.seq))
            .transpose()
    }

    /// Every partition's mark in `log`: the last of its events the log holds.
    ///
    /// # Errors
    ///
    /// [`Error::Malformed`] or a storage error.
    pub async fn merge_marks(&self, log: MergedLog) -> Result<Vec<(u32, u64)>, Error> {
        self.kv_scan(&log.marks(), false, usize::MAX, View::Written)
            .await?
            .into_iter()
            .map(|(key, value)| Ok((log.mark_partition(&key)?, be_u64(&value, "merge mark")?)))
            .collect()
    }

    /// Appends `entries` to `log` and sets `marks`, in one durable atomic
    /// write.
    ///
    /// # Errors
    ///
    /// A storage error; nothing is written then.
    pub async fn append_merged_events(
        &self,
        log: MergedLog,
        entries: &[MergedEvent],
        marks: &[(u32, u64)],
    ) -> Result<(), Error> {
        let mut ops = Vec::with_capacity(entries.len() + marks.len());
        for entry in entries {
            let mut value = Vec::with_capacity(12);
            value.extend_from_slice(&entry.partition.to_be_bytes());
            value.extend_from_slice(&entry.event.to_be_bytes());
            ops.push(WriteOp::Put(log.entry_key(entry.seq), value.into()));
        }
        for (partition, last) in marks {
            ops.push(WriteOp::Put(
                log.mark_key(*partition),
                bytes::Bytes::copy_from_slice(&last.to_be_bytes()),
            ));
        }
        self.write_durably(ops).await
    }

    /// Deletes `log`'s entries up to `through`, durably.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn delete_merged_events_through(
        &self,
        log: MergedLog,
        through: u64,
    ) -> Result<u64, Error> {
        self.delete_range_durably(KeyRange {
            start: log.entries().start,
            end: Some(log.entry_key(through.saturating_add(1))),
        })
        .await
    }
}

fn decode_entry(log: MergedLog, key: &[u8], value: &[u8]) -> Result<MergedEvent, Error> {
    let seq = log.position(key)?;
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
