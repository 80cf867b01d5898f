//! What the server is configured with ([`Config`], [`Limits`], the
//! signing-key directory) and what every handler shares ([`App`]).

use std::{sync::Arc, time::Duration};

use axum::http::{HeaderValue, header};
use repo::Repos;

/// Limits on what one request may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest request body, in bytes.
    pub max_body_bytes: usize,
    /// Largest record, in bytes of dag-cbor.
    pub max_record_bytes: usize,
    /// Largest blob `uploadBlob` takes, in bytes.
    pub max_blob_bytes: u64,
    /// How long a blob no commit refers to is kept (collections while
    /// serving drop it after).
    pub blob_temp_ttl: Duration,
    /// Most records in one `listRecords` page (AT Protocol's maximum is 100).
    pub max_page: usize,
    /// Most writes in one `applyWrites`.
    pub max_writes: usize,
    /// Longest a request may take (`uploadBlob` excepted: its body takes
    /// the time it takes, bounded by the connection's idle timeout).
    pub request_timeout: Duration,
    /// Bytes that the bodies of all write requests in flight may hold
    /// together (at least `max_body_bytes`); past it a write is answered
    /// `503` with `Retry-After` before its body is read.
    pub max_inflight_body_bytes: usize,
    /// Most firehose subscribers at once; past it `subscribeRepos` is
    /// answered `503 TooManySubscribers`. Each also holds one of the
    /// connections [`ConnectionLimits::max_connections`](crate::connections::ConnectionLimits::max_connections) allows, so keep it
    /// below that, leaving room for writes and health checks.
    pub max_subscribers: usize,
    /// Most subscribers (firehose and stream together) from one client
    /// address; past it a subscription is answered `429
    /// TooManySubscribers`.
    pub max_subscribers_per_ip: usize,
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
            max_blob_bytes: 100 << 20,
            blob_temp_ttl: Duration::from_secs(repo::DEFAULT_BLOB_TEMP_TTL_SECS),
            max_page: 100,
            max_writes: 200,
            request_timeout: Duration::from_secs(30),
            max_inflight_body_bytes: 64 << 20,
            max_subscribers: 256,
            max_subscribers_per_ip: 256,
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
    /// Its role, shared with whoever changes it (a standby's takeover, a
    /// writer's lease); default: the writer, or a replica when `read_only`.
    pub roles: Option<Arc<crate::role::Roles>>,
    /// Request limits.
    pub limits: Limits,
    /// Accounts and sessions (`None`: none; `com.atproto.server.*` answers
    /// `MethodNotImplemented` and only the admin token writes).
    pub sessions: Option<Sessions>,
}

/// What accounts and sessions need: the token signer, a clock and
/// randomness (injected: the library reads neither), and the operator's
/// choices.
#[derive(Clone)]
pub struct Sessions {
    /// Issues and verifies the session JWTs.
    pub tokens: accounts::tokens::Tokens,
    /// Seconds since the Unix epoch.
    pub clock: Arc<dyn Fn() -> u64 + Send + Sync>,
    /// Random bytes (salts, token ids, invite codes, app passwords).
    pub random: KeyRandomness,
    /// Who may create accounts, with which DIDs and handles.
    pub policy: AccountPolicy,
}

/// How a server makes accounts' DIDs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DidMethod {
    /// `did:web:` and the handle; the server answers
    /// `/.well-known/did.json` for it.
    #[default]
    Web,
    /// `did:key:` of the account's signing key.
    Key,
}

/// The operator's choices about accounts.
#[derive(Debug, Clone, Default)]
pub struct AccountPolicy {
    /// How new accounts' DIDs are made.
    pub did_method: DidMethod,
    /// The URL clients reach this server at: the `#atproto_pds` service of
    /// its accounts' DID documents (`None`: no DID documents are served).
    pub public_url: Option<String>,
    /// Where every new account gets its signing key (`None`: accounts'
    /// repositories are unsigned, and `did:key` accounts cannot be made).
    pub signing_keys: Option<SigningKeyDir>,
    /// Whether anyone may create an account (else the admin token or an
    /// invite code is needed).
    pub open_registration: bool,
    /// The handle suffixes accepted (`.example.com`); empty: any handle.
    pub handle_domains: Vec<String>,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("tokens", &self.tokens)
            .finish_non_exhaustive()
    }
}

/// What every request handler shares.
pub(crate) struct App<K> {
    pub(crate) repos: Arc<Repos<K>>,
    pub(crate) firehose: crate::frames::Firehose,
    /// The Jetstream-compatible stream's shared state.
    pub(crate) stream: crate::jetstream::shared::Stream,
    /// Writer, standby or replica, now.
    pub(crate) roles: Arc<crate::role::Roles>,
    /// Set when the server stops: stream connections close (going away)
    /// instead of holding the shutdown up for as long as they stay.
    pub(crate) closing: tokio::sync::watch::Sender<bool>,
    pub(crate) config: Config,
    pub(crate) metrics: crate::metrics::Metrics,
    pub(crate) body_budget: crate::body_budget::BodyBudget,
    /// One permit per query that may be evaluated at once.
    pub(crate) queries: tokio::sync::Semaphore,
    pub(crate) jobs: crate::jobs::Jobs,
    /// The store's accounts and open sessions.
    pub(crate) accounts: Arc<accounts::Accounts<K>>,
    /// One permit per password hashed at once (Argon2id is slow by
    /// design; logins must not take every thread).
    pub(crate) hashing: Arc<tokio::sync::Semaphore>,
    /// Failed logins per account and per address.
    pub(crate) login_limits: accounts::login_limits::LoginLimits,
}

pub(crate) fn content_type(value: &'static str) -> (header::HeaderName, HeaderValue) {
    (header::CONTENT_TYPE, HeaderValue::from_static(value))
}
