//! A partitioned store's server: one [`Server`] per partition, each over
//! its own database, and in front of them the routes that choose which
//! one answers a request.
//!
//! A request goes to the partition of the repository it names
//! (`docs/server.md`, "Partitions"), looked for in this order: the `repo`
//! or `did` query parameter; the JSON body's `repo`, `did`, `identifier`
//! or `subject.did` (`createAccount`: its `did`, else `did:web:` and its
//! handle); the subject of the session token; the host of a
//! `/.well-known/did.json` request. A name that is not a DID (a handle) is
//! looked up among every partition's accounts. A request naming no
//! repository (describeServer, the web interface's files) goes to
//! partition 0. `listRepos` and `/xrpc/_health` span every partition.
//!
//! A `POST` for a partition another process writes (this one is its
//! standby) is forwarded to that process, the writer its lease names, with
//! the header [`FORWARDED_HEADER`]; a forwarded request is never forwarded
//! again (it is answered `503 NotWriter` where it lands, and the client
//! retries). Reads are answered here, from this process's replica of the
//! partition.

use std::sync::Arc;

use axum::{
    Json, Router,
    body::{Body, Bytes},
    extract::{Request, State},
    http::{Method, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde_json::{Value, json};
use store::{Kv, Partitions};
use tower::ServiceExt as _;

use crate::{Server, XrpcError, role::Role};

/// The servers of a partitioned store's partitions behind one router.
pub struct PartitionedServer<K> {
    front: Arc<Front<K>>,
}

impl<K> Clone for PartitionedServer<K> {
    fn clone(&self) -> Self {
        Self {
            front: Arc::clone(&self.front),
        }
    }
}

/// The header marking a request one partitioned server forwarded to
/// another (its value: the forwarding server's address).
pub const FORWARDED_HEADER: &str = "datarepo-forwarded";

type Client =
    hyper_util::client::legacy::Client<hyper_util::client::legacy::connect::HttpConnector, Body>;

struct Front<K> {
    partitions: Partitions,
    /// Forwards writes to the partitions' writers.
    client: Client,
    servers: Vec<Server<K>>,
    routers: Vec<Router>,
    /// Largest body read to find the repository it names.
    max_body_bytes: usize,
    /// Account creations without handle claims, one at a time: a handle is
    /// checked free in every partition before the account is made in its
    /// own.
    creating_accounts: tokio::sync::Mutex<()>,
    /// Handles claimed across processes (object storage, where several
    /// processes make accounts); `None`: this process is the only one.
    handle_claims: Option<store::HandleClaims>,
    /// How old a claim whose account does not exist must be before another
    /// DID may take its handle.
    stale_claim: std::time::Duration,
    /// The merged streams' newest entries, shared by their connections.
    merged: Arc<crate::merged_live::MergedLive>,
}

impl<K: Kv + 'static> PartitionedServer<K> {
    /// The server of a store split into `partitions`, `servers[p]` serving
    /// partition `p`; it sequences the merged firehose while this process
    /// writes partition 0. Must be called within a Tokio runtime.
    ///
    /// # Panics
    ///
    /// When there is not one server per partition.
    #[must_use]
    pub fn new(partitions: Partitions, servers: Vec<Server<K>>) -> Self {
        assert_eq!(
            servers.len(),
            usize::try_from(partitions.count()).unwrap_or(usize::MAX),
            "one server per partition"
        );
        crate::merged_log::spawn_sequencer(&servers);
        let max_body_bytes = servers
            .first()
            .map_or(0, |s| s.app.config.limits.max_body_bytes);
        let buffer_bytes = servers
            .first()
            .map_or(0, |s| s.app.config.limits.firehose_buffer_bytes);
        Self {
            front: Arc::new(Front {
                partitions,
                client: hyper_util::client::legacy::Client::builder(
                    hyper_util::rt::TokioExecutor::new(),
                )
                .build_http(),
                routers: servers.iter().map(Server::router).collect(),
                servers,
                max_body_bytes,
                creating_accounts: tokio::sync::Mutex::new(()),
                handle_claims: None,
                stale_claim: std::time::Duration::MAX,
                merged: Arc::new(crate::merged_live::MergedLive::new(buffer_bytes)),
            }),
        }
    }

    /// The same server, keeping each account's handle unique across the
    /// processes serving the store with `claims` (`docs/server.md`,
    /// "Partitions"). A claim whose account does not exist is taken over
    /// once older than `stale`, which must be far longer than any account
    /// creation takes (a creation paused that long has lost its
    /// partition's lease, and with it the write). Call before
    /// [`PartitionedServer::router`].
    ///
    /// # Panics
    ///
    /// When the server was cloned or routed already.
    #[must_use]
    pub fn with_handle_claims(
        mut self,
        claims: store::HandleClaims,
        stale: std::time::Duration,
    ) -> Self {
        let front = Arc::get_mut(&mut self.front)
            .expect("handle claims are set before the server is shared");
        front.handle_claims = Some(claims);
        front.stale_claim = stale;
        self
    }

    /// Each partition's server, by partition.
    #[must_use]
    pub fn servers(&self) -> &[Server<K>] {
        &self.front.servers
    }

    /// The HTTP routes: every request goes to its partition's server.
    pub fn router(&self) -> Router {
        Router::new()
            .fallback(dispatch::<K>)
            .with_state(Arc::clone(&self.front))
    }

    /// Closes every partition's stream connections
    /// ([`Server::close_streams`]).
    pub fn close_streams(&self) {
        for server in &self.front.servers {
            server.close_streams();
        }
    }
}

async fn dispatch<K: Kv + 'static>(
    State(front): State<Arc<Front<K>>>,
    request: Request,
) -> Response {
    match request.uri().path() {
        "/xrpc/com.atproto.sync.listRepos" => list_repos(&front, request).await,
        "/xrpc/_health" => health(&front, request).await,
        "/xrpc/com.atproto.sync.subscribeRepos"
            if query_param(&request, &["partition"]).is_none() =>
        {
            let (parts, _) = request.into_parts();
            crate::merged_firehose::subscribe(
                front.servers.clone(),
                Arc::clone(&front.merged),
                parts,
            )
            .await
            .unwrap_or_else(IntoResponse::into_response)
        }
        "/subscribe" if query_param(&request, &["partition"]).is_none() => {
            let (parts, _) = request.into_parts();
            crate::merged_jetstream::subscribe(
                front.servers.clone(),
                Arc::clone(&front.merged),
                parts,
            )
            .await
            .unwrap_or_else(IntoResponse::into_response)
        }
        "/xrpc/com.atproto.sync.subscribeRepos" | "/subscribe" => {
            match stream_partition(&front, &request) {
                Ok(p) => front.forward(p, request).await,
                Err(e) => e.into_response(),
            }
        }
        "/xrpc/com.atproto.server.createInviteCode"
        | "/xrpc/com.atproto.server.createInviteCodes" => XrpcError::new(
            StatusCode::NOT_IMPLEMENTED,
            "MethodNotImplemented",
            "invite codes are not kept by a partitioned store yet: create accounts with the \
             admin token, or serve with --open-registration",
        )
        .into_response(),
        "/xrpc/com.atproto.server.createAccount" => create_account(&front, request).await,
        "/xrpc/dev.datarepo.getJob" => get_job(&front, request).await,
        "/xrpc/dev.datarepo.listJobs" if query_param(&request, &["repo"]).is_none() => {
            list_jobs(&front, request).await
        }
        "/metrics" => metrics(&front, request).await,
        _ => match front.route(request).await {
            Ok((p, request)) => front.forward(p, request).await,
            Err(e) => e.into_response(),
        },
    }
}

