//! `datarepo serve`: the HTTP API over the store.

use std::{net::SocketAddr, path::PathBuf, process::ExitCode, sync::Arc, time::Duration};

use clap::Args;
use repo::Repos;
use store::Store;

use crate::storage::StoreArgs;

/// `datarepo serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:2583")]
    addr: SocketAddr,
    /// Bearer token that authorizes writes (without one, writes are refused).
    #[arg(long, env = "DATAREPO_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Require the token for reads too.
    #[arg(long)]
    private_reads: bool,
    /// Give every repository created through the API a signing key of its
    /// own: DIR/<repository>.key (PKCS #8 PEM, mode 0600), made on its
    /// first write; every commit is then signed. Repositories created with
    /// `init --signing-key` are signed with their own key file wherever this is.
    #[arg(long, value_name = "DIR")]
    signing_key_dir: Option<std::path::PathBuf>,
    /// The curve of keys made in --signing-key-dir.
    #[arg(long, value_enum, default_value = "k256", requires = "signing_key_dir")]
    signing_key_type: crate::commands::CurveArg,
    /// The secret that signs session tokens (accounts log in with
    /// `com.atproto.server.createSession`): created (32 random bytes, mode
    /// 0600) when absent. Default: `jwt-secret` in a local store's
    /// directory; a store on S3 has accounts only with this option.
    #[arg(long, value_name = "FILE")]
    jwt_secret_file: Option<PathBuf>,
    /// The URL clients reach this server at; its host names the server's
    /// DID (`did:web:HOST`), every session token's audience. Default:
    /// `http://` and the listen address.
    #[arg(long, value_name = "URL")]
    public_url: Option<String>,
    /// How accounts' DIDs are made: `web` (`did:web:` and the handle; this
    /// server answers `/.well-known/did.json` for it) or `key` (`did:key:`
    /// of the account's signing key). `did:plc` needs a PLC directory and
    /// is not offered.
    #[arg(long, value_enum, default_value = "web")]
    did_method: DidMethodArg,
    /// Let anyone create an account (else the admin token or an invite
    /// code from createInviteCode is needed).
    #[arg(long)]
    open_registration: bool,
    /// The handle suffixes accounts may have, comma-separated
    /// (`example.com,example.org`); default: any handle.
    #[arg(long, value_delimiter = ',', value_name = "DOMAINS")]
    handle_domains: Vec<String>,
    /// How long an access token lives, in seconds (refresh tokens: 90 days).
    #[arg(long, default_value_t = accounts::tokens::DEFAULT_ACCESS_TTL.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    access_token_ttl_secs: u64,
    /// Serve reads only, from a store another `datarepo serve` writes
    /// (for example the same s3:// location).
    #[arg(long)]
    replica: bool,
    /// How often a replica (or a standby) looks for new commits, in
    /// milliseconds.
    #[arg(long, default_value_t = 1000)]
    refresh_ms: u64,
    /// Serve reads as a replica of a store on S3-compatible storage and
    /// take over as its writer when the writer's lease lapses (see
    /// docs/server.md, "High availability").
    #[arg(long, conflicts_with = "replica")]
    standby: bool,
    /// How often a writer on S3-compatible storage renews its lease (and a
    /// standby reads it), in milliseconds.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(10..))]
    lease_renew_ms: u64,
    /// How long after its last renewal a writer's lease may be taken over
    /// by a standby, in milliseconds; the writer stops acknowledging writes
    /// a fifth of it earlier. At least twice --lease-renew-ms.
    #[arg(long, default_value_t = 5000)]
    lease_ttl_ms: u64,
    /// Largest request body, in bytes.
    #[arg(long, default_value_t = server::Limits::default().max_body_bytes)]
    max_body_bytes: usize,
    /// Largest record (its JSON text), in bytes.
    #[arg(long, default_value_t = server::Limits::default().max_record_bytes)]
    max_record_bytes: usize,
    /// Largest blob uploadBlob takes, in bytes (413 BlobTooLarge past it,
    /// before the body is read further).
    #[arg(long, default_value_t = server::Limits::default().max_blob_bytes)]
    max_blob_bytes: u64,
    /// Seconds an uploaded blob no commit refers to is kept; collections
    /// while serving (--gc-interval-secs) drop it after.
    #[arg(long, default_value_t = repo::DEFAULT_BLOB_TEMP_TTL_SECS)]
    blob_temp_ttl_secs: u64,
    /// Most writes in one applyWrites.
    #[arg(long, default_value_t = server::Limits::default().max_writes)]
    max_writes: usize,
    /// Longest a request may take, in seconds.
    #[arg(long, default_value_t = 30)]
    request_timeout_secs: u64,
    /// Bytes the bodies of all writes in flight may hold together; past it
    /// a write is answered 503 with Retry-After, its body unread.
    #[arg(long, default_value_t = server::Limits::default().max_inflight_body_bytes)]
    max_inflight_body_bytes: usize,
    /// Most connections open at once (also kept below the file-descriptor
    /// limit, with descriptors left for the store).
    #[arg(long, default_value_t = server::ConnectionLimits::default().max_connections as u64, value_parser = clap::value_parser!(u64).range(1..))]
    max_connections: u64,
    /// Most connections open at once from one IP address; past it a new one
    /// is answered 503 TooManyConnections and closed. Behind a reverse proxy
    /// every client has the proxy's address: raise it there.
    #[arg(long, default_value_t = server::ConnectionLimits::default().max_connections_per_ip as u64, value_parser = clap::value_parser!(u64).range(1..))]
    max_connections_per_ip: u64,
    /// Seconds a connection has to send a request's headers once it is
    /// ready for one (closes idle kept-alive connections too).
    #[arg(long, default_value_t = server::ConnectionLimits::default().header_read_timeout.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    header_read_timeout_secs: u64,
    /// Seconds a connection may move no byte while a request is under way
    /// before it is closed (more than --request-timeout-secs).
    #[arg(long, default_value_t = server::ConnectionLimits::default().idle_timeout.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    idle_timeout_secs: u64,
    /// Most firehose subscribers (subscribeRepos WebSockets) at once; past it
    /// a subscription is answered 503 TooManySubscribers. Each holds one of
    /// the --max-connections, so it is kept below that (lowered to half of
    /// it otherwise), leaving room for writes and health checks.
    #[arg(long, default_value_t = server::Limits::default().max_subscribers as u64, value_parser = clap::value_parser!(u64).range(1..))]
    max_subscribers: u64,
    /// Most subscribers (firehose and the /subscribe stream together) from
    /// one client address; past it a subscription is answered 429
    /// TooManySubscribers.
    #[arg(long, default_value_t = server::Limits::default().max_subscribers_per_ip as u64, value_parser = clap::value_parser!(u64).range(1..))]
    max_subscribers_per_ip: u64,
    /// Bytes of recent firehose frames kept in memory for the subscribers
    /// following the present (at most 4,096 frames): a subscriber that falls
    /// further behind is closed with ConsumerTooSlow and resumes from its
    /// cursor, replaying from the store.
    #[arg(long, default_value_t = server::Limits::default().firehose_buffer_bytes as u64, value_parser = clap::value_parser!(u64).range(1..))]
    firehose_buffer_bytes: u64,
    /// Most field-index queries (queryRecords, countRecords, topValues)
    /// evaluated at once; others wait their turn. Default: one less than the
    /// CPUs (at least 1), so that writes and health checks always find one.
    #[arg(long, default_value_t = server::Limits::default().max_concurrent_queries as u64, value_parser = clap::value_parser!(u64).range(1..))]
    max_concurrent_queries: u64,
    /// Seconds a query may run once its turn has come; past it it is
    /// abandoned with 503 QueryTimeout.
    #[arg(long, default_value_t = server::Limits::default().query_timeout.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    query_timeout_secs: u64,
    /// Seconds a request that starts a long job (addIndex, rebuildIndexes)
    /// waits for its outcome before answering 202 with the job to follow
    /// (dev.datarepo.getJob); keep it below a proxy's timeout.
    #[arg(long, default_value_t = server::Limits::default().job_answer_wait.as_secs())]
    job_answer_wait_secs: u64,
    /// How long firehose events (com.atproto.sync.subscribeRepos) are kept:
    /// a number of events (100000) or an age (30m, 72h, 7d). Older ones are
    /// deleted every minute; a consumer with an older cursor replays from the
    /// oldest kept.
    #[arg(long, default_value = "72h", value_parser = parse_retention)]
    firehose_retention: server::Retention,
    /// Whether commits and account changes write events for the
    /// Jetstream-compatible stream (GET /subscribe). `off`: none are
    /// written (writes cost nothing for them) and /subscribe answers 501
    /// StreamOff; the events already kept are pruned as usual.
    #[arg(long, default_value = "on", value_parser = ["on", "off"])]
    stream: String,
    /// Collect garbage every N seconds while serving, alongside the writes
    /// (as `datarepo gc` does; off by default).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), conflicts_with = "replica")]
    gc_interval_secs: Option<u64>,
    /// With --gc-interval-secs: keep only the newest N commits of each
    /// repository and what they reach (by default every commit is kept).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), requires = "gc_interval_secs")]
    gc_keep_last: Option<u64>,
    /// On a partitioned store (`datarepo init --partitions P`): the
    /// partitions this process writes from the start, as a list and ranges
    /// (`0-15,32`), `all`, or `auto`: none from the start, each taken over
    /// once no other process holds its lease (the default on S3-compatible
    /// storage; `all` on a local directory, one machine's). The process
    /// serves the other partitions' reads: as a standby on S3-compatible
    /// storage (taking over one whose writer's lease lapses, up to
    /// --max-partitions), as a reader of a local store.
    #[arg(long, value_name = "auto|all|LIST")]
    partitions_owned: Option<String>,
    /// On a partitioned store on S3-compatible storage: the most partitions
    /// this process writes at once (those of --partitions-owned included);
    /// default: all.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_partitions: Option<u32>,
    /// On a partitioned store on S3-compatible storage: how long a handle
    /// claimed for an account that was never made (its creation stopped
    /// midway) stays unavailable to others, in seconds. Must be longer
    /// than any account creation takes.
    #[arg(long, value_name = "SECS", default_value_t = 600,
          value_parser = clap::value_parser!(u64).range(1..))]
    handle_claim_secs: u64,
    /// Log format: text or json.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    log_format: String,
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!("shutting down: finishing requests in flight");
}

