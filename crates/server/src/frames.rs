//! The firehose's shared state: the newest frames in memory, shared by
//! every subscriber, and how many subscribers there may be.

use std::{sync::Arc, time::Duration};

use tokio::sync::{Notify, Semaphore, watch};

/// Most frames kept in memory for connections following the present.
const LIVE_FRAMES: usize = 4096;

/// How long events are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retention {
    /// The newest this many events.
    Count(u64),
    /// Events younger than this.
    Age(Duration),
}

impl std::str::FromStr for Retention {
    type Err = String;

    /// `100000` (events) or an age: `30m`, `72h`, `7d`.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let bad =
            || format!("{s:?} is neither a number of events (100000) nor an age (30m, 72h, 7d)");
        if let Ok(n) = s.parse::<u64>() {
            return Ok(Self::Count(n));
        }
        let (number, unit) = s.split_at(s.len().saturating_sub(1));
        let n: u64 = number.parse().map_err(|_| bad())?;
        let secs = match unit {
            "s" => n,
            "m" => n * 60,
            "h" => n * 3600,
            "d" => n * 86_400,
            _ => return Err(bad()),
        };
        Ok(Self::Age(Duration::from_secs(secs)))
    }
}

/// A framed event.
#[derive(Debug)]
pub(crate) struct Framed {
    pub(crate) seq: u64,
    /// Shared by every connection that sends it.
    pub(crate) frame: bytes::Bytes,
}

/// The newest framed events, in order, for the connections following the
/// present: at most `max_bytes` of frames (and [`LIVE_FRAMES`] frames),
/// the oldest dropped first; the newest is always kept.
pub(crate) struct Live {
    recent: std::sync::Mutex<Recent>,
    /// The newest frame's seq, for connections waiting for one.
    pub(crate) newest: watch::Sender<u64>,
    max_bytes: usize,
}

#[derive(Default)]
struct Recent {
    frames: std::collections::VecDeque<Arc<Framed>>,
    bytes: usize,
    /// Frames up to this seq have left memory.
    dropped_through: u64,
}

/// A connection needs frames that have left memory.
#[derive(Debug)]
pub(crate) struct TooSlow;

impl Live {
    pub(crate) fn new(max_bytes: usize) -> Self {
        Self {
            recent: std::sync::Mutex::new(Recent::default()),
            newest: watch::channel(0).0,
            max_bytes,
        }
    }

    fn recent(&self) -> std::sync::MutexGuard<'_, Recent> {
        // The lock guards plain data, whole after every operation.
        self.recent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Adds the newest frame. Sequence numbers increase strictly from one
    /// frame to the next: [`Live::after`] finds a consumer's place by
    /// them, so a repeated or older one would go unseen.
    pub(crate) fn publish(&self, framed: Framed) {
        let seq = framed.seq;
        {
            let mut recent = self.recent();
            debug_assert!(
                seq > recent
                    .frames
                    .back()
                    .map_or(recent.dropped_through, |f| f.seq),
                "frame {seq} published after a frame at or past it"
            );
            recent.bytes += framed.frame.len();
            recent.frames.push_back(Arc::new(framed));
            while recent.frames.len() > 1
                && (recent.bytes > self.max_bytes || recent.frames.len() > LIVE_FRAMES)
            {
                if let Some(old) = recent.frames.pop_front() {
                    recent.bytes -= old.frame.len();
                    recent.dropped_through = old.seq;
                }
            }
        }
        self.newest.send_replace(seq);
    }

    /// The frames after `last`, oldest first, at most `max_bytes` of them
    /// (at least one when there is one); [`TooSlow`] when some have left
    /// memory.
    pub(crate) fn after(&self, last: u64, max_bytes: usize) -> Result<Vec<Arc<Framed>>, TooSlow> {
        let recent = self.recent();
        if recent.dropped_through > last {
            return Err(TooSlow);
        }
        let from = recent.frames.partition_point(|f| f.seq <= last);
        let mut bytes = 0;
        Ok(recent
            .frames
            .range(from..)
            .take_while(|f| {
                let first = bytes == 0;
                bytes += f.frame.len();
                first || bytes <= max_bytes
            })
            .cloned()
            .collect())
    }

    /// Frames up to this seq have left memory.
    pub(crate) fn dropped_through(&self) -> u64 {
        self.recent().dropped_through
    }

    /// Bytes of frames held (a metric).
    pub(crate) fn held_bytes(&self) -> usize {
        self.recent().bytes
    }
}

/// The firehose's shared state.
pub(crate) struct Firehose {
    pub(crate) live: Live,
    /// Woken when a commit is acknowledged.
    pub(crate) commits: Arc<Notify>,
    /// Whether the publisher runs (started by the first subscriber).
    pub(crate) publishing: std::sync::atomic::AtomicBool,
    /// One permit per connection that may subscribe at once.
    pub(crate) subscribers: Arc<Semaphore>,
    pub(crate) max_subscribers: usize,
    /// Subscribers per client address (firehose and stream together).
    per_ip: Arc<std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, usize>>>,
    max_per_ip: usize,
}