impl<K: Kv + 'static> Front<K> {
    async fn forward(&self, partition: u32, request: Request) -> Response {
        let index = usize::try_from(partition).unwrap_or(0);
        if request.method() == Method::POST
            && !request.headers().contains_key(FORWARDED_HEADER)
            && let Role::Standby {
                writer: Some(writer),
            } = self.servers[index].roles().role()
        {
            return self.forward_to(&writer, request).await;
        }
        let router = self.routers[index].clone();
        match router.oneshot(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        }
    }

    /// `request` sent to the server at `writer` (a base URL), and its
    /// answer streamed back.
    async fn forward_to(&self, writer: &str, request: Request) -> Response {
        let (mut parts, body) = request.into_parts();
        let path = parts
            .uri
            .path_and_query()
            .map_or("/", axum::http::uri::PathAndQuery::as_str);
        let uri = match format!("{writer}{path}").parse::<axum::http::Uri>() {
            Ok(uri) => uri,
            Err(e) => {
                return XrpcError::internal(format!(
                    "the writer's address {writer:?} in its lease is not a URL: {e}"
                ))
                .into_response();
            }
        };
        parts.headers.remove(header::HOST);
        parts.headers.insert(
            axum::http::HeaderName::from_static(FORWARDED_HEADER),
            axum::http::HeaderValue::from_static("1"),
        );
        parts.uri = uri;
        match self.client.request(Request::from_parts(parts, body)).await {
            Ok(response) => response.map(Body::new),
            Err(e) => XrpcError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "NotWriter",
                format!("the partition's writer at {writer} did not answer: {e}; retry shortly"),
            )
            .with_header(header::RETRY_AFTER, "1".to_owned())
            .into_response(),
        }
    }

    /// The partition `request` names, and the request to forward to it
    /// (its body read back in).
    async fn route(&self, request: Request) -> Result<(u32, Request), XrpcError> {
        if let Some(id) = query_param(&request, &["repo", "did"]) {
            return Ok((self.partition_of_name(&id).await?, request));
        }
        if request.uri().path() == "/.well-known/did.json"
            && let Some(host) = request
                .headers()
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
        {
            let did = format!("did:web:{}", host.replace(':', "%3A"));
            return Ok((self.partitions.of(&did), request));
        }
        let (request, body) = self.json_body(request).await?;
        if let Some(id) = body.as_ref().and_then(named_in_body) {
            return Ok((self.partition_of_name(&id).await?, request));
        }
        if let Some(did) = bearer_subject(&request) {
            return Ok((self.partitions.of(&did), request));
        }
        Ok((0, request))
    }

    /// The partition of the repository `name`: a DID's by its hash; a
    /// handle's where an account has it (by the hash of the name itself
    /// when none has).
    async fn partition_of_name(&self, name: &str) -> Result<u32, XrpcError> {
        if !name.starts_with("did:")
            && let Some(did) = self.account_did(name).await?
        {
            return Ok(self.partitions.of(&did));
        }
        Ok(self.partitions.of(name))
    }

    /// The DID of the account with handle (or DID) `identifier`, in
    /// whichever partition holds it.
    async fn account_did(&self, identifier: &str) -> Result<Option<String>, XrpcError> {
        for server in &self.servers {
            if let Some(did) = server.account_did(identifier).await? {
                return Ok(Some(did));
            }
        }
        Ok(None)
    }

    /// A JSON body, read (up to the largest body a request may have) and
    /// parsed, with the request to forward carrying the same bytes. Other
    /// bodies (an upload's bytes) are left unread.
    async fn json_body(&self, request: Request) -> Result<(Request, Option<Value>), XrpcError> {
        let json = request.method() == Method::POST
            && request
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.starts_with("application/json"));
        if !json {
            return Ok((request, None));
        }
        let (parts, body) = request.into_parts();
        let bytes: Bytes = axum::body::to_bytes(body, self.max_body_bytes)
            .await
            .map_err(|e| XrpcError::too_large(format!("the request body is too large: {e}")))?;
        let value = serde_json::from_slice(&bytes).ok();
        Ok((Request::from_parts(parts, Body::from(bytes)), value))
    }
}