/// File descriptors kept for the store (SlateDB's WAL and SST files, the
/// object store's sockets) and the process itself, never given to clients.
const RESERVED_DESCRIPTORS: u64 = 256;

/// Raises the soft open-file limit to the hard one; returns the connection
/// limit that leaves [`RESERVED_DESCRIPTORS`] free.
fn connection_limit(wanted: usize) -> usize {
    let soft = match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(soft) => soft,
        Err(e) => {
            tracing::warn!(error = %e, "cannot raise the open-file limit");
            rlimit::getrlimit(rlimit::Resource::NOFILE).map_or(1024, |(soft, _)| soft)
        }
    };
    let fits =
        usize::try_from(soft.saturating_sub(RESERVED_DESCRIPTORS).max(16)).unwrap_or(usize::MAX);
    if wanted > fits {
        tracing::warn!(
            open_file_limit = soft,
            max_connections = fits,
            "--max-connections {wanted} lowered to fit the open-file limit \
             ({RESERVED_DESCRIPTORS} descriptors kept for the store); raise it with `ulimit -n`"
        );
    }
    wanted.min(fits)
}

/// `wanted` firehose subscribers, below `max_connections` (each holds a
/// connection): half of them when `wanted` leaves no room for the rest.
fn subscriber_limit(wanted: usize, max_connections: usize) -> usize {
    if wanted < max_connections {
        return wanted;
    }
    let lowered = (max_connections / 2).max(1);
    tracing::warn!(
        max_connections,
        max_subscribers = lowered,
        "--max-subscribers {wanted} lowered below --max-connections {max_connections}: \
         each subscriber holds a connection, and writes and health checks need some"
    );
    lowered
}