/// What an admitted subscriber holds until its socket closes: its place
/// among the server's subscribers and its address's, and its connection
/// (which counts against `--max-connections`).
pub(crate) struct Admitted {
    _permit: tokio::sync::OwnedSemaphorePermit,
    _address: Option<AddressSlot>,
    _connection: Option<crate::connections::ConnectionSlot>,
}

/// One subscriber counted against its address's limit, until dropped.
pub(crate) struct AddressSlot {
    counts: Arc<std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, usize>>>,
    ip: std::net::IpAddr,
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut counts = self
            .counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = counts.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&self.ip);
            }
        }
    }
}

impl Firehose {
    pub(crate) fn new(max_subscribers: usize, max_per_ip: usize, buffer_bytes: usize) -> Self {
        Self {
            live: Live::new(buffer_bytes),
            commits: Arc::new(Notify::new()),
            publishing: std::sync::atomic::AtomicBool::new(false),
            subscribers: Arc::new(Semaphore::new(max_subscribers)),
            max_subscribers,
            per_ip: Arc::default(),
            max_per_ip: max_per_ip.max(1),
        }
    }

    /// [`Firehose::admit`] of the request whose extensions are
    /// `extensions` (its client address and connection slot).
    pub(crate) fn admit_request(
        &self,
        extensions: &axum::http::Extensions,
    ) -> Result<Admitted, crate::error::XrpcError> {
        self.admit(
            extensions
                .get::<crate::connections::ClientIp>()
                .map(|crate::connections::ClientIp(ip)| *ip),
            extensions
                .get::<crate::connections::ConnectionSlot>()
                .cloned(),
        )
    }

    /// Admits a subscriber (of the firehose or the stream) from client
    /// address `ip` holding `connection`, before its upgrade: refused past
    /// `--max-subscribers` (503) or past `--max-subscribers-per-ip` from
    /// one address (429), so that the others find room.
    pub(crate) fn admit(
        &self,
        ip: Option<std::net::IpAddr>,
        connection: Option<crate::connections::ConnectionSlot>,
    ) -> Result<Admitted, crate::error::XrpcError> {
        use crate::error::XrpcError;
        let permit = Arc::clone(&self.subscribers)
            .try_acquire_owned()
            .map_err(|_| {
                XrpcError::new(
                    axum::http::StatusCode::SERVICE_UNAVAILABLE,
                    "TooManySubscribers",
                    format!(
                        "the server has {} firehose and stream subscribers, its most (serve \
                         --max-subscribers); try again later",
                        self.max_subscribers
                    ),
                )
            })?;
        let address = self.address_slot(ip).map_err(|most| {
            XrpcError::new(
                axum::http::StatusCode::TOO_MANY_REQUESTS,
                "TooManySubscribers",
                format!(
                    "this address has {most} firehose and stream subscribers, the most one \
                     address may have (serve --max-subscribers-per-ip)"
                ),
            )
        })?;
        Ok(Admitted {
            _permit: permit,
            _address: address,
            _connection: connection,
        })
    }

    /// A subscriber slot for client address `ip` (none known: not
    /// counted), or the address's most when it has that many.
    fn address_slot(&self, ip: Option<std::net::IpAddr>) -> Result<Option<AddressSlot>, usize> {
        let Some(ip) = ip else { return Ok(None) };
        let mut counts = self
            .per_ip
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = counts.entry(ip).or_insert(0);
        if *n >= self.max_per_ip {
            return Err(self.max_per_ip);
        }
        *n += 1;
        Ok(Some(AddressSlot {
            counts: Arc::clone(&self.per_ip),
            ip,
        }))
    }

    /// What tells the publisher that a commit is durable.
    pub(crate) fn notifier(&self) -> Arc<Notify> {
        Arc::clone(&self.commits)
    }

    /// Connections subscribed now (a metric).
    pub(crate) fn subscribers(&self) -> usize {
        self.max_subscribers - self.subscribers.available_permits()
    }
}

/// Bytes a stream's WebSocket reads from its client at a time. A stream's
/// clients send little (an `options_update` now and then), and the
/// WebSocket library zero-fills this much on every poll for a message,
/// which every connection does each time events wake it: 128 KiB (its
/// default) per wake-up was the largest cost of 100 connections.
const STREAM_READ_BUFFER: usize = 4096;

/// `ws` set up for a stream (the firehose or `/subscribe`): a small read
/// buffer ([`STREAM_READ_BUFFER`]); messages longer than it are still read
/// whole, in several reads.
pub(crate) fn stream_socket(
    ws: axum::extract::ws::WebSocketUpgrade,
) -> axum::extract::ws::WebSocketUpgrade {
    ws.read_buffer_size(STREAM_READ_BUFFER)
}