/// The repository a JSON body names.
fn named_in_body(body: &Value) -> Option<String> {
    ["repo", "did", "identifier"]
        .iter()
        .find_map(|field| body.get(field).and_then(Value::as_str))
        .or_else(|| body.pointer("/subject/did").and_then(Value::as_str))
        .map(str::to_owned)
}

fn query_param(request: &Request, names: &[&str]) -> Option<String> {
    let query = request.uri().query()?;
    form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| names.contains(&k.as_ref()))
        .map(|(_, v)| v.into_owned())
}

fn bearer_subject(request: &Request) -> Option<String> {
    let value = request
        .headers()
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let token = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))?;
    accounts::tokens::unverified_subject(token)
}

/// A stream's partition: its `partition` parameter (without one, a
/// stream is the merged stream of every partition).
fn stream_partition<K>(front: &Front<K>, request: &Request) -> Result<u32, XrpcError> {
    let count = front.partitions.count();
    let asked = query_param(request, &["partition"]).unwrap_or_default();
    match asked.parse::<u32>() {
        Ok(p) if p < count => Ok(p),
        _ => Err(XrpcError::invalid(format!(
            "partition {asked:?} is not one of 0 … {}",
            count - 1
        ))),
    }
}

/// `createAccount`: in the partition of the DID it will have, once its
/// handle is known to be free in every other partition.
async fn create_account<K: Kv + 'static>(front: &Front<K>, request: Request) -> Response {
    let (request, body) = match front.json_body(request).await {
        Ok(read) => read,
        Err(e) => return e.into_response(),
    };
    let body = body.unwrap_or(Value::Null);
    let handle = body
        .get("handle")
        .and_then(Value::as_str)
        .and_then(|h| accounts::account::normalize_handle(h).ok());
    let did = match (body.get("did").and_then(Value::as_str), &handle) {
        (Some(did), _) => did.to_owned(),
        (None, Some(handle)) if front.servers[0].makes_web_dids() => format!("did:web:{handle}"),
        (None, Some(_)) => {
            return XrpcError::new(
                StatusCode::NOT_IMPLEMENTED,
                "MethodNotImplemented",
                "a partitioned store makes did:web accounts only (serve --did-method web), \
                 or accounts with a DID the admin gives",
            )
            .into_response();
        }
        // No handle: the partition's server says what is wrong.
        (None, None) => return front.forward(0, request).await,
    };
    // Within one process (no claims), creations go one at a time. With
    // claims the object store decides, and holding a lock while forwarding
    // could wait on a process forwarding to this one.
    let _one_at_a_time = match front.handle_claims {
        None => Some(front.creating_accounts.lock().await),
        Some(_) => None,
    };
    let Some(handle) = handle else {
        return front.forward(front.partitions.of(&did), request).await;
    };
    let forwarded = request.headers().contains_key(FORWARDED_HEADER);
    let claimed = match front.claim_handle(&handle, &did, forwarded).await {
        Ok(claimed) => claimed,
        Err(e) => return e.into_response(),
    };
    let free = match front.account_did(&handle).await {
        Ok(None) => Ok(()),
        Ok(Some(_)) => Err(handle_taken(&handle)),
        Err(e) => Err(e),
    };
    let response = match free {
        Ok(()) => front.forward(front.partitions.of(&did), request).await,
        Err(e) => e.into_response(),
    };
    if claimed
        && !response.status().is_success()
        && let Some(claims) = &front.handle_claims
        && let Err(e) = claims.release(&handle, &did).await
    {
        tracing::warn!(%handle, %did, "a failed account creation could not give its handle claim back: {e}");
    }
    response
}