fn parse_retention(s: &str) -> Result<server::Retention, String> {
    s.parse()
}

pub(crate) fn run(store: &StoreArgs, args: &ServeArgs) -> Result<ExitCode, String> {
    // Held until the server returns: it flushes the last lines.
    let _logs = crate::logs::init_logs("info,slatedb=warn", &args.log_format, true);
    let connections = server::ConnectionLimits {
        max_connections: connection_limit(
            usize::try_from(args.max_connections).unwrap_or(usize::MAX),
        ),
        max_connections_per_ip: usize::try_from(args.max_connections_per_ip).unwrap_or(usize::MAX),
        header_read_timeout: Duration::from_secs(args.header_read_timeout_secs),
        idle_timeout: Duration::from_secs(args.idle_timeout_secs),
    };
    let location = store.parse()?;
    let on_object_storage = matches!(location, store::Location::S3 { .. });
    if args.standby && !on_object_storage {
        return Err(
            "--standby needs a store on S3-compatible storage (s3://...): a local \
                    directory is one machine's, and its lock already keeps a second writer out"
                .to_owned(),
        );
    }
    // A replica that looks less often than superseded manifests are kept
    // could find the one after its own collected and stop following.
    let longest_refresh = store::LOCAL_METADATA_MIN_AGE / 3;
    if args.replica
        && !on_object_storage
        && Duration::from_millis(args.refresh_ms) > longest_refresh
    {
        return Err(format!(
            "--refresh-ms {} is too long for a replica of a local store: at most {} (superseded \
             manifests are collected after {} s, and a replica must see each before then)",
            args.refresh_ms,
            longest_refresh.as_millis(),
            store::LOCAL_METADATA_MIN_AGE.as_secs()
        ));
    }
    let timing = server::lease::LeaseTiming {
        renew: Duration::from_millis(args.lease_renew_ms),
        ttl: Duration::from_millis(args.lease_ttl_ms),
    };
    if timing.ttl < timing.renew * 2 {
        return Err(format!(
            "--lease-ttl-ms {} must be at least twice --lease-renew-ms {}",
            args.lease_ttl_ms, args.lease_renew_ms
        ));
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let result = rt.block_on(async {
        // Bind first: opening the store as its writer fences any writer
        // already serving it, so a server that then could not listen would
        // have stopped the running one for nothing. Listen only once the
        // store is open, so that no client connects to a server that cannot
        // answer yet (or ever: a full disk).
        let socket = bind(args.addr).map_err(|e| format!("cannot listen on {}: {e}", args.addr))?;
        let bound = socket.local_addr().map_err(|e| e.to_string())?;
        let partitions = store.partitions().await?;
        let owned = match &partitions {
            Some(partitions) => owned_partitions(args, *partitions, on_object_storage)?,
            None => Vec::new(),
        };
        let gate = match &partitions {
            Some(_) if on_object_storage => {
                let max = args.max_partitions.unwrap_or(u32::MAX);
                if owned.len() > usize::try_from(max).unwrap_or(usize::MAX) {
                    return Err(format!(
                        "--partitions-owned names {} partitions, more than --max-partitions {max}",
                        owned.len()
                    ));
                }
                Some(server::lease::TakeGate::new(max))
            }
            _ => None,
        };
        let me = store::LeaseHolder {
            id: crate::writer_lease::holder_id(),
            address: match &args.public_url {
                Some(url) => url.trim_end_matches('/').to_owned(),
                None => format!("http://{bound}"),
            },
            renew_ms: args.lease_renew_ms,
            ttl_ms: args.lease_ttl_ms,
            term: 0,
            renewal: 0,
        };
        // With `auto`, a fair share: the partitions over the live servers.
        if let (Some(partitions), Some(gate)) = (&partitions, &gate)
            && owned.is_empty()
            && !args.replica
        {
            let members = store::Members::at(&location)
                .await
                .map_err(|e| format!("the servers' membership at {location}: {e}"))?;
            tokio::spawn(crate::writer_lease::share_fairly(
                members,
                me.id.clone(),
                partitions.count(),
                timing,
                Arc::clone(gate),
            ));
        }
        // Why the process must stop (a lease lost): said once, ends serving.
        let (fatal_tx, mut fatal_rx) = tokio::sync::watch::channel(None::<String>);
        let config = config(args, store, bound, connections.max_connections)?;
        let opening = Opening {
            args,
            me: &me,
            timing,
            fatal: &fatal_tx,
            config: &config,
            gate,
        };
        let mut served = Vec::new();
        match partitions {
            None => served.push(
                opening
                    .open(store, StoreRole::from_args(args), None)
                    .await?,
            ),
            Some(partitions) => {
                let cache = store::SharedCache::new(
                    store::PARTITIONS_BLOCK_CACHE_BYTES,
                    store::PARTITIONS_META_CACHE_BYTES,
                );
                let sharing = Sharing {
                    cache,
                    databases: partitions.count(),
                };
                tracing::info!(
                    partitions = partitions.count(),
                    owned = ?owned,
                    "opening a partitioned store"
                );
                for p in partitions.all() {
                    let role = match StoreRole::from_args(args) {
                        StoreRole::Writer if !owned.contains(&p) && on_object_storage => {
                            StoreRole::Standby
                        }
                        StoreRole::Writer if !owned.contains(&p) => StoreRole::Replica,
                        role => role,
                    };
                    let part = store.partition(p);
                    served.push(opening.open(&part, role, Some(&sharing)).await?);
                }
            }
        }
        let listener = socket
            .listen(1024)
            .map_err(|e| format!("cannot listen on {}: {e}", args.addr))?;
        if config.token.is_none() && !args.replica {
            tracing::warn!(
                "no write token: writes will be refused (set DATAREPO_TOKEN or pass --token)"
            );
        }
        tracing::info!(
            addr = %bound,
            store = store.location(),
            replica = args.replica,
            max_connections = connections.max_connections,
            "datarepo serving on http://{bound}"
        );
        let router = match partitions {
            None => served[0].server.router(),
            Some(partitions) => {
                let front = server::PartitionedServer::new(
                    partitions,
                    served.iter().map(|s| s.server.clone()).collect(),
                );
                // On object storage several processes make accounts: the
                // object store keeps each handle to one of them.
                let front = if on_object_storage {
                    let claims = store::HandleClaims::at(&location)
                        .await
                        .map_err(|e| format!("the handle claims at {location}: {e}"))?;
                    front.with_handle_claims(claims, Duration::from_secs(args.handle_claim_secs))
                } else {
                    front
                };
                front.router()
            }
        };
        let closing: Vec<_> = served.iter().map(|s| s.server.clone()).collect();
        let stop = async move {
            tokio::select! {
                () = shutdown_signal() => {}
                _ = fatal_rx.wait_for(Option::is_some) => {}
            }
            for server in closing {
                server.close_streams();
            }
        };
        let result = server::serve_with(listener, router, connections, stop).await;
        let fatal = fatal_tx.borrow().clone();
        let mut failures = Vec::new();
        for one in served {
            if let Err(e) = one.close(fatal.is_some()).await {
                failures.push(e);
            }
        }
        if let Some(fatal) = fatal {
            return Err(fatal);
        }
        result.map_err(|e| format!("server failed: {e}"))?;
        if !failures.is_empty() {
            return Err(failures.join("; "));
        }
        tracing::info!("stopped");
        Ok(ExitCode::SUCCESS)
    });
    // Background store tasks may still be running after a timed-out close.
    rt.shutdown_timeout(Duration::from_secs(1));
    result
}

/// How this process serves one store (or one partition).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StoreRole {
    Writer,
    Standby,
    Replica,
}

