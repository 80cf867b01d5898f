//! datarepo's HTTP API, shaped like AT Protocol's XRPC so existing clients
//! work: `com.atproto.repo.*` (records) and `com.atproto.sync.*` (CAR
//! export, latest commit, record proofs, repository list), plus
//! `/xrpc/_health` and Prometheus metrics at `/metrics`.
//!
//! Writes need `Authorization: Bearer <token>`; a server without a token
//! refuses every write. Reads are public unless [`Config::private_reads`].
//! Errors are XRPC errors ([`XrpcError`]): a status and
//! `{"error", "message"}`. Bad input never writes anything.

#![warn(clippy::unwrap_used)]

mod admission;
mod connections;
mod error;
mod firehose;
pub use firehose::{Retention, prune as prune_events};
mod gc;
mod handlers;
mod inspect;
mod jobs;
mod metrics;
mod web;

use std::{sync::Arc, time::Duration};

use axum::{
    Router,
    extract::{DefaultBodyLimit, MatchedPath, Request, State},
    http::{HeaderValue, Method, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::{get, post},
};
pub(crate) use connections::ConnectionSlot;
pub use connections::{ConnectionLimits, serve_with};
pub use error::XrpcError;
pub use gc::{GcSchedule, GcTask};
use repo::Repos;
use store::Kv;
use tower_http::{cors::CorsLayer, trace::TraceLayer};

/// Limits on what one request may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest request body, in bytes.
    pub max_body_bytes: usize,
    /// Largest record, in bytes of dag-cbor.
    pub max_record_bytes: usize,
    /// Most records in one `listRecords` page (AT Protocol's maximum is 100).
    pub max_page: usize,
    /// Most writes in one `applyWrites`.
    pub max_writes: usize,
    /// Longest a request may take.
    pub request_timeout: Duration,
    /// Bytes that the bodies of all write requests in flight may hold
    /// together (at least `max_body_bytes`); past it a write is answered
    /// `503` with `Retry-After` before its body is read.
    pub max_inflight_body_bytes: usize,
    /// Most firehose subscribers at once; past it `subscribeRepos` is
    /// answered `503 TooManySubscribers`. Each also holds one of the
    /// connections [`ConnectionLimits::max_connections`] allows, so keep it
    /// below that, leaving room for writes and health checks.
    pub max_subscribers: usize,
    /// Bytes of recent firehose frames kept in memory for the subscribers
    /// following the present (at most 4,096 frames); a subscriber that
    /// falls further behind is closed with `ConsumerTooSlow`.
    pub firehose_buffer_bytes: usize,
    /// Most queries (`queryRecords`, `countRecords`, `topValues`) evaluated
    /// at once; others wait their turn (within the request timeout). Below
    /// the runtime's worker threads, so that writes and health checks
    /// always find one.
    pub max_concurrent_queries: usize,
    /// Longest a query may run once its turn has come; past it it is
    /// abandoned with `503 QueryTimeout`.
    pub query_timeout: Duration,
    /// How long a request that starts a job (`addIndex`, `rebuildIndexes`)
    /// waits for its outcome; past it the request answers `202` with the
    /// job, which `getJob` follows.
    pub job_answer_wait: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_body_bytes: 4 << 20,
            max_record_bytes: 1 << 20,
            max_page: 100,
            max_writes: 200,
            request_timeout: Duration::from_secs(30),
            max_inflight_body_bytes: 64 << 20,
            max_subscribers: 256,
            firehose_buffer_bytes: 64 << 20,
            max_concurrent_queries: std::thread::available_parallelism()
                .map_or(1, |n| n.get().saturating_sub(1).max(1)),
            query_timeout: Duration::from_secs(10),
            job_answer_wait: Duration::from_secs(5),
        }
    }
}

/// The source of a new signing key's 32 random bytes (injected: library
/// code reads no ambient randomness).
pub type KeyRandomness = Arc<dyn Fn(&mut [u8; 32]) + Send + Sync>;

/// Where repositories created through the API get their signing keys:
/// one PKCS #8 PEM file per repository, `<dir>/<repository id>.key`,
/// created (mode 0600) on the repository's first write, or used as it is
/// when it exists.
#[derive(Clone)]
pub struct SigningKeyDir {
    /// The directory.
    pub dir: std::path::PathBuf,
    /// The curve of new keys.
    pub curve: repo::Curve,
    /// Fills a new key's 32 random bytes.
    pub random: KeyRandomness,
}

impl std::fmt::Debug for SigningKeyDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKeyDir")
            .field("dir", &self.dir)
            .field("curve", &self.curve)
            .finish_non_exhaustive()
    }
}

