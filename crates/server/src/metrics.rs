//! Prometheus metrics: requests and latency per XRPC method and status,
//! and the storage engine's own metrics (`datarepo_slatedb_*`).

use std::sync::{Mutex, atomic::AtomicU64};

use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, EncodeLabelSet},
    metrics::{MetricType, counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::Registry,
};
use store::{EngineMetric, EngineMetricValue};

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct RequestLabels {
    pub(crate) method: String,
    pub(crate) status: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct MethodLabels {
    pub(crate) method: String,
}

fn latency_histogram() -> Histogram {
    // 50 us to ~3 s.
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        0.000_05, 2.0, 16,
    ))
}

/// The server's metrics and their registry.
pub(crate) struct Metrics {
    registry: Mutex<Registry>,
    pub(crate) requests: Family<RequestLabels, Counter>,
    pub(crate) latency: Family<MethodLabels, Histogram, fn() -> Histogram>,
    pub(crate) records_written: Counter,
    pub(crate) commits: Counter,
    pub(crate) gc: GcMetrics,
    /// Firehose subscribers connected (set at each scrape).
    pub(crate) firehose_subscribers: Gauge,
    /// Bytes of recent frames the firehose keeps in memory (set at each
    /// scrape).
    pub(crate) firehose_buffered_bytes: Gauge,
}

impl Metrics {
    /// The server's metrics; `engine` reads the storage engine's at each
    /// scrape.
    pub(crate) fn new(engine: impl Fn() -> Vec<EngineMetric> + Send + Sync + 'static) -> Self {
        let mut registry = Registry::with_prefix("datarepo");
        registry.register_collector(Box::new(EngineCollector(Box::new(engine))));
        let requests = Family::<RequestLabels, Counter>::default();
        let latency = Family::<MethodLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            latency_histogram,
        );
        let records_written = Counter::default();
        let commits = Counter::default();
        let gc = GcMetrics::new(&mut registry);
        registry.register(
            "http_requests",
            "HTTP requests by XRPC method and status",
            requests.clone(),
        );
        registry.register(
            "http_request_duration_seconds",
            "HTTP request latency by XRPC method",
            latency.clone(),
        );
        registry.register("commits", "Commits acknowledged", commits.clone());
        registry.register(
            "records_written",
            "Records created, updated or deleted by acknowledged commits",
            records_written.clone(),
        );
        let firehose_subscribers = Gauge::default();
        registry.register(
            "firehose_subscribers",
            "subscribeRepos connections open (at most serve --max-subscribers)",
            firehose_subscribers.clone(),
        );
        let firehose_buffered_bytes = Gauge::default();
        registry.register(
            "firehose_buffered_bytes",
            "Bytes of recent firehose frames kept in memory (at most serve --firehose-buffer-bytes)",
            firehose_buffered_bytes.clone(),
        );
        Self {
            registry: Mutex::new(registry),
            requests,
            latency,
            records_written,
            commits,
            gc,
            firehose_subscribers,
            firehose_buffered_bytes,
        }
    }

    /// The OpenMetrics text exposition.
    pub(crate) fn encode(&self) -> String {
        let mut out = String::new();
        let registry = self
            .registry
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
        out
    }
}

/// What the server's garbage collections did (all zero without one).
pub(crate) struct GcMetrics {
    /// Collections by outcome: `ok`, `failed`, or `skipped` (no commit
    /// since the last successful collection started).
    runs: Family<OutcomeLabels, Counter>,
    pub(crate) blocks_deleted: Counter,
    pub(crate) bytes_freed: Counter,
    pub(crate) commits_dropped: Counter,
    pub(crate) blocks_reachable: Gauge,
    pub(crate) last_duration_seconds: Gauge<f64, AtomicU64>,
    /// The running collection's phase: 0 none running, 1 listing, 2
    /// marking, 3 sweeping.
    pub(crate) phase: Gauge,
    /// The running collection's count in its phase: blocks listed, reached
    /// or deleted.
    pub(crate) phase_done: Gauge,
    /// Blocks the running collection's sweep deletes (0 before it sweeps).
    pub(crate) sweep_total: Gauge,
    /// Seconds since the running collection started (0 when none runs).
    pub(crate) running_seconds: Gauge<f64, AtomicU64>,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

impl GcMetrics {
    /// Records a running collection's progress.
    pub(crate) fn progress(&self, p: store::GcProgress, running: std::time::Duration) {
        let as_gauge = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        let (phase, done) = match p {
            store::GcProgress::Listing { listed } => (1, listed),
            store::GcProgress::Marking { reached } => (2, reached),
            store::GcProgress::Sweeping { done, total } => {
                self.sweep_total.set(as_gauge(total));
                (3, done)
            }
        };
        self.phase.set(phase);
        self.phase_done.set(as_gauge(done));
        self.running_seconds.set(running.as_secs_f64());
    }