impl StoreRole {
    fn from_args(args: &ServeArgs) -> Self {
        if args.replica {
            Self::Replica
        } else if args.standby {
            Self::Standby
        } else {
            Self::Writer
        }
    }
}

/// The partitions this process writes from the start: `--partitions-owned`
/// (by default `auto` on object storage, `all` on a local directory).
fn owned_partitions(
    args: &ServeArgs,
    partitions: store::Partitions,
    on_object_storage: bool,
) -> Result<Vec<u32>, String> {
    let list = match args.partitions_owned.as_deref() {
        Some(list) => list,
        None if on_object_storage => "auto",
        None => "all",
    };
    match list {
        "all" => return Ok(partitions.all().collect()),
        "auto" if on_object_storage => return Ok(Vec::new()),
        "auto" => {
            return Err(
                "--partitions-owned auto needs a store on S3-compatible storage (leases \
                 decide who writes what); a local store's partitions are one machine's: \
                 give a list, or all"
                    .to_owned(),
            );
        }
        _ => {}
    }
    let mut owned = Vec::new();
    for part in list.split(',') {
        let range = part.trim();
        let (from, to) = range.split_once('-').unwrap_or((range, range));
        let parse = |s: &str| {
            s.trim().parse::<u32>().ok().filter(|p| *p < partitions.count()).ok_or_else(|| {
                format!(
                    "--partitions-owned {list:?}: {s:?} is not a partition of this store (0 to {})",
                    partitions.count() - 1
                )
            })
        };
        owned.extend(parse(from)?..=parse(to)?);
    }
    owned.sort_unstable();
    owned.dedup();
    Ok(owned)
}

