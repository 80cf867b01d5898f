//! The firehose event log.

use bytes::Bytes;
use keycodec::{KeyRange, records};

use super::state::{Store, View};
use crate::{error::Error, kv::interface::Kv, kv::interface::WriteOp};

impl<K: Kv> Store<K> {
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
    async fn delete_range_durably(&self, range: KeyRange) -> Result<u64, Error> {
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
