//! The interface: ordered keys and values, atomic writes of [`WriteOp`]s,
//! and a [`Durability`] handle to wait on.

use std::{future::Future, path::PathBuf, sync::Arc};

use bytes::Bytes;
use keycodec::KeyRange;

use crate::error::Error;

/// One change in an atomic write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteOp {
    /// Set `key` to `value`.
    Put(Vec<u8>, Bytes),
    /// Remove `key`.
    Delete(Vec<u8>),
    /// Fold a change into the bitmap container at `key` (record type
    /// `0x6`) without reading it: the value is a
    /// [`ContainerDelta`](crate::bitmap::ContainerDelta) that later reads and
    /// compactions compose with what is stored.
    Merge(Vec<u8>, Bytes),
}

/// An ordered key/value store.
pub trait Kv: Send + Sync {
    /// The value under `key`.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when the store cannot be read.
    fn get(&self, key: &[u8]) -> impl Future<Output = Result<Option<Bytes>, Error>> + Send;

    /// Applies `ops` atomically: later reads see all of them or none. The
    /// returned [`Durability`] resolves once they survive a crash; await it
    /// before reporting success.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when the store cannot be written.
    fn apply(&self, ops: Vec<WriteOp>) -> impl Future<Output = Result<Durability, Error>> + Send;

    /// [`Kv::apply`], then waits until the write is durable.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when the store cannot be written.
    fn write(&self, ops: Vec<WriteOp>) -> impl Future<Output = Result<(), Error>> + Send {
        async move { self.apply(ops).await?.wait().await }
    }

    /// Up to `limit` entries in `range`, ascending or (with `reverse`) descending.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when the store cannot be read.
    fn scan(
        &self,
        range: &KeyRange,
        reverse: bool,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<(Bytes, Bytes)>, Error>> + Send;

    /// [`Kv::get`], seeing only writes that are already durable: a write
    /// still waiting for its flush (which a crash would lose) is invisible,
    /// and the value before it, if durable, is returned instead. The
    /// default suits a store whose writes are durable once applied.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when the store cannot be read.
    fn get_durable(&self, key: &[u8]) -> impl Future<Output = Result<Option<Bytes>, Error>> + Send {
        self.get(key)
    }

    /// [`Kv::scan`], seeing only writes that are already durable, as
    /// [`Kv::get_durable`] does.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when the store cannot be read.
    fn scan_durable(
        &self,
        range: &KeyRange,
        reverse: bool,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<(Bytes, Bytes)>, Error>> + Send {
        self.scan(range, reverse, limit)
    }

    /// Whether this handle is the store's one writer, so that nothing but
    /// this process changes what it holds (SlateDB's writer: a lock file or
    /// fencing keeps every other process to reading). `false` (the default)
    /// for a reader, and for a store that other handles may share.
    fn sole_writer(&self) -> bool {
        false
    }

    /// The size, in key and value bytes, above which this store would
    /// rather take a large write as several batches; `None` when one batch
    /// of any size is best. [`Store::bulk_commit`](crate::store::state::Store::bulk_commit)
    /// writes a large commit's blocks ahead in batches of about this size.
    fn bulk_batch_bytes(&self) -> Option<usize> {
        None
    }

    /// Where the store keeps blob bytes: beside its database, in the same
    /// location ([`Blobs`](crate::Blobs)).
    fn blobs(&self) -> crate::Blobs;

    /// The local directory the store keeps its files in, if it is one (to
    /// check whether it can be written when a write stalls).
    fn local_dir(&self) -> Option<Arc<PathBuf>> {
        None
    }

    /// The storage engine's own measurements, read now; empty for a store
    /// that keeps none.
    fn engine_metrics(&self) -> Vec<EngineMetric> {
        Vec::new()
    }

    /// What this handle's reads see now, as a value. Take it before a
    /// read: while later stamps equal it (and [`ReadStamp::trust_micros`]
    /// allows), no write this handle can see has completed since, so what
    /// the read returned still stands. `None` (the default) when the store
    /// cannot tell: nothing may be kept by stamp.
    fn read_stamp(&self) -> Option<ReadStamp> {
        None
    }
}

/// What a handle's reads see, named by a value ([`Kv::read_stamp`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadStamp {
    /// Which opening of the store (a promotion or demotion makes another).
    handle: u64,
    /// Where its view is: writes applied by this handle, or a reader's
    /// durable sequence number and manifest.
    view: (u64, u64),
    trust_micros: Option<u64>,
}

impl ReadStamp {
    /// A stamp that has changed once a write the handle can see has
    /// completed (at the latest when its [`Kv::apply`] returns).
    #[must_use]
    pub fn exact(handle: u64, view: (u64, u64)) -> Self {
        Self {
            handle,
            view,
            trust_micros: None,
        }
    }