/// What the partitions of one process share: SlateDB's cache, and memory
/// divided by how many are open.
struct Sharing {
    cache: store::SharedCache,
    databases: u32,
}

/// What opening each store (or partition) of this process needs.
struct Opening<'a> {
    args: &'a ServeArgs,
    me: &'a store::LeaseHolder,
    timing: server::lease::LeaseTiming,
    fatal: &'a tokio::sync::watch::Sender<Option<String>>,
    config: &'a server::Config,
    /// How many leases this process may hold (`--max-partitions`, its
    /// fair share with `auto`).
    gate: Option<Arc<server::lease::TakeGate>>,
}

/// One store (or partition) as this process serves it.
struct Served {
    kv: store::SlateKv,
    server: server::Server<store::SlateKv>,
    read_socket: Option<store::ReadSocket>,
    gc: Arc<tokio::sync::Mutex<Option<server::GcTask>>>,
}

impl Opening<'_> {
    /// Opens `store` in `role`: a writer on object storage takes the lease
    /// first, a standby starts watching it.
    async fn open(
        &self,
        store: &StoreArgs,
        role: StoreRole,
        sharing: Option<&Sharing>,
    ) -> Result<Served, String> {
        let args = self.args;
        let location = store.parse()?;
        let on_object_storage = matches!(location, store::Location::S3 { .. });
        // A writer on object storage holds the lease; a standby waits for it.
        let lease = if on_object_storage && role != StoreRole::Replica {
            Some(
                store::Lease::at(&location)
                    .await
                    .map_err(|e| format!("the writer lease at {location}: {e}"))?,
            )
        } else {
            None
        };
        // A writer takes the lease before it opens the store (and so fences
        // the writer there was, which then exits on its next renewal).
        let held = match &lease {
            Some(lease) if role == StoreRole::Writer => Some(
                server::lease::take(lease, self.me)
                    .await
                    .map_err(|e| format!("cannot take the writer lease at {location}: {e}"))?,
            ),
            _ => None,
        };
        let roles = Arc::new(server::Roles::new(match role {
            StoreRole::Replica => server::Role::Replica,
            StoreRole::Standby => server::Role::Standby { writer: None },
            StoreRole::Writer => server::Role::Writer,
        }));
        // What losing the lease does: a partition stands by again, the
        // process's other partitions untouched; one store's writer stops.
        let on_loss = match sharing {
            Some(_) => crate::writer_lease::OnLoss::StandBy {
                refresh: Duration::from_millis(args.refresh_ms),
            },
            None => crate::writer_lease::OnLoss::Stop,
        };
        // Renewed from now on, while the store opens too.
        let renewal = match (lease.clone(), held) {
            (Some(lease), Some(held)) => {
                tracing::info!(store = %location, term = held.holder.term, "holding the writer lease");
                Some(tokio::spawn(server::lease::keep(
                    lease,
                    held,
                    self.timing,
                    Arc::clone(&roles),
                )))
            }
            _ => None,
        };
        let mut options = store.options();
        if let Some(sharing) = sharing {
            options.shared_cache = Some(sharing.cache.clone());
            options.databases_open = Some(sharing.databases);
        }
        tracing::info!(store = %location, "opening the store");
        let opening = async {
            if role == StoreRole::Writer {
                store.open_with(&options).await
            } else {
                store
                    .open_reader_with(Duration::from_millis(args.refresh_ms), &options)
                    .await
            }
        };
        let kv = with_progress(opening, store.location()).await?;
        let cache_bytes = options.share(store::DEFAULT_SHARD_CACHE_BYTES, MIN_SHARD_CACHE_BYTES);
        let mut store_over_kv = Store::with_cache_bytes(kv.clone(), cache_bytes);
        if args.stream == "off" {
            store_over_kv = store_over_kv.without_stream_events();
        }
        let repos = Arc::new(Repos::new(
            Arc::new(store_over_kv),
            crate::storage::env().map_err(|e| e.message)?,
        ));
        let mut config = self.config.clone();
        config.read_only = role == StoreRole::Replica;
        config.roles = Some(Arc::clone(&roles));
        // Other processes' reads of a local store (CLI commands beside the
        // server) are answered from this process's memory rather than by
        // replaying its WAL; without the socket they still work, slower.
        let read_socket = match store.local_dir() {
            Some(dir) if role == StoreRole::Writer => store::ReadSocket::serve(kv.clone(), &dir)
                .inspect_err(
                    |e| tracing::warn!(error = %e, "reads by other processes will open the store"),
                )
                .ok(),
            _ => None,
        };
        let server = server::Server::new(repos, config);
        let gc = Arc::new(tokio::sync::Mutex::new(None));
        let writer_tasks = crate::writer_lease::WriterTasks {
            server: server.clone(),
            retention: args.firehose_retention,
            gc_interval_secs: args.gc_interval_secs,
            gc_keep_last: args.gc_keep_last,
            gc: Arc::clone(&gc),
        };
        let tenure = |lease: store::Lease| crate::writer_lease::Takeover {
            lease,
            me: self.me.clone(),
            timing: self.timing,
            kv: kv.clone(),
            location: location.clone(),
            options: options.clone(),
            fatal: self.fatal.clone(),
            gate: self.gate.clone(),
            on_loss,
        };
        match (role, lease, renewal) {
            (StoreRole::Standby, Some(lease), _) => {
                tokio::spawn(tenure(lease).run(writer_tasks));
            }
            (StoreRole::Standby, None, _) => return Err("a standby without a lease".to_owned()),
            (StoreRole::Writer, Some(lease), Some(renewal)) => {
                writer_tasks.start().await;
                let slot = self.gate.as_ref().map(server::lease::TakeGate::take_anyway);
                tokio::spawn(tenure(lease).run_from(Some((renewal, slot)), writer_tasks));
            }
            (StoreRole::Writer, _, _) => writer_tasks.start().await,
            (StoreRole::Replica, _, _) => {}
        }
        Ok(Served {
            kv,
            server,
            read_socket,
            gc,
        })
    }
}