    /// Records that no collection runs.
    pub(crate) fn idle(&self) {
        self.phase.set(0);
        self.phase_done.set(0);
        self.sweep_total.set(0);
        self.running_seconds.set(0.0);
    }

    /// Counts one collection that ended with `outcome`.
    pub(crate) fn count_run(&self, outcome: &'static str) {
        self.runs.get_or_create(&OutcomeLabels { outcome }).inc();
    }

    fn new(registry: &mut Registry) -> Self {
        let metrics = Self {
            runs: Family::default(),
            blocks_deleted: Counter::default(),
            bytes_freed: Counter::default(),
            commits_dropped: Counter::default(),
            blocks_reachable: Gauge::default(),
            last_duration_seconds: Gauge::default(),
            phase: Gauge::default(),
            phase_done: Gauge::default(),
            sweep_total: Gauge::default(),
            running_seconds: Gauge::default(),
        };
        // Both outcomes are exported from the start, at zero.
        for outcome in ["ok", "failed", "skipped"] {
            drop(metrics.runs.get_or_create(&OutcomeLabels { outcome }));
        }
        registry.register(
            "gc_runs",
            "Garbage collections run by the server, by outcome (ok, failed, skipped: nothing committed since the last)",
            metrics.runs.clone(),
        );
        registry.register(
            "gc_blocks_deleted",
            "Blocks deleted by the server's garbage collections",
            metrics.blocks_deleted.clone(),
        );
        registry.register(
            "gc_freed_bytes",
            "Bytes of the blocks the server's garbage collections deleted",
            metrics.bytes_freed.clone(),
        );
        registry.register(
            "gc_commits_dropped",
            "Commits older than the retained ones that left the commit log",
            metrics.commits_dropped.clone(),
        );
        registry.register(
            "gc_reachable_blocks",
            "Blocks the retained commits reached at the last garbage collection",
            metrics.blocks_reachable.clone(),
        );
        registry.register(
            "gc_last_duration_seconds",
            "How long the last garbage collection took",
            metrics.last_duration_seconds.clone(),
        );
        registry.register(
            "gc_phase",
            "The running garbage collection's phase: 0 none, 1 listing the blocks, 2 marking what the retained commits reach, 3 sweeping the rest",
            metrics.phase.clone(),
        );
        registry.register(
            "gc_phase_done",
            "The running garbage collection's progress in its phase: blocks listed, reached or deleted",
            metrics.phase_done.clone(),
        );
        registry.register(
            "gc_sweep_total",
            "Blocks the running garbage collection's sweep deletes (0 before it sweeps)",
            metrics.sweep_total.clone(),
        );
        registry.register(
            "gc_running_seconds",
            "Seconds since the running garbage collection started (0 when none runs)",
            metrics.running_seconds.clone(),
        );
        metrics
    }
}

/// Exports the storage engine's metrics, read at each scrape, under their
/// dotted names made Prometheus names (`slatedb.db.l0_sst_count` becomes
/// `datarepo_slatedb_db_l0_sst_count`).
struct EngineCollector(Box<dyn Fn() -> Vec<EngineMetric> + Send + Sync>);

impl std::fmt::Debug for EngineCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EngineCollector")
    }
}

impl Collector for EngineCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let mut metrics = (self.0)();
        // One descriptor per name, then each of its label sets.
        metrics.sort_by(|a, b| a.name.cmp(&b.name));
        for family in metrics.chunk_by(|a, b| a.name == b.name) {
            let first = &family[0];
            let metric_type = match first.value {
                EngineMetricValue::Counter(_) => MetricType::Counter,
                EngineMetricValue::Gauge(_) => MetricType::Gauge,
                EngineMetricValue::Histogram { .. } => MetricType::Histogram,
            };
            let name = prometheus_name(&first.name);
            let mut metric = encoder.encode_descriptor(&name, &first.help, None, metric_type)?;
            for series in family {
                // A name whose series disagree on their type is the
                // engine's bug; keep the scrape well-formed by skipping them.
                if std::mem::discriminant(&series.value) != std::mem::discriminant(&first.value) {
                    continue;
                }
                let mut series_encoder = metric.encode_family(&series.labels)?;
                match &series.value {
                    EngineMetricValue::Counter(n) => {
                        series_encoder
                            .encode_counter::<Vec<(String, String)>, u64, u64>(n, None)?;
                    }
                    EngineMetricValue::Gauge(n) => series_encoder.encode_gauge(n)?,
                    EngineMetricValue::Histogram {
                        count,
                        sum,
                        buckets,
                    } => {
                        // The encoder writes `f64::MAX` as `+Inf`.
                        let buckets: Vec<(f64, u64)> = buckets
                            .iter()
                            .map(|&(bound, n)| {
                                (if bound.is_finite() { bound } else { f64::MAX }, n)
                            })
                            .collect();
                        series_encoder.encode_histogram::<Vec<(String, String)>>(
                            *sum, *count, &buckets, None,
                        )?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// `name` with every character a Prometheus metric name cannot hold
/// replaced by `_`.
fn prometheus_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