impl SigningKeyDir {
    /// The key of repository `id`, made and written if its file does not
    /// exist, with the file's absolute path.
    ///
    /// # Errors
    ///
    /// The key file cannot be read or written.
    pub fn key_for(
        &self,
        id: &str,
    ) -> Result<(Arc<repo::SigningKey>, std::path::PathBuf), repo::KeyError> {
        let file = std::path::absolute(self.dir.join(format!("{id}.key"))).map_err(|source| {
            repo::KeyError::Io {
                path: self.dir.display().to_string(),
                source,
            }
        })?;
        if !file.exists() {
            let key = repo::SigningKey::generate(self.curve, |b| (self.random)(b));
            match key.write_new_file(&file) {
                Ok(()) => return Ok((Arc::new(key), file)),
                // Another writer made it first: use theirs.
                Err(repo::KeyError::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
        Ok((Arc::new(repo::SigningKey::read_file(&file)?), file))
    }
}

/// How the server behaves.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// Where repositories created through the API get signing keys
    /// (`None`: they are created unsigned).
    pub signing_keys: Option<SigningKeyDir>,
    /// The bearer token that authorizes writes (`None`: writes refused).
    pub token: Option<String>,
    /// Whether reads need the token too.
    pub private_reads: bool,
    /// Whether this server is a read-only replica.
    pub read_only: bool,
    /// Request limits.
    pub limits: Limits,
}

pub(crate) struct App<K> {
    pub(crate) repos: Arc<Repos<K>>,
    pub(crate) firehose: firehose::Firehose,
    pub(crate) config: Config,
    pub(crate) metrics: metrics::Metrics,
    pub(crate) body_budget: admission::BodyBudget,
    /// One permit per query that may be evaluated at once.
    pub(crate) queries: tokio::sync::Semaphore,
    pub(crate) jobs: jobs::Jobs,
}

/// The router serving `repos` under `config` (a [`Server`] without
/// garbage collection).
pub fn router<K: Kv + 'static>(repos: Arc<Repos<K>>, config: Config) -> Router {
    Server::new(repos, config).router()
}

/// A server over some repositories: its router and, when asked for,
/// garbage collection alongside the requests.
pub struct Server<K> {
    app: Arc<App<K>>,
}

impl<K> std::fmt::Debug for Server<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("config", &self.app.config)
            .finish_non_exhaustive()
    }
}

impl<K: Kv + 'static> Server<K> {
    /// A server serving `repos` under `config`.
    pub fn new(repos: Arc<Repos<K>>, config: Config) -> Self {
        let engine = Arc::clone(&repos);
        let body_budget = admission::BodyBudget::new(
            config.limits.max_inflight_body_bytes,
            config.limits.max_body_bytes,
        );
        Self {
            app: Arc::new(App {
                repos,
                firehose: firehose::Firehose::new(
                    config.limits.max_subscribers.max(1),
                    config.limits.firehose_buffer_bytes,
                ),
                body_budget,
                queries: tokio::sync::Semaphore::new(config.limits.max_concurrent_queries.max(1)),
                jobs: jobs::Jobs::default(),
                config,
                metrics: metrics::Metrics::new(move || engine.store().kv().engine_metrics()),
            }),
        }
    }

    /// Starts collecting garbage on `schedule` (its outcomes go to the log
    /// and to the `datarepo_gc_*` metrics) until [`GcTask::stop`]. Must be
    /// called within a Tokio runtime; a read-only server's collections fail.
    pub fn spawn_gc(&self, schedule: GcSchedule) -> GcTask {
        gc::spawn(Arc::clone(&self.app), schedule)
    }

    /// Deletes firehose events outside `retention` every minute (must be
    /// called within a Tokio runtime).
    pub fn spawn_firehose_pruner(&self, retention: Retention) {
        firehose::spawn_pruner(&self.app, retention);
    }

    /// Finishes, in the background, the index rebuilds that imports left
    /// pending (a crash between an import's commit and its rebuild's end):
    /// until each ends, queries on that repository's indexes answer 503 and
    /// its writes wait. A writer's job (must be called within a Tokio
    /// runtime); the outcome of each goes to the log.
    pub fn spawn_index_recovery(&self) -> tokio::task::JoinHandle<()> {
        let repos = Arc::clone(&self.app.repos);
        tokio::spawn(async move {
            let ids = match repos.list().await {
                Ok(list) => list,
                Err(e) => {
                    tracing::error!(error = %e, "cannot list repositories to finish index rebuilds");
                    return;
                }
            };
            for (id, _) in ids {
                let repo = match repos.open(&id).await {
                    Ok(repo) => repo,
                    Err(e) => {
                        tracing::error!(repo = %id, error = %e, "cannot open a repository");
                        continue;
                    }
                };
                match repo.index_rebuild_pending().await {
                    Ok(false) => continue,
                    Ok(true) => {}
                    Err(e) => {
                        tracing::error!(repo = %id, error = %e, "cannot read the index epoch");
                        continue;
                    }
                }
                tracing::warn!(repo = %id, "an import's index rebuild was interrupted; finishing it");
                match repo.rebuild_indexes(|_| {}).await {
                    Ok(records) => tracing::info!(repo = %id, records, "indexes rebuilt"),
                    Err(e) => tracing::error!(
                        repo = %id,
                        error = %e,
                        "index rebuild failed; run `datarepo index rebuild`"
                    ),
                }
            }
        })
    }

    /// The HTTP routes.
    pub fn router(&self) -> Router {
        router_for(Arc::clone(&self.app))
    }
}