fn handle_taken(handle: &str) -> XrpcError {
    XrpcError::new(
        StatusCode::BAD_REQUEST,
        "HandleNotAvailable",
        format!("handle {handle} is already taken"),
    )
}

impl<K: Kv + 'static> Front<K> {
    /// Makes sure `handle` is claimed for `did` before its account is made
    /// (without claims, one process: nothing to do): `true` when this
    /// request made or took the claim (and gives it back if the creation
    /// fails). A request another process forwarded was claimed there: the
    /// claim must still name `did`. A claim naming another DID is taken
    /// over only when it is older than the stale age and no
    /// account has the handle (its creation failed without giving it back,
    /// or its account went).
    async fn claim_handle(
        &self,
        handle: &str,
        did: &str,
        forwarded: bool,
    ) -> Result<bool, XrpcError> {
        let Some(claims) = &self.handle_claims else {
            return Ok(false);
        };
        let unavailable = |e: store::Error| {
            XrpcError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "ServiceUnavailable",
                format!("the handle claims could not be read or written: {e}; retry"),
            )
            .with_header(header::RETRY_AFTER, "1".to_owned())
        };
        if forwarded {
            return match claims.read(handle).await.map_err(unavailable)? {
                Some(held) if held.did == did => Ok(false),
                _ => Err(handle_taken(handle)),
            };
        }
        let held = match claims.claim(handle, did).await.map_err(unavailable)? {
            store::Claim::Made => return Ok(true),
            store::Claim::Held(held) if held.did == did => return Ok(false),
            store::Claim::Held(held) => held,
        };
        if held.age < self.stale_claim || self.account_did(handle).await?.is_some() {
            return Err(handle_taken(handle));
        }
        tracing::info!(%handle, old = %held.did, %did, "taking over a stale handle claim");
        match claims
            .take_over(handle, &held, did)
            .await
            .map_err(unavailable)?
        {
            true => Ok(true),
            false => Err(handle_taken(handle)),
        }
    }
}

