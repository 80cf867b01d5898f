//! Prometheus metrics: requests and latency per XRPC method and status.

use std::sync::Mutex;

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, histogram::Histogram},
    registry::Registry,
};

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
}

impl Metrics {
    pub(crate) fn new() -> Self {
        let mut registry = Registry::with_prefix("datarepo");
        let requests = Family::<RequestLabels, Counter>::default();
        let latency = Family::<MethodLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            latency_histogram,
        );
        let records_written = Counter::default();
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
        registry.register(
            "records_written",
            "Records created, updated or deleted by acknowledged commits",
            records_written.clone(),
        );
        Self {
            registry: Mutex::new(registry),
            requests,
            latency,
            records_written,
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