    /// A stamp that may change a moment before the view it names is the
    /// one reads see, so a read made in that moment, of the view before,
    /// is trusted under it for at most `micros`.
    #[must_use]
    pub fn settling(handle: u64, view: (u64, u64), micros: u64) -> Self {
        Self {
            handle,
            view,
            trust_micros: Some(micros),
        }
    }

    /// For how long (in microseconds) a value read under this stamp may be
    /// taken as current while the stamp stays the same: `None` for as long
    /// as it does.
    #[must_use]
    pub fn trust_micros(&self) -> Option<u64> {
        self.trust_micros
    }
}

/// One of the storage engine's own measurements (for SlateDB: memtable
/// bytes, L0 SSTs and stalls, flushes, compactions, cache hits, object
/// store requests), as read at one moment; a server exports them next to
/// its own metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineMetric {
    /// The engine's dotted name, e.g. `slatedb.db.l0_sst_count`.
    pub name: String,
    /// What it measures, in the engine's words.
    pub help: String,
    /// Labels telling apart the series of one name.
    pub labels: Vec<(String, String)>,
    /// Its value.
    pub value: EngineMetricValue,
}

/// An [`EngineMetric`]'s value.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineMetricValue {
    /// A count that only grows.
    Counter(u64),
    /// A level that goes up and down.
    Gauge(i64),
    /// A distribution of observations.
    Histogram {
        /// Observations made.
        count: u64,
        /// Their sum.
        sum: f64,
        /// Per bucket, its upper bound and the observations in it (not
        /// cumulative); the last bucket's bound is `f64::INFINITY`.
        buckets: Vec<(f64, u64)>,
    },
}

impl From<slatedb_common::metrics::Metric> for EngineMetric {
    fn from(metric: slatedb_common::metrics::Metric) -> Self {
        use slatedb_common::metrics::MetricValue;
        let value = match metric.value {
            MetricValue::Counter(n) => EngineMetricValue::Counter(n),
            MetricValue::Gauge(n) | MetricValue::UpDownCounter(n) => EngineMetricValue::Gauge(n),
            MetricValue::Histogram {
                count,
                sum,
                boundaries,
                bucket_counts,
                ..
            } => EngineMetricValue::Histogram {
                count,
                sum,
                // `bucket_counts` has one more entry than `boundaries`: the
                // observations above the last boundary.
                buckets: boundaries
                    .into_iter()
                    .chain(std::iter::once(f64::INFINITY))
                    .zip(bucket_counts)
                    .collect(),
            },
        };
        Self {
            name: metric.name,
            help: metric.description,
            labels: metric.labels,
            value,
        }
    }
}

/// A pending write's durability; see [`Kv::apply`].
#[must_use = "await the write's durability before reporting success"]
pub struct Durability(pub(super) Option<slatedb::WriteHandle>);

impl std::fmt::Debug for Durability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Durability")
            .field(&self.0.is_some())
            .finish()
    }
}

impl Durability {
    /// Waits until the write survives a crash.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when the store failed to make it durable.
    pub async fn wait(self) -> Result<(), Error> {
        match self.0 {
            Some(handle) => handle.await_durable().await.map_err(Error::from),
            None => Ok(()),
        }
    }
}