/// The smallest shard cache a partition's store keeps.
const MIN_SHARD_CACHE_BYTES: usize = 4 << 20;

impl Served {
    /// Stops its collections and closes the store; `fenced` when the
    /// process lost a lease (the store is another process's now).
    async fn close(self, fenced: bool) -> Result<(), String> {
        if let Some(gc) = self.gc.lock().await.take() {
            gc.stop().await;
        }
        if fenced {
            let _ = tokio::time::timeout(CLOSE_TIMEOUT, self.kv.close()).await;
            return Ok(());
        }
        drop(self.read_socket);
        // The memtable goes to an L0 SST, so the next open (a CLI read, the
        // next server) replays no WAL. Every acknowledged write is already
        // durable, so a close that hangs (an object store gone, a data
        // directory removed) must not keep the process alive.
        match tokio::time::timeout(CLOSE_TIMEOUT, self.kv.close_flushed()).await {
            Ok(closed) => closed.map_err(|e| format!("closing the store: {e}")),
            Err(_) => Err(format!(
                "closing the store took over {} s; stopped without it (every acknowledged write was already durable)",
                CLOSE_TIMEOUT.as_secs()
            )),
        }
    }
}

/// The server's settings from the command line, shared by every partition.
fn config(
    args: &ServeArgs,
    store: &StoreArgs,
    bound: SocketAddr,
    max_connections: usize,
) -> Result<server::Config, String> {
    let signing_keys = args
        .signing_key_dir
        .clone()
        .map(|dir| crate::key_files::signing_key_dir(dir, args.signing_key_type.into()))
        .transpose()
        .map_err(|e| format!("--signing-key-dir {e}"))?;
    Ok(server::Config {
        sessions: sessions(args, store, bound)?,
        signing_keys,
        token: args.token.clone().filter(|t| !t.is_empty()),
        private_reads: args.private_reads,
        read_only: args.replica,
        roles: None,
        limits: server::Limits {
            max_body_bytes: args.max_body_bytes,
            max_record_bytes: args.max_record_bytes,
            max_blob_bytes: args.max_blob_bytes,
            blob_temp_ttl: Duration::from_secs(args.blob_temp_ttl_secs),
            max_writes: args.max_writes,
            request_timeout: Duration::from_secs(args.request_timeout_secs),
            max_inflight_body_bytes: args.max_inflight_body_bytes,
            max_subscribers: subscriber_limit(
                usize::try_from(args.max_subscribers).unwrap_or(usize::MAX),
                max_connections,
            ),
            max_subscribers_per_ip: usize::try_from(args.max_subscribers_per_ip)
                .unwrap_or(usize::MAX),
            firehose_buffer_bytes: usize::try_from(args.firehose_buffer_bytes)
                .unwrap_or(usize::MAX),
            max_concurrent_queries: usize::try_from(args.max_concurrent_queries)
                .unwrap_or(usize::MAX),
            query_timeout: Duration::from_secs(args.query_timeout_secs),
            job_answer_wait: Duration::from_secs(args.job_answer_wait_secs),
            ..server::Limits::default()
        },
    })
}