/// `listRepos` over every partition: each partition's page from the same
/// cursor, merged in DID order; the cursor is the last DID, as one store's.
async fn list_repos<K: Kv + 'static>(front: &Front<K>, request: Request) -> Response {
    let limit = query_param(&request, &["limit"])
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(500);
    let (parts, _) = request.into_parts();
    let mut repos: Vec<Value> = Vec::new();
    let mut more = false;
    for p in front.partitions.all() {
        let asked = Request::from_parts(parts.clone(), Body::empty());
        let response = front.forward(p, asked).await;
        if !response.status().is_success() {
            return response;
        }
        let bytes = match axum::body::to_bytes(response.into_body(), usize::MAX).await {
            Ok(bytes) => bytes,
            Err(e) => return XrpcError::internal(e.to_string()).into_response(),
        };
        let page: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        more |= page.get("cursor").is_some();
        if let Some(list) = page.get("repos").and_then(Value::as_array) {
            repos.extend(list.iter().cloned());
        }
    }
    repos.sort_by(|a, b| a["did"].as_str().cmp(&b["did"].as_str()));
    more |= repos.len() > limit;
    repos.truncate(limit);
    let mut out = json!({ "repos": repos });
    if more && let Some(last) = repos.last() {
        out["cursor"] = last["did"].clone();
    }
    Json(out).into_response()
}

/// Each partition's answer to a bodiless request like `request`, in
/// partition order.
async fn ask_every_partition<K: Kv + 'static>(front: &Front<K>, request: Request) -> Vec<Response> {
    let (parts, _) = request.into_parts();
    let mut answers = Vec::with_capacity(front.servers.len());
    for p in front.partitions.all() {
        let asked = Request::from_parts(parts.clone(), Body::empty());
        answers.push(front.forward(p, asked).await);
    }
    answers
}

async fn body_of(response: Response) -> Result<Bytes, XrpcError> {
    axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .map_err(|e| XrpcError::internal(e.to_string()))
}

/// `getJob`: jobs run in their repository's partition's server, which
/// alone knows them; the first partition that does answers.
async fn get_job<K: Kv + 'static>(front: &Front<K>, request: Request) -> Response {
    let mut answers = ask_every_partition(front, request).await;
    match answers
        .iter()
        .position(|a| a.status() != StatusCode::BAD_REQUEST)
    {
        Some(found) => answers.swap_remove(found),
        None => answers.swap_remove(0),
    }
}

/// `listJobs` of every repository: every partition's jobs.
async fn list_jobs<K: Kv + 'static>(front: &Front<K>, request: Request) -> Response {
    let mut jobs = Vec::new();
    for answer in ask_every_partition(front, request).await {
        if !answer.status().is_success() {
            return answer;
        }
        let listed: Value = match body_of(answer).await {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            Err(e) => return e.into_response(),
        };
        if let Some(list) = listed.get("jobs").and_then(Value::as_array) {
            jobs.extend(list.iter().cloned());
        }
    }
    Json(json!({ "jobs": jobs })).into_response()
}

