//! The firehose event log, and the stream's events stamped with times.

use bytes::Bytes;
use keycodec::{KeyRange, records};

use super::{
    commit::StreamEvents,
    state::{Sequences, Store, View},
};
use crate::{error::Error, kv::interface::Kv, kv::interface::WriteOp};

impl<K: Kv> Store<K> {
    /// Adds `stream`'s events to `ops` under their times: the first at
    /// the writer's clock or one microsecond after the newest event written,
    /// whichever is later, each next one more. The newest time they take,
    /// for the caller to note in `sequences` once `ops` are applied (the
    /// commit lock held throughout); `None` for no events.
    pub(super) async fn stamp_stream_events(
        &self,
        sequences: &Sequences,
        stream: &StreamEvents,
        ops: &mut Vec<WriteOp>,
    ) -> Result<Option<u64>, Error> {
        if stream.count == 0 || !self.keep_stream_events {
            return Ok(None);
        }
        let newest = match sequences.last_stream_time {
            Some(t) => Some(t),
            None => self.newest_stream_time_in(View::Written).await?,
        };
        let first = newest.map_or(stream.now_micros, |t| stream.now_micros.max(t + 1));
        for i in 0..stream.count {
            let time = first + i as u64;
            ops.push(WriteOp::Put(
                records::stream_event_key(time),
                (stream.encode)(i, time),
            ));
        }
        Ok(Some(first + stream.count as u64 - 1))
    }

    /// Writes `ops` and `stream`'s events in one atomic write, durable when
    /// this returns, the events stamped as a commit's are (after every
    /// event before them, in the order writes land): how a change that is
    /// not a commit (an account's status) reaches the stream.
    ///
    /// # Errors
    ///
    /// A storage error; nothing is written then.
    pub async fn write_with_stream_events(
        &self,
        mut ops: Vec<WriteOp>,
        stream: Option<StreamEvents>,
    ) -> Result<(), Error> {
        let Some(stream) = stream else {
            return self.kv.write(ops).await;
        };
        let durability = {
            let mut sequences = self.commit_lock.lock().await;
            let last = self
                .stamp_stream_events(&sequences, &stream, &mut ops)
                .await?;
            let durability = self.kv.apply(ops).await?;
            if last.is_some() {
                sequences.last_stream_time = last;
            }
            durability
        };
        durability.wait().await
    }

    pub(super) async fn last_event_seq(&self, view: View) -> Result<Option<u64>, Error> {
        let last = self
            .kv_scan(&records::events_range(), true, 1, view)
            .await?;
        last.first()
            .map(|(key, _)| match records::decode_key(key) {
                Ok(records::DecodedKey::Event { seq }) => Ok(seq),
                _ => Err(Error::Malformed {
                    what: "event key",
                    reason: "not an event key".into(),
                }),
            })
            .transpose()
    }

    /// The sequence number of the newest durable event, if any.
    ///
    /// # Errors
    ///
    /// [`Error::Malformed`] or a storage error.
    pub async fn newest_event(&self) -> Result<Option<u64>, Error> {
        self.last_event_seq(View::Durable).await
    }

    /// Up to `limit` durable events with sequence numbers above `after`, in
    /// order, as (seq, bytes).
    ///
    /// # Errors
    ///
    /// [`Error::Malformed`] or a storage error.
    pub async fn events(&self, after: u64, limit: usize) -> Result<Vec<(u64, Bytes)>, Error> {
        let Some(first) = after.checked_add(1) else {
            return Ok(Vec::new());
        };
        let range = KeyRange {
            start: records::event_key(first),
            end: records::events_range().end,
        };
        self.kv_scan(&range, false, limit, View::Durable)
            .await?
            .into_iter()
            .map(|(key, value)| match records::decode_key(&key) {
                Ok(records::DecodedKey::Event { seq }) => Ok((seq, value)),
                _ => Err(Error::Malformed {
                    what: "event key",
                    reason: "not an event key".into(),
                }),
            })
            .collect()
    }

    /// Deletes the events with sequence numbers up to `through`, durably
    /// (the firehose's retention).
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn delete_events_through(&self, through: u64) -> Result<u64, Error> {
        self.delete_range_durably(KeyRange {
            start: records::events_range().start,
            end: Some(records::event_key(through.saturating_add(1))),
        })
        .await
    }

    /// Deletes every key in `range`, durably, ten thousand at a time:
    /// how many.
    pub(super) async fn delete_range_durably(&self, range: KeyRange) -> Result<u64, Error> {
        let mut deleted = 0;
        loop {
            let keys = self.kv_scan(&range, false, 10_000, View::Written).await?;
            if keys.is_empty() {
                return Ok(deleted);
            }
            deleted += keys.len() as u64;
            self.write_durably(
                keys.into_iter()
                    .map(|(k, _)| WriteOp::Delete(k.to_vec()))
                    .collect(),
            )
            .await?;
        }
    }

    pub(super) async fn newest_stream_time_in(&self, view: View) -> Result<Option<u64>, Error> {
        let last = self
            .kv_scan(&records::stream_events_range(), true, 1, view)
            .await?;
        last.first().map(|(key, _)| stream_time(key)).transpose()
    }

    /// The time of the stream's newest durable event, if any.
    ///
    /// # Errors
    ///
    /// [`Error::Malformed`] or a storage error.
    pub async fn newest_stream_time(&self) -> Result<Option<u64>, Error> {
        self.newest_stream_time_in(View::Durable).await
    }

    /// The time of the stream's oldest durable event, if any.
    ///
    /// # Errors
    ///
    /// [`Error::Malformed`] or a storage error.
    pub async fn oldest_stream_time(&self) -> Result<Option<u64>, Error> {
        let first = self
            .kv_scan(&records::stream_events_range(), false, 1, View::Durable)
            .await?;
        first.first().map(|(key, _)| stream_time(key)).transpose()
    }

    /// Up to `limit` durable stream events with times above `after`, in
    /// order, as (time, bytes).
    ///
    /// # Errors
    ///
    /// [`Error::Malformed`] or a storage error.
    pub async fn stream_events(
        &self,
        after: u64,
        limit: usize,
    ) -> Result<Vec<(u64, Bytes)>, Error> {
        let Some(first) = after.checked_add(1) else {
            return Ok(Vec::new());
        };
        let range = KeyRange {
            start: records::stream_event_key(first),
            end: records::stream_events_range().end,
        };
        self.kv_scan(&range, false, limit, View::Durable)
            .await?
            .into_iter()
            .map(|(key, value)| Ok((stream_time(&key)?, value)))
            .collect()
    }

    /// Deletes the stream events with times up to `through`, durably (the
    /// stream's retention follows the firehose's).
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn delete_stream_events_through(&self, through: u64) -> Result<u64, Error> {
        self.delete_range_durably(KeyRange {
            start: records::stream_events_range().start,
            end: Some(records::stream_event_key(through.saturating_add(1))),
        })
        .await
    }
}

fn stream_time(key: &[u8]) -> Result<u64, Error> {
    match records::decode_key(key) {
        Ok(records::DecodedKey::StreamEvent { time_us }) => Ok(time_us),
        _ => Err(Error::Malformed {
            what: "stream event key",
            reason: "not a stream event key".into(),
        }),
    }
}