/// A socket bound to `addr`, not yet listening (connections are refused).
fn bind(addr: SocketAddr) -> std::io::Result<tokio::net::TcpSocket> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    Ok(socket)
}

/// Longest the store may take to open before the server gives up.
const OPEN_TIMEOUT: Duration = Duration::from_secs(120);

/// Awaits `opening`, logging every 10 s that it still runs, and gives up
/// after [`OPEN_TIMEOUT`].
async fn with_progress<T>(
    opening: impl Future<Output = Result<T, String>>,
    location: &str,
) -> Result<T, String> {
    let started = tokio::time::Instant::now();
    let mut opening = std::pin::pin!(opening);
    let mut ticks =
        tokio::time::interval_at(started + Duration::from_secs(10), Duration::from_secs(10));
    loop {
        tokio::select! {
            opened = &mut opening => return opened,
            _ = ticks.tick() => {
                let waited = started.elapsed();
                if waited >= OPEN_TIMEOUT {
                    return Err(format!(
                        "opening the store at {location} did not finish within {} s \
                         (is its storage reachable, writable and not full?)",
                        OPEN_TIMEOUT.as_secs()
                    ));
                }
                tracing::warn!(store = location, waited_secs = waited.as_secs(), "still opening the store");
            }
        }
    }
}

