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
mod app;
mod body_budget;
mod connections;
mod error;
mod firehose;
mod frames;
pub use firehose::prune as prune_events;
pub use frames::Retention;
mod gc;
mod handlers;
mod inspect;
mod jetstream;
mod jobs;
pub mod lease;
mod merged_firehose;
mod merged_jetstream;
mod merged_live;
mod merged_log;
mod metrics;
mod partitioned;
mod publisher;
pub use partitioned::{FORWARDED_HEADER, PartitionedServer};
mod role;
mod web;

use std::{sync::Arc, time::Duration};

use app::App;
pub use app::{AccountPolicy, Config, DidMethod, KeyRandomness, Limits, Sessions, SigningKeyDir};
use axum::{
    Router,
    extract::{DefaultBodyLimit, MatchedPath, Request, State},
    http::{Method, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::{get, post},
};
pub use connections::{ConnectionLimits, serve_with};
pub use error::XrpcError;
pub use gc::{GcSchedule, GcTask};
use repo::Repos;
pub use role::{Role, Roles, WRITER_HEADER};
use store::Kv;
use tower_http::{cors::CorsLayer, trace::TraceLayer};

/// The router serving `repos` under `config` (a [`Server`] without
/// garbage collection).
pub fn router<K: Kv + 'static>(repos: Arc<Repos<K>>, config: Config) -> Router {
    Server::new(repos, config).router()
}

/// Passwords hashed at once (Argon2id, ~19 MiB and tens of milliseconds
/// each): half the cores, at least one, so that a burst of logins waits
/// its turn instead of taking every core from the writes.
fn hashes_at_once() -> usize {
    std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1))
}

/// A server over some repositories: its router and, when asked for,
/// garbage collection alongside the requests.
pub struct Server<K> {
    app: Arc<App<K>>,
}