/// `/metrics`: every partition's, each sample labelled with its
/// `partition`, each metric family once (OpenMetrics text).
async fn metrics<K: Kv + 'static>(front: &Front<K>, request: Request) -> Response {
    let mut texts = Vec::with_capacity(front.servers.len());
    let mut content_type = None;
    for answer in ask_every_partition(front, request).await {
        if !answer.status().is_success() {
            return answer;
        }
        content_type = content_type.or_else(|| answer.headers().get(header::CONTENT_TYPE).cloned());
        match body_of(answer).await {
            Ok(bytes) => texts.push(String::from_utf8_lossy(&bytes).into_owned()),
            Err(e) => return e.into_response(),
        }
    }
    let mut response = merge_metrics(&texts).into_response();
    if let Some(content_type) = content_type {
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, content_type);
    }
    response
}

/// OpenMetrics texts of the same families, one per partition, as one: a
/// family's comment lines once, then its samples from every partition with
/// a `partition` label.
fn merge_metrics(texts: &[String]) -> String {
    // (comment lines, samples) per family, in first-seen order.
    let mut families: Vec<(String, Vec<String>, Vec<String>)> = Vec::new();
    for (p, text) in texts.iter().enumerate() {
        let mut current: Option<usize> = None;
        for line in text.lines() {
            if line == "# EOF" || line.is_empty() {
                continue;
            }
            if let Some(comment) = line.strip_prefix("# ") {
                let name = comment.split_whitespace().nth(1).unwrap_or_default();
                let at = match families.iter().position(|(n, _, _)| n == name) {
                    Some(at) => at,
                    None => {
                        families.push((name.to_owned(), Vec::new(), Vec::new()));
                        families.len() - 1
                    }
                };
                if p == 0 {
                    families[at].1.push(line.to_owned());
                }
                current = Some(at);
                continue;
            }
            let labelled = match line.find(['{', ' ']) {
                Some(i) if line[i..].starts_with("{}") => {
                    format!("{}{{partition=\"{p}\"}}{}", &line[..i], &line[i + 2..])
                }
                Some(i) if line[i..].starts_with('{') => {
                    format!("{}{{partition=\"{p}\",{}", &line[..i], &line[i + 1..])
                }
                Some(i) => format!("{}{{partition=\"{p}\"}}{}", &line[..i], &line[i..]),
                None => line.to_owned(),
            };
            match current {
                Some(at) => families[at].2.push(labelled),
                None => families.push((String::new(), Vec::new(), vec![labelled])),
            }
        }
    }
    let mut out = String::new();
    for (_, comments, samples) in families {
        for line in comments.iter().chain(&samples) {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.push_str("# EOF\n");
    out
}

/// `/xrpc/_health`: each partition's role; with `writer=true`, 503 unless
/// this process takes the writes of at least one partition.
async fn health<K: Kv + 'static>(front: &Front<K>, request: Request) -> Response {
    let writer_wanted = query_param(&request, &["writer"]).is_some_and(|v| v == "true");
    let mut partitions = Vec::with_capacity(front.servers.len());
    let mut writes = false;
    for (p, server) in front.servers.iter().enumerate() {
        let role = server.roles().role();
        writes |= server.roles().may_acknowledge();
        let mut entry = json!({ "partition": p, "role": role.name() });
        if let Role::Standby {
            writer: Some(address),
        } = &role
        {
            entry["writer"] = json!(address);
        }
        partitions.push(entry);
    }
    let body = json!({
        "version": env!("CARGO_PKG_VERSION"),
        "role": "partitioned",
        "partitions": partitions,
    });
    let status = if writer_wanted && !writes {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    };
    (status, Json(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::merge_metrics;

    #[test]
    fn metrics_of_partitions_merge_by_family_with_a_label() {
        let one = "# HELP requests Requests.\n# TYPE requests counter\nrequests_total{method=\"a\"} 1\n# TYPE up gauge\nup 1\n# EOF\n";
        let two = "# HELP requests Requests.\n# TYPE requests counter\nrequests_total{method=\"a\"} 5\n# TYPE up gauge\nup 1\n# EOF\n";
        assert_eq!(
            merge_metrics(&[one.to_owned(), two.to_owned()]),
            "# HELP requests Requests.\n# TYPE requests counter\n\
             requests_total{partition=\"0\",method=\"a\"} 1\n\
             requests_total{partition=\"1\",method=\"a\"} 5\n\
             # TYPE up gauge\nup{partition=\"0\"} 1\nup{partition=\"1\"} 1\n# EOF\n"
        );
    }
}