fn router_for<K: Kv + 'static>(app: Arc<App<K>>) -> Router {
    let limits = app.config.limits;
    // Writes are authorized, and their bodies budgeted, before any body
    // byte is read.
    let writes = Router::new()
        .route(
            "/xrpc/com.atproto.repo.createRecord",
            post(handlers::atproto_repo::create_record::<K>),
        )
        .route(
            "/xrpc/com.atproto.repo.putRecord",
            post(handlers::atproto_repo::put_record::<K>),
        )
        .route(
            "/xrpc/com.atproto.repo.deleteRecord",
            post(handlers::atproto_repo::delete_record::<K>),
        )
        .route(
            "/xrpc/com.atproto.repo.applyWrites",
            post(handlers::atproto_repo::apply_writes::<K>),
        )
        .route(
            "/xrpc/dev.datarepo.addIndex",
            post(handlers::datarepo_index::add_index::<K>),
        )
        .route(
            "/xrpc/dev.datarepo.dropIndex",
            post(handlers::datarepo_index::drop_index::<K>),
        )
        .route(
            "/xrpc/dev.datarepo.rebuildIndexes",
            post(handlers::datarepo_index::rebuild_indexes::<K>),
        )
        .route(
            "/xrpc/dev.datarepo.putLexicons",
            post(handlers::datarepo_schema::put_lexicons::<K>),
        )
        .route(
            "/xrpc/dev.datarepo.deleteLexicon",
            post(handlers::datarepo_schema::delete_lexicon::<K>),
        )
        .route(
            "/xrpc/dev.datarepo.defineCollection",
            post(handlers::datarepo_schema::define_collection::<K>),
        )
        .route_layer(middleware::from_fn_with_state(
            Arc::clone(&app),
            admission::admit_write::<K>,
        ));
    Router::new()
        .merge(writes)
        .route(
            "/xrpc/com.atproto.repo.getRecord",
            get(handlers::atproto_repo::get_record::<K>),
        )
        .route(
            "/xrpc/com.atproto.sync.subscribeRepos",
            get(firehose::subscribe_repos::<K>),
        )
        .route(
            "/xrpc/com.atproto.repo.listRecords",
            get(handlers::atproto_repo::list_records::<K>),
        )
        .route(
            "/xrpc/dev.datarepo.queryRecords",
            get(handlers::datarepo_query::query_records::<K>),
        )
        .route(
            "/xrpc/dev.datarepo.countRecords",
            get(handlers::datarepo_query::count_records::<K>),
        )
        .route(
            "/xrpc/dev.datarepo.topValues",
            get(handlers::datarepo_query::top_values::<K>),
        )
        .route(
            "/xrpc/dev.datarepo.listIndexes",
            get(handlers::datarepo_index::list_indexes::<K>),
        )
        .route(
            "/xrpc/dev.datarepo.getJob",
            get(handlers::datarepo_index::get_job::<K>),
        )
        .route(
            "/xrpc/dev.datarepo.checkToken",
            get(handlers::datarepo_index::check_token::<K>),
        )
        .route(
            "/xrpc/dev.datarepo.listJobs",
            get(handlers::datarepo_index::list_jobs::<K>),
        )
        .route(
            "/xrpc/com.atproto.repo.describeRepo",
            get(handlers::atproto_repo::describe_repo::<K>),
        )
        .route(
            "/xrpc/com.atproto.sync.getRepo",
            get(handlers::atproto_sync::get_repo::<K>),
        )
        .route(
            "/xrpc/com.atproto.sync.getLatestCommit",
            get(handlers::atproto_sync::get_latest_commit::<K>),
        )
        .route(
            "/xrpc/com.atproto.sync.getRecord",
            get(handlers::atproto_sync::sync_get_record::<K>),
        )
        .route(
            "/xrpc/com.atproto.sync.listRepos",
            get(handlers::atproto_sync::list_repos::<K>),
        )
        .route(
            "/xrpc/dev.datarepo.describeCollections",
            get(inspect::describe_collections::<K>),
        )
        .route(
            "/xrpc/dev.datarepo.getRepoStats",
            get(inspect::get_repo_stats::<K>),
        )
        .route(
            "/xrpc/dev.datarepo.listCommits",
            get(inspect::list_commits::<K>),
        )
        .route(
            "/xrpc/dev.datarepo.getCommit",
            get(inspect::get_commit::<K>),
        )
        .route(
            "/xrpc/dev.datarepo.getRecord",
            get(inspect::get_record::<K>),
        )
        .route(
            "/xrpc/dev.datarepo.getRecordHistory",
            get(inspect::get_record_history::<K>),
        )
        .route(
            "/xrpc/dev.datarepo.getLexicon",
            get(inspect::get_lexicon::<K>),
        )
        .route("/xrpc/dev.datarepo.getBlock", get(inspect::get_block::<K>))
        .route("/xrpc/dev.datarepo.getShard", get(inspect::get_shard::<K>))
        .route(
            "/xrpc/dev.datarepo.getPailPath",
            get(inspect::get_pail_path::<K>),
        )
        .route("/xrpc/_health", get(handlers::service::health))
        .route("/", get(web::page))
        .route("/repo/{*view}", get(web::page))
        .route("/ui/{name}", get(web::asset))
        .route("/metrics", get(handlers::service::metrics::<K>))
        .route(
            "/xrpc/{method}",
            axum::routing::any(handlers::service::not_implemented),
        )
        .fallback(handlers::service::not_found)
        .method_not_allowed_fallback(handlers::service::wrong_http_method)
        .layer(middleware::from_fn_with_state(
            Arc::clone(&app),
            observe::<K>,
        ))
        .layer(DefaultBodyLimit::max(limits.max_body_bytes))
        .layer(TraceLayer::new_for_http())
        .layer(
            CorsLayer::new()
                .allow_origin(tower_http::cors::Any)
                .allow_methods([Method::GET, Method::POST, Method::OPTIONS])
                .allow_headers([header::AUTHORIZATION, header::CONTENT_TYPE])
                .max_age(Duration::from_secs(86_400)),
        )
        .with_state(app)
}