impl<K> Clone for Server<K> {
    fn clone(&self) -> Self {
        Self {
            app: Arc::clone(&self.app),
        }
    }
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
        let accounts = Arc::new(accounts::Accounts::new(Arc::clone(repos.store())));
        let body_budget = body_budget::BodyBudget::new(
            config.limits.max_inflight_body_bytes,
            config.limits.max_body_bytes,
        );
        Self {
            app: Arc::new(App {
                repos,
                firehose: frames::Firehose::new(
                    config.limits.max_subscribers.max(1),
                    config.limits.max_subscribers_per_ip,
                    config.limits.firehose_buffer_bytes,
                ),
                stream: jetstream::shared::Stream::new(config.limits.firehose_buffer_bytes),
                closing: tokio::sync::watch::channel(false).0,
                roles: config.roles.clone().unwrap_or_else(|| {
                    Arc::new(Roles::new(if config.read_only {
                        Role::Replica
                    } else {
                        Role::Writer
                    }))
                }),
                body_budget,
                queries: tokio::sync::Semaphore::new(config.limits.max_concurrent_queries.max(1)),
                jobs: jobs::Jobs::default(),
                config,
                metrics: metrics::Metrics::new(move || engine.store().kv().engine_metrics()),
                accounts,
                hashing: Arc::new(tokio::sync::Semaphore::new(hashes_at_once())),
                login_limits: accounts::login_limits::LoginLimits::new(),
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

    /// The server's role, which its owner may change while it serves
    /// (a standby taking over).
    #[must_use]
    pub fn roles(&self) -> Arc<Roles> {
        Arc::clone(&self.app.roles)
    }

    /// Makes a standby that has just opened the store as its writer the
    /// writer: repositories and account statuses are read again from the
    /// store, and writes are taken from now on.
    pub async fn promote(&self) {
        self.app.repos.forget_open().await;
        self.app.repos.store().forget_sequences().await;
        self.app.accounts.forget_statuses();
        self.app.roles.set(Role::Writer);
    }

    /// Makes a writer whose lease was taken over (and whose store has been
    /// reopened as a reader) a standby: it takes no more writes, and reads
    /// repositories and account statuses from the store again.
    pub async fn demote(&self) {
        self.app.roles.set(Role::Standby { writer: None });
        self.app.repos.forget_open().await;
        self.app.repos.store().forget_sequences().await;
        self.app.accounts.forget_statuses();
    }

    /// Closes every stream connection (the firehose, `/subscribe`) with
    /// WebSocket close code 1001, "going away", and every one opened from
    /// now on: a consumer reconnects (to another server, or this one when
    /// it is back) and resumes from its cursor. The streams' publishers
    /// stop reading events. Call it when shutting down, before the store
    /// closes, or the shutdown waits for every consumer to leave.
    pub fn close_streams(&self) {
        self.app.closing.send_replace(true);
    }

    /// The DID of the account named by `identifier` (a handle or a DID)
    /// in this server's store, if it has one.
    ///
    /// # Errors
    ///
    /// A storage error, as an XRPC error.
    pub async fn account_did(&self, identifier: &str) -> Result<Option<String>, XrpcError> {
        if self.app.config.sessions.is_none() {
            return Ok(None);
        }
        let found = self
            .app
            .accounts
            .find(identifier)
            .await
            .map_err(|e| XrpcError::internal(e.to_string()))?;
        Ok(found.map(|account| account.did))
    }

    /// Whether accounts created without a DID get `did:web:` and their handle.
    pub(crate) fn makes_web_dids(&self) -> bool {
        self.app
            .config
            .sessions
            .as_ref()
            .is_none_or(|s| matches!(s.policy.did_method, DidMethod::Web))
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
    // Accounts and sessions: their own credentials, small bodies.
    let sessions = Router::new()
        .route(
            "/xrpc/com.atproto.server.createAccount",
            post(handlers::atproto_accounts::create_account::<K>),
        )
        .route(
            "/xrpc/com.atproto.server.createInviteCode",
            post(handlers::atproto_accounts::create_invite_code::<K>),
        )
        .route(
            "/xrpc/com.atproto.server.createInviteCodes",
            post(handlers::atproto_accounts::create_invite_codes::<K>),
        )
        .route(
            "/xrpc/com.atproto.server.createAppPassword",
            post(handlers::atproto_accounts::create_app_password::<K>),
        )
        .route(
            "/xrpc/com.atproto.server.listAppPasswords",
            get(handlers::atproto_accounts::list_app_passwords::<K>),
        )
        .route(
            "/xrpc/com.atproto.server.revokeAppPassword",
            post(handlers::atproto_accounts::revoke_app_password::<K>),
        )
        .route(
            "/xrpc/com.atproto.server.deactivateAccount",
            post(handlers::atproto_admin::deactivate_account::<K>),
        )
        .route(
            "/xrpc/com.atproto.server.activateAccount",
            post(handlers::atproto_admin::activate_account::<K>),
        )
        .route(
            "/xrpc/com.atproto.admin.getAccountInfo",
            get(handlers::atproto_admin::get_account_info::<K>),
        )
        .route(
            "/xrpc/com.atproto.admin.updateAccountPassword",
            post(handlers::atproto_admin::update_account_password::<K>),
        )
        .route(
            "/xrpc/com.atproto.admin.updateSubjectStatus",
            post(handlers::atproto_admin::update_subject_status::<K>),
        )
        .route(
            "/.well-known/did.json",
            get(handlers::identity::well_known_did::<K>),
        )
        .route(
            "/xrpc/com.atproto.server.createSession",
            post(handlers::atproto_server::create_session::<K>),
        )
        .route(
            "/xrpc/com.atproto.server.getSession",
            get(handlers::atproto_server::get_session::<K>),
        )
        .route(
            "/xrpc/com.atproto.server.refreshSession",
            post(handlers::atproto_server::refresh_session::<K>),
        )
        .route(
            "/xrpc/com.atproto.server.deleteSession",
            post(handlers::atproto_server::delete_session::<K>),
        )
        .route(
            "/xrpc/app.bsky.actor.getProfile",
            get(handlers::app_bsky::get_profile::<K>),
        )
        .route(
            "/xrpc/com.atproto.server.describeServer",
            get(handlers::atproto_server::describe_server::<K>),
        );
    Router::new()
        .merge(writes)
        .merge(sessions)
        .route(
            "/xrpc/com.atproto.repo.uploadBlob",
            post(handlers::atproto_blobs::upload_blob::<K>),
        )
        .route(
            "/xrpc/com.atproto.sync.getBlob",
            get(handlers::atproto_blobs::get_blob::<K>),
        )
        .route(
            "/xrpc/com.atproto.sync.listBlobs",
            get(handlers::atproto_blobs::list_blobs::<K>),
        )
        .route(
            "/xrpc/com.atproto.repo.getRecord",
            get(handlers::atproto_repo::get_record::<K>),
        )
        .route(
            "/xrpc/com.atproto.sync.subscribeRepos",
            get(firehose::subscribe_repos::<K>),
        )
        .route("/subscribe", get(jetstream::subscribe::<K>))
        .route("/subscribe/dictionary", get(jetstream::dictionary))
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
            "/xrpc/dev.datarepo.exportRecords",
            get(handlers::datarepo_export::export_records::<K>),
        )
        .route(
            "/xrpc/dev.datarepo.aggregateRecords",
            get(handlers::datarepo_query::aggregate_records::<K>),
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
        .route("/xrpc/_health", get(handlers::service::health::<K>))
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
    // An upload takes as long as its body takes to arrive (100 MiB from a
    // phone is minutes): a stalled one is cut off by the connection's idle
    // timeout instead.
    let timeout = if method == "com.atproto.repo.uploadBlob" {
        Duration::MAX
    } else {
        app.config.limits.request_timeout
    };
    let procedure = http_method == Method::POST;
    let mut response = match tokio::time::timeout(timeout, next.run(request)).await {
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
    // A writer whose lease has lapsed acknowledges nothing (a standby may
    // already be the writer): what it did is as if it timed out.
    if procedure && response.status().is_success() && !app.roles.may_acknowledge() {
        response = role::not_acknowledged(&app.roles.role()).into_response();
    }
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