/// `--did-method`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum DidMethodArg {
    Web,
    Key,
}

/// How long a stopping server waits for the store to close.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(30);

/// The server's DID for `public_url`: `did:web:` and its host, a port
/// written `%3A` as the did:web method requires.
fn server_did(public_url: &str) -> Result<String, String> {
    let rest = public_url
        .split_once("://")
        .map_or(public_url, |(_, rest)| rest);
    let host = rest.split('/').next().unwrap_or_default();
    if host.is_empty() {
        return Err(format!("--public-url {public_url:?} names no host"));
    }
    Ok(format!("did:web:{}", host.replace(':', "%3A")))
}

/// Accounts and sessions: the token secret (made on first start), the
/// server's DID, a clock and randomness, and the operator's choices.
/// `None` for a replica, and for a store on S3 given no
/// `--jwt-secret-file`.
fn sessions(
    args: &ServeArgs,
    store: &StoreArgs,
    bound: SocketAddr,
) -> Result<Option<server::Sessions>, String> {
    if args.replica {
        return Ok(None);
    }
    let Some(file) = args
        .jwt_secret_file
        .clone()
        .or_else(|| store.local_dir().map(|d| d.join("jwt-secret")))
    else {
        tracing::info!("no --jwt-secret-file for a store on S3: accounts and sessions are off");
        return Ok(None);
    };
    let secret = crate::key_files::read_or_create_secret(&file)
        .map_err(|e| format!("--jwt-secret-file {}: {e}", file.display()))?;
    let public_url = args
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{bound}"));
    let tokens = accounts::tokens::Tokens::new(&secret, server_did(&public_url)?)
        .with_access_ttl(Duration::from_secs(args.access_token_ttl_secs));
    let signing_keys = account_key_dir(args.signing_key_dir.as_deref(), store)?;
    if signing_keys.is_none() {
        if matches!(args.did_method, DidMethodArg::Key) {
            return Err(
                "--did-method key needs --signing-key-dir for a store on S3 (the accounts' keys live there)"
                    .into(),
            );
        }
        tracing::warn!(
            "no --signing-key-dir for a store on S3: new accounts' repositories are unsigned"
        );
    }
    Ok(Some(server::Sessions {
        tokens,
        clock: Arc::new(unix_seconds),
        random: Arc::new(crate::key_files::os_random),
        policy: server::AccountPolicy {
            did_method: match args.did_method {
                DidMethodArg::Web => server::DidMethod::Web,
                DidMethodArg::Key => server::DidMethod::Key,
            },
            public_url: Some(public_url),
            signing_keys,
            open_registration: args.open_registration,
            handle_domains: args
                .handle_domains
                .iter()
                .map(|d| d.trim().trim_start_matches('.').to_ascii_lowercase())
                .filter(|d| !d.is_empty())
                .collect(),
        },
    }))
}

/// Where new accounts' signing keys (secp256k1) are kept: `--signing-key-dir`,
/// else `signing-keys` in a local store's directory (created 0700); `None`
/// for a store on S3 without the option.
pub(crate) fn account_key_dir(
    given: Option<&std::path::Path>,
    store: &StoreArgs,
) -> Result<Option<server::SigningKeyDir>, String> {
    let Some(dir) = given
        .map(std::path::Path::to_path_buf)
        .or_else(|| store.local_dir().map(|d| d.join("signing-keys")))
    else {
        return Ok(None);
    };
    crate::key_files::signing_key_dir(dir, repo::Curve::K256).map(Some)
}

/// Seconds since the Unix epoch: the binary is where the clock is read.
#[allow(clippy::disallowed_methods)]
fn unix_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