/// Bounds each request's time and records its metrics.
async fn observe<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    request: Request,
    next: Next,
) -> Response {
    let method = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", |p| match p.as_str() {
            "/xrpc/{method}" => "unknown",
            p => p.trim_start_matches("/xrpc/"),
        })
        .to_owned();
    let clock = tokio::time::Instant::now();
    // The access log names the path only: queries may carry record keys a
    // private deployment would rather not log.
    let http_method = request.method().clone();
    let path = request.uri().path().to_owned();
    let timeout = app.config.limits.request_timeout;
    let response = match tokio::time::timeout(timeout, next.run(request)).await {
        Ok(response) => response,
        Err(_) => XrpcError::new(
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            "RequestTimeout",
            format!(
                "the request took longer than {timeout:?}; a write may still complete (check getRecord)"
            ),
        )
        .into_response(),
    };
    let elapsed = clock.elapsed();
    tracing::info!(
        target: "datarepo::access",
        method = %http_method,
        path = %path,
        status = response.status().as_u16(),
        // Hundredths of a millisecond: `ms=0.72`, not sixteen digits.
        ms = (elapsed.as_secs_f64() * 1e5).round() / 100.0,
        "request"
    );
    app.metrics
        .latency
        .get_or_create(&metrics::MethodLabels {
            method: method.clone(),
        })
        .observe(elapsed.as_secs_f64());
    app.metrics
        .requests
        .get_or_create(&metrics::RequestLabels {
            method,
            status: response.status().as_u16(),
        })
        .inc();
    response
}

/// Serves `router` on `listener` with the default [`ConnectionLimits`]
/// until `shutdown` resolves, then finishes the requests in flight (their
/// commits complete) and returns.
///
/// # Errors
///
/// When the listener fails.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(listener, router, ConnectionLimits::default(), shutdown).await
}

pub(crate) fn content_type(value: &'static str) -> (header::HeaderName, HeaderValue) {
    (header::CONTENT_TYPE, HeaderValue::from_static(value))
}
