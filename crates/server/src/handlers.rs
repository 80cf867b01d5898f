//! The XRPC endpoints.

use std::sync::Arc;

use axum::{
    Json,
    body::{Body, Bytes},
    extract::{Query, State, rejection::BytesRejection, rejection::QueryRejection},
    http::{HeaderMap, StatusCode, header},
    response::{IntoResponse, Response},
};
use cid::Cid;
use repo::{CommitResult, Repository, Validation, Write, record_uri};
use serde::{Deserialize, de::DeserializeOwned};
use serde_json::{Value, json};
use store::Kv;
use subtle::ConstantTimeEq;

use crate::{App, content_type, error::XrpcError, jobs};

type Result<T> = std::result::Result<T, XrpcError>;

const CAR: &str = "application/vnd.ipld.car";

fn bearer(headers: &HeaderMap) -> Option<&[u8]> {
    let value = headers.get(header::AUTHORIZATION)?.as_bytes();
    value
        .strip_prefix(b"Bearer ")
        .or_else(|| value.strip_prefix(b"bearer "))
}

impl<K: Kv + 'static> App<K> {
    fn check_token(&self, headers: &HeaderMap, what: &str) -> Result<()> {
        let Some(token) = &self.config.token else {
            return Err(XrpcError::auth(format!(
                "this server accepts no {what}: it was started without a write token"
            )));
        };
        match bearer(headers) {
            None => Err(XrpcError::auth(
                "this request needs an Authorization: Bearer <token> header",
            )),
            Some(given) if bool::from(given.ct_eq(token.as_bytes())) => Ok(()),
            Some(_) => Err(XrpcError::auth("the bearer token is not valid")),
        }
    }

    pub(crate) fn authorize_write(&self, headers: &HeaderMap) -> Result<()> {
        if self.config.read_only {
            return Err(XrpcError::invalid(
                "this server is a read-only replica; send writes to the writer",
            ));
        }
        self.check_token(headers, "writes")
    }

    pub(crate) fn authorize_read(&self, headers: &HeaderMap) -> Result<()> {
        if self.config.private_reads {
            self.check_token(headers, "reads")?;
        }
        Ok(())
    }

    pub(crate) async fn repo(&self, id: &str) -> Result<Arc<Repository<K>>> {
        Ok(self.repos.open(id).await?)
    }

    /// The repository, created on the first authorized write to it (with a
    /// key of its own in the signing-key directory, when there is one).
    async fn repo_for_write(&self, id: &str) -> Result<Arc<Repository<K>>> {
        match self.repos.open(id).await {
            Err(repo::Error::RepoNotFound(_)) => match self.create(id).await {
                Err(repo::Error::RepoExists(_)) => Ok(self.repos.open(id).await?),
                other => {
                    if other.is_ok() {
                        tracing::info!(repo = id, "created repository on first write");
                    }
                    Ok(other?)
                }
            },
            other => Ok(other?),
        }
    }

    async fn create(&self, id: &str) -> std::result::Result<Arc<Repository<K>>, repo::Error> {
        let Some(dir) = &self.config.signing_keys else {
            return self.repos.create(id).await;
        };
        let (key, file) = dir.key_for(id).map_err(|e| repo::Error::SigningKey {
            repo: id.to_owned(),
            key: "a key of its own".to_owned(),
            reason: e.to_string(),
        })?;
        self.repos.create_signed(id, key, file).await
    }

    /// Applies writes in a task of its own, so that a client that goes
    /// away (or a request timeout) cannot cancel a commit half-way.
    async fn commit(
        &self,
        repo: Arc<Repository<K>>,
        writes: Vec<Write>,
        swap_commit: Option<Cid>,
        validation: Validation,
    ) -> Result<CommitResult> {
        self.try_commit(repo, writes, swap_commit, validation)
            .await
            .map_err(XrpcError::from)
    }

    /// [`App::commit`], keeping the repository's error for callers that
    /// map some errors their own way.
    async fn try_commit(
        &self,
        repo: Arc<Repository<K>>,
        writes: Vec<Write>,
        swap_commit: Option<Cid>,
        validation: Validation,
    ) -> std::result::Result<CommitResult, repo::Error> {
        let n = writes.len() as u64;
        // Counted in the task, so a commit whose client went away counts too
        // (collections while serving skip when no commit landed).
        let (commits, records) = (
            self.metrics.commits.clone(),
            self.metrics.records_written.clone(),
        );
        let firehose = self.firehose.notifier();
        let task = tokio::spawn(async move {
            let result = repo
                .apply_writes_validated(writes, swap_commit, validation)
                .await;
            if let Ok(r) = &result {
                if r.first_in_commit {
                    commits.inc();
                }
                records.inc_by(n);
                firehose.notify_one();
            }
            result
        });
        task.await.map_err(|e| {
            repo::Error::Io(std::io::Error::other(format!("write task failed: {e}")))
        })?
    }
}

/// The request body's length and its JSON parsed as `T`.
fn body<T: DeserializeOwned>(
    body: std::result::Result<Bytes, BytesRejection>,
) -> Result<(T, usize)> {
    let bytes = body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            XrpcError::too_large(format!("the request body is too large: {}", e.body_text()))
        } else {
            XrpcError::invalid(e.body_text())
        }
    })?;
    serde_json::from_slice(&bytes)
        .map(|t| (t, bytes.len()))
        .map_err(|e| XrpcError::invalid(format!("the request body is not valid input: {e}")))
}

pub(crate) fn query<T>(q: std::result::Result<Query<T>, QueryRejection>) -> Result<T> {
    q.map(|Query(t)| t)
        .map_err(|e| XrpcError::invalid(e.body_text()))
}

pub(crate) fn parse_cid(s: &str, field: &str) -> Result<Cid> {
    Cid::try_from(s).map_err(|e| XrpcError::invalid(format!("{field}: {s:?} is not a CID ({e})")))
}

fn opt_cid(s: Option<&str>, field: &str) -> Result<Option<Cid>> {
    s.map(|s| parse_cid(s, field)).transpose()
}

/// Records are limited by the length of their JSON text (which bounds
/// their dag-cbor size from above). A body within the limit holds no record
/// over it (serializing parsed JSON never lengthens it), so only larger
/// bodies pay for measuring.
fn check_record_size(app_max: usize, body_len: usize, value: &Value) -> Result<()> {
    if body_len <= app_max {
        return Ok(());
    }
    let len = serde_json::to_vec(value).map(|v| v.len()).unwrap_or(0);
    if len > app_max {
        return Err(XrpcError::too_large(format!(
            "the record is {len} bytes of JSON; at most {app_max} are allowed"
        )));
    }
    Ok(())
}

/// createRecord's and putRecord's output for a commit of one write.
fn record_write_output(repo: &str, c: &CommitResult) -> Value {
    let r = &c.results[0];
    json!({
        "uri": record_uri(repo, &r.collection, &r.rkey),
        "cid": r.cid.map(|c| c.to_string()),
        "commit": commit_json(c),
        "validationStatus": status(r),
    })
}

/// A written record's `validationStatus`.
fn status(r: &repo::WriteResult) -> &'static str {
    r.validation
        .map_or("unknown", repo::ValidationStatus::as_str)
}

fn commit_json(c: &CommitResult) -> Value {
    json!({ "cid": c.commit.to_string(), "rev": c.rev.to_string() })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreateRecordInput {
    repo: String,
    collection: String,
    rkey: Option<String>,
    #[serde(default)]
    validate: Option<bool>,
    record: Value,
    swap_commit: Option<String>,
}

pub(crate) async fn create_record<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    raw: std::result::Result<Bytes, BytesRejection>,
) -> Result<Json<Value>> {
    app.authorize_write(&headers)?;
    let (input, len): (CreateRecordInput, _) = body(raw)?;
    check_record_size(app.config.limits.max_record_bytes, len, &input.record)?;
    let swap = opt_cid(input.swap_commit.as_deref(), "swapCommit")?;
    let repo = app.repo_for_write(&input.repo).await?;
    let write = Write::Create {
        collection: input.collection,
        rkey: input.rkey,
        value: input.record,
    };
    let validation = Validation::from_param(input.validate);
    let c = app
        .commit(Arc::clone(&repo), vec![write], swap, validation)
        .await?;
    Ok(Json(record_write_output(repo.id(), &c)))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PutRecordInput {
    repo: String,
    collection: String,
    rkey: String,
    #[serde(default)]
    validate: Option<bool>,
    record: Value,
    /// `Some(None)`: the record must not exist (an explicit null).
    #[serde(default, deserialize_with = "nullable")]
    swap_record: Option<Option<String>>,
    swap_commit: Option<String>,
}

fn nullable<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

pub(crate) async fn put_record<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    raw: std::result::Result<Bytes, BytesRejection>,
) -> Result<Json<Value>> {
    app.authorize_write(&headers)?;
    let (input, len): (PutRecordInput, _) = body(raw)?;
    check_record_size(app.config.limits.max_record_bytes, len, &input.record)?;
    let swap_commit = opt_cid(input.swap_commit.as_deref(), "swapCommit")?;
    let repo = app.repo_for_write(&input.repo).await?;
    let validation = Validation::from_param(input.validate);
    let write = match input.swap_record {
        // Null: only if absent, which is a create with this rkey.
        Some(None) => Write::Create {
            collection: input.collection,
            rkey: Some(input.rkey),
            value: input.record,
        },
        Some(Some(cid)) => Write::Update {
            collection: input.collection,
            rkey: input.rkey,
            value: input.record,
            swap_record: Some(parse_cid(&cid, "swapRecord")?),
        },
        None => Write::Update {
            collection: input.collection,
            rkey: input.rkey,
            value: input.record,
            swap_record: None,
        },
    };
    let c = app
        .try_commit(Arc::clone(&repo), vec![write], swap_commit, validation)
        .await
        .map_err(|e| match e {
            // `swapRecord: null` asked for an absent record.
            repo::Error::RecordExists(_) => {
                XrpcError::new(StatusCode::BAD_REQUEST, "InvalidSwap", e.to_string())
            }
            e => XrpcError::from(e),
        })?;
    Ok(Json(record_write_output(repo.id(), &c)))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DeleteRecordInput {
    repo: String,
    collection: String,
    rkey: String,
    swap_record: Option<String>,
    swap_commit: Option<String>,
}

pub(crate) async fn delete_record<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    raw: std::result::Result<Bytes, BytesRejection>,
) -> Result<Json<Value>> {
    app.authorize_write(&headers)?;
    let (input, _): (DeleteRecordInput, _) = body(raw)?;
    let swap_record = opt_cid(input.swap_record.as_deref(), "swapRecord")?;
    let swap_commit = opt_cid(input.swap_commit.as_deref(), "swapCommit")?;
    let repo = app.repo(&input.repo).await?;
    // A key the collection's type rules out is refused, as in a commit,
    // before an absent record makes the delete a no-op.
    repo.check_record_key(&input.collection, &input.rkey)
        .await?;
    // Deleting an absent record is not an error in AT Protocol: no commit.
    if swap_record.is_none()
        && repo
            .get_record(&input.collection, &input.rkey)
            .await?
            .is_none()
    {
        return Ok(Json(json!({})));
    }
    let write = Write::Delete {
        collection: input.collection,
        rkey: input.rkey,
        swap_record,
    };
    // The commit decides whether the record is there: a delete that lost a
    // race to another gets the same answer as one that came after it.
    match app
        .try_commit(repo, vec![write], swap_commit, Validation::Skip)
        .await
    {
        Ok(c) => Ok(Json(json!({ "commit": commit_json(&c) }))),
        Err(repo::Error::RecordNotFound(_)) if swap_record.is_none() => Ok(Json(json!({}))),
        Err(e) => Err(e.into()),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ApplyWritesInput {
    repo: String,
    #[serde(default)]
    validate: Option<bool>,
    writes: Vec<Value>,
    swap_commit: Option<String>,
}

fn parse_write(i: usize, w: Value, max_record: usize, body_len: usize) -> Result<Write> {
    let write =
        Write::from_apply_writes(w).map_err(|e| XrpcError::invalid(format!("writes[{i}]: {e}")))?;
    if let Some(value) = write.value() {
        check_record_size(max_record, body_len, value)?;
    }
    Ok(write)
}

pub(crate) async fn apply_writes<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    raw: std::result::Result<Bytes, BytesRejection>,
) -> Result<Json<Value>> {
    app.authorize_write(&headers)?;
    let (input, len): (ApplyWritesInput, _) = body(raw)?;
    let max = app.config.limits.max_writes;
    if input.writes.len() > max {
        return Err(XrpcError::too_large(format!(
            "{} writes in one applyWrites; at most {max} are allowed",
            input.writes.len()
        )));
    }
    let limit = app.config.limits.max_record_bytes;
    let writes = input
        .writes
        .into_iter()
        .enumerate()
        .map(|(i, w)| parse_write(i, w, limit, len))
        .collect::<Result<Vec<_>>>()?;
    let kinds: Vec<bool> = writes
        .iter()
        .map(|w| matches!(w, Write::Create { .. }))
        .collect();
    let swap = opt_cid(input.swap_commit.as_deref(), "swapCommit")?;
    // Nothing to write: no commit (the reference PDS makes an empty one; a
    // commit that changes nothing would only lengthen the history).
    if writes.is_empty() {
        let repo = app.repo(&input.repo).await?;
        let head = repo.head().await?;
        if let Some(expected) = swap
            && expected != head.commit
        {
            return Err(XrpcError::new(
                StatusCode::BAD_REQUEST,
                "InvalidSwap",
                format!(
                    "the head commit is {}, not {expected} (swapCommit)",
                    head.commit
                ),
            ));
        }
        return Ok(Json(json!({ "results": [] })));
    }
    let repo = app.repo_for_write(&input.repo).await?;
    let validation = Validation::from_param(input.validate);
    let c = app
        .commit(Arc::clone(&repo), writes, swap, validation)
        .await?;
    let results: Vec<Value> = c
        .results
        .iter()
        .zip(kinds)
        .map(|(r, create)| r.apply_writes_json(repo.id(), create))
        .collect();
    Ok(Json(
        json!({ "commit": commit_json(&c), "results": results }),
    ))
}

#[derive(Deserialize)]
pub(crate) struct GetRecordParams {
    repo: String,
    collection: String,
    rkey: String,
    cid: Option<String>,
}

pub(crate) async fn get_record<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<GetRecordParams>, QueryRejection>,
) -> Result<Json<Value>> {
    app.authorize_read(&headers)?;
    let p = query(params)?;
    let want = opt_cid(p.cid.as_deref(), "cid")?;
    let repo = app.repo(&p.repo).await?;
    let uri = record_uri(repo.id(), &p.collection, &p.rkey);
    let record = repo
        .get_record(&p.collection, &p.rkey)
        .await?
        .filter(|r| want.is_none_or(|c| c == r.cid()))
        .ok_or_else(|| {
            XrpcError::new(
                StatusCode::BAD_REQUEST,
                "RecordNotFound",
                format!("record not found: {uri}"),
            )
        })?;
    Ok(Json(json!({
        "uri": uri,
        "cid": record.cid().to_string(),
        "value": record.to_json(),
    })))
}

#[derive(Deserialize)]
pub(crate) struct ListRecordsParams {
    repo: String,
    collection: String,
    limit: Option<i64>,
    cursor: Option<String>,
    reverse: Option<bool>,
}

pub(crate) async fn list_records<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<ListRecordsParams>, QueryRejection>,
) -> Result<Json<Value>> {
    app.authorize_read(&headers)?;
    let p = query(params)?;
    let max = app.config.limits.max_page;
    let limit = match p.limit {
        None => 50.min(max),
        Some(n) if n >= 1 && usize::try_from(n).is_ok_and(|n| n <= max) => {
            usize::try_from(n).unwrap_or(max)
        }
        Some(n) => {
            return Err(XrpcError::invalid(format!(
                "limit {n} is out of range (1 to {max})"
            )));
        }
    };
    rkey::validate_nsid(&p.collection).map_err(|e| XrpcError::invalid(e.to_string()))?;
    let repo = app.repo(&p.repo).await?;
    let reverse = p.reverse.unwrap_or(false);
    let mut page = repo
        .list_records(&p.collection, p.cursor.as_deref(), reverse, limit + 1)
        .await?;
    let more = page.len() > limit;
    page.truncate(limit);
    let records: Vec<Value> = page
        .iter()
        .map(|(rkey, r)| {
            json!({
                "uri": record_uri(repo.id(), &p.collection, rkey),
                "cid": r.cid().to_string(),
                "value": r.to_json(),
            })
        })
        .collect();
    let mut out = json!({ "records": records });
    if more && let Some((last, _)) = page.last() {
        out["cursor"] = json!(last);
    }
    Ok(Json(out))
}

#[derive(Deserialize)]
pub(crate) struct RepoParams {
    repo: String,
}

pub(crate) async fn describe_repo<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<RepoParams>, QueryRejection>,
) -> Result<Json<Value>> {
    app.authorize_read(&headers)?;
    let p = query(params)?;
    let repo = app.repo(&p.repo).await?;
    // As the reference lists them: the collections that hold records (one
    // whose records were all deleted, or declared and never written, is
    // not listed).
    let mut collections: Vec<String> = Vec::new();
    for (name, _) in repo.collections().await {
        if !repo.list_records(&name, None, false, 1).await?.is_empty() {
            collections.push(name);
        }
    }
    let id = repo.id();
    // A repository named by a DID has no verified handle; one named by a
    // handle is given the did:web of that name.
    let (did, handle, correct) = if id.starts_with("did:") {
        (id.to_owned(), "handle.invalid".to_owned(), false)
    } else {
        (format!("did:web:{id}"), id.to_owned(), true)
    };
    // The public key that signs the next commit (or last signed one).
    let keys = repo.signing_keys().await?;
    let signing_key = keys
        .current
        .as_ref()
        .map(|c| c.key)
        .or_else(|| keys.known.last().copied())
        .map(|k| k.did_key());
    let mut out = json!({
        "handle": handle,
        "did": did,
        "didDoc": {},
        "collections": collections,
        "handleIsCorrect": correct,
    });
    if let Some(key) = signing_key {
        out["signingKey"] = json!(key);
    }
    Ok(Json(out))
}

#[derive(Deserialize)]
pub(crate) struct DidParams {
    did: String,
    since: Option<String>,
}

/// Streams a CAR body produced by `write` into the response.
fn car_response<F, Fut>(write: F) -> Response
where
    F: FnOnce(tokio::io::DuplexStream) -> Fut,
    Fut: Future<Output = std::result::Result<(), repo::Error>> + Send + 'static,
{
    let (writer, reader) = tokio::io::duplex(64 * 1024);
    let task = write(writer);
    tokio::spawn(async move {
        if let Err(e) = task.await {
            // The status is already sent: the client sees a truncated CAR.
            tracing::warn!(error = %e, "CAR stream failed");
        }
    });
    let body = Body::from_stream(tokio_util::io::ReaderStream::new(reader));
    ([content_type(CAR)], body).into_response()
}

pub(crate) async fn get_repo<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<DidParams>, QueryRejection>,
) -> Result<Response> {
    app.authorize_read(&headers)?;
    let p = query(params)?;
    let since = p
        .since
        .as_deref()
        .map(|s| {
            rkey::Tid::parse(s)
                .map_err(|e| XrpcError::invalid(format!("since: {s:?} is not a rev: {e}")))
        })
        .transpose()?;
    let repo = app.repo(&p.did).await?;
    if let Some(rev) = since {
        // Fail before the status line if the rev is unknown.
        repo.commit_at(rev).await?;
    }
    Ok(car_response(move |out| async move {
        repo.export_car(out, since, |_| {}).await.map(|_| ())
    }))
}

#[derive(Deserialize)]
pub(crate) struct SyncRecordParams {
    did: String,
    collection: String,
    rkey: String,
}

pub(crate) async fn sync_get_record<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<SyncRecordParams>, QueryRejection>,
) -> Result<Response> {
    app.authorize_read(&headers)?;
    let p = query(params)?;
    rkey::validate_nsid(&p.collection).map_err(|e| XrpcError::invalid(e.to_string()))?;
    rkey::validate_record_key(&p.rkey).map_err(|e| XrpcError::invalid(e.to_string()))?;
    let repo = app.repo(&p.did).await?;
    let (car, found) = repo
        .export_record_car(Vec::new(), &p.collection, &p.rkey)
        .await?;
    if found.is_none() {
        return Err(XrpcError::new(
            StatusCode::BAD_REQUEST,
            "RecordNotFound",
            format!(
                "record not found: {}",
                record_uri(repo.id(), &p.collection, &p.rkey)
            ),
        ));
    }
    Ok(([content_type(CAR)], car).into_response())
}

#[derive(Deserialize)]
pub(crate) struct LatestCommitParams {
    did: String,
}

pub(crate) async fn get_latest_commit<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<LatestCommitParams>, QueryRejection>,
) -> Result<Json<Value>> {
    app.authorize_read(&headers)?;
    let p = query(params)?;
    let repo = app.repo(&p.did).await?;
    let head = repo.head().await?;
    Ok(Json(
        json!({ "cid": head.commit.to_string(), "rev": head.rev.to_string() }),
    ))
}

#[derive(Deserialize)]
pub(crate) struct ListReposParams {
    limit: Option<i64>,
    cursor: Option<String>,
}

pub(crate) async fn list_repos<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<ListReposParams>, QueryRejection>,
) -> Result<Json<Value>> {
    app.authorize_read(&headers)?;
    let p = query(params)?;
    let limit = match p.limit {
        None => 500,
        Some(n @ 1..=1000) => usize::try_from(n).unwrap_or(500),
        Some(n) => {
            return Err(XrpcError::invalid(format!(
                "limit {n} is out of range (1 to 1000)"
            )));
        }
    };
    let all = app.repos.list().await?;
    let mut page: Vec<_> = all
        .into_iter()
        .filter(|(id, _)| p.cursor.as_deref().is_none_or(|c| id.as_str() > c))
        .take(limit + 1)
        .collect();
    let more = page.len() > limit;
    page.truncate(limit);
    let repos: Vec<Value> = page
        .iter()
        .map(|(id, head)| {
            json!({
                "did": id,
                "head": head.commit.to_string(),
                "rev": rkey::Tid::from_u64(head.rev).to_string(),
                "active": true,
            })
        })
        .collect();
    let mut out = json!({ "repos": repos });
    if more && let Some((last, _)) = page.last() {
        out["cursor"] = json!(last);
    }
    Ok(Json(out))
}

pub(crate) async fn health() -> Json<Value> {
    Json(json!({ "version": env!("CARGO_PKG_VERSION") }))
}

/// Prometheus metrics: a read like the others (`--private-reads` covers it).
pub(crate) async fn metrics<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
) -> Response {
    if let Err(e) = app.authorize_read(&headers) {
        return e.into_response();
    }
    let gauge = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    app.metrics
        .firehose_subscribers
        .set(gauge(app.firehose.subscribers()));
    app.metrics
        .firehose_buffered_bytes
        .set(gauge(app.firehose.live.held_bytes()));
    (
        [content_type(
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        app.metrics.encode(),
    )
        .into_response()
}

pub(crate) async fn not_implemented(
    axum::extract::Path(method): axum::extract::Path<String>,
) -> XrpcError {
    XrpcError::new(
        StatusCode::NOT_IMPLEMENTED,
        "MethodNotImplemented",
        format!("this server does not implement {method}"),
    )
}

/// A known method asked with the wrong HTTP method: answered as the
/// reference PDS answers it (400 `InvalidRequest`, "Incorrect HTTP method"),
/// naming the method it takes.
pub(crate) async fn wrong_http_method(
    method: axum::http::Method,
    uri: axum::http::Uri,
) -> XrpcError {
    let expected = if method == axum::http::Method::GET {
        "POST"
    } else {
        "GET"
    };
    XrpcError::new(
        StatusCode::BAD_REQUEST,
        "InvalidRequest",
        format!(
            "Incorrect HTTP method: {} takes {expected}, not {method}",
            uri.path().trim_start_matches("/xrpc/")
        ),
    )
}

pub(crate) async fn not_found() -> XrpcError {
    XrpcError::new(
        StatusCode::NOT_FOUND,
        "NotFound",
        "no such endpoint (XRPC methods are under /xrpc/)",
    )
}

/// `limit` of a page: 1 to `max`, `default` when absent.
pub(crate) fn page_limit(limit: Option<i64>, default: usize, max: usize) -> Result<usize> {
    match limit {
        None => Ok(default.min(max)),
        Some(n) if n >= 1 && usize::try_from(n).is_ok_and(|n| n <= max) => {
            Ok(usize::try_from(n).unwrap_or(max))
        }
        Some(n) => Err(XrpcError::invalid(format!(
            "limit {n} is out of range (1 to {max})"
        ))),
    }
}

/// Runs a query in its turn (at most `max_concurrent_queries` at once) and
/// within its budget (`query_timeout`).
async fn bounded_query<K: Kv, T>(
    app: &App<K>,
    query: impl Future<Output = std::result::Result<T, repo::Error>>,
) -> Result<T> {
    let _turn = app
        .queries
        .acquire()
        .await
        .map_err(|_| XrpcError::internal("the query pool is closed"))?;
    let budget = app.config.limits.query_timeout;
    match tokio::time::timeout(budget, query).await {
        Ok(result) => Ok(result?),
        Err(_) => Err(XrpcError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "QueryTimeout",
            format!(
                "the query ran longer than its {budget:?} budget (serve --query-timeout-secs) \
                 and was abandoned; narrow it (fewer values, a smaller range, a where on a \
                 rarer value)"
            ),
        )),
    }
}

#[derive(Deserialize)]
pub(crate) struct QueryRecordsParams {
    repo: String,
    collection: String,
    #[serde(rename = "where")]
    where_: Option<String>,
    limit: Option<i64>,
    cursor: Option<String>,
    reverse: Option<bool>,
}

/// `dev.datarepo.queryRecords`: listRecords' shape, filtered by `where`.
pub(crate) async fn query_records<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<QueryRecordsParams>, QueryRejection>,
) -> Result<Json<Value>> {
    app.authorize_read(&headers)?;
    let p = query(params)?;
    let limit = page_limit(p.limit, 50, app.config.limits.max_page)?;
    let repo = app.repo(&p.repo).await?;
    let page = bounded_query(
        &app,
        repo.query(
            &p.collection,
            p.where_.as_deref().filter(|w| !w.trim().is_empty()),
            p.cursor.as_deref(),
            p.reverse.unwrap_or(false),
            limit,
        ),
    )
    .await?;
    let records: Vec<Value> = page
        .records
        .iter()
        .map(|(rkey, r)| {
            json!({
                "uri": record_uri(repo.id(), &p.collection, rkey),
                "cid": r.cid().to_string(),
                "value": r.to_json(),
            })
        })
        .collect();
    let mut out = json!({ "records": records });
    if let Some(cursor) = page.cursor {
        out["cursor"] = json!(cursor);
    }
    Ok(Json(out))
}

#[derive(Deserialize)]
pub(crate) struct CountRecordsParams {
    repo: String,
    collection: String,
    #[serde(rename = "where")]
    where_: Option<String>,
}

/// `dev.datarepo.countRecords` → `{"count"}`.
pub(crate) async fn count_records<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<CountRecordsParams>, QueryRejection>,
) -> Result<Json<Value>> {
    app.authorize_read(&headers)?;
    let p = query(params)?;
    let repo = app.repo(&p.repo).await?;
    let n = bounded_query(
        &app,
        repo.count(
            &p.collection,
            p.where_.as_deref().filter(|w| !w.trim().is_empty()),
        ),
    )
    .await?;
    Ok(Json(json!({ "count": n })))
}

#[derive(Deserialize)]
pub(crate) struct TopValuesParams {
    repo: String,
    collection: String,
    path: String,
    #[serde(rename = "where")]
    where_: Option<String>,
    limit: Option<i64>,
}

/// `dev.datarepo.topValues` → `{"top": [{"value", "count"}]}`.
pub(crate) async fn top_values<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<TopValuesParams>, QueryRejection>,
) -> Result<Json<Value>> {
    app.authorize_read(&headers)?;
    let p = query(params)?;
    let limit = page_limit(p.limit, 10, app.config.limits.max_page)?;
    let repo = app.repo(&p.repo).await?;
    let top = bounded_query(
        &app,
        repo.top_values(
            &p.collection,
            &p.path,
            p.where_.as_deref().filter(|w| !w.trim().is_empty()),
            limit,
        ),
    )
    .await?;
    let top: Vec<Value> = top
        .iter()
        .map(|t| json!({"value": t.value.to_json(), "count": t.count}))
        .collect();
    Ok(Json(json!({ "top": top })))
}

#[derive(Deserialize)]
pub(crate) struct ListIndexesParams {
    repo: String,
    collection: Option<String>,
}

/// `dev.datarepo.listIndexes` → `{"indexes": [{"collection", "path", "kind"}]}`.
pub(crate) async fn list_indexes<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<ListIndexesParams>, QueryRejection>,
) -> Result<Json<Value>> {
    app.authorize_read(&headers)?;
    let p = query(params)?;
    let repo = app.repo(&p.repo).await?;
    let list = repo.indexes(p.collection.as_deref()).await?;
    let indexes: Vec<Value> = list
        .iter()
        .map(|d| json!({"collection": d.collection, "path": d.path, "kind": d.kind.name()}))
        .collect();
    Ok(Json(json!({ "indexes": indexes })))
}

#[derive(Deserialize)]
pub(crate) struct AddIndexInput {
    repo: String,
    collection: String,
    path: String,
    kind: String,
}

/// `dev.datarepo.addIndex` (write token) → `{collection, path, kind, records}`.
pub(crate) async fn add_index<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    raw: std::result::Result<Bytes, BytesRejection>,
) -> Result<Response> {
    app.authorize_write(&headers)?;
    let (input, _): (AddIndexInput, _) = body(raw)?;
    let kind: repo::IndexKind = input.kind.parse().map_err(XrpcError::invalid)?;
    let repo = app.repo(&input.repo).await?;
    let (collection, path) = (input.collection, input.path);
    let params = json!({"collection": collection, "path": path, "kind": kind.name()});
    let job = app.jobs.start("addIndex", repo.id(), params);
    // In a task of its own: a client that goes away does not cut a build short.
    let running = Arc::clone(&job);
    tokio::spawn(async move {
        let _finished = jobs::Job::ensure_finished(&running);
        let built = repo
            .add_index(&collection, &path, kind, |p| running.index_progress(p))
            .await;
        running.finish(built.map_err(XrpcError::from).map(|records| {
            json!({"collection": collection, "path": path, "kind": kind.name(), "records": records})
        }));
    });
    job_answer(&app, &job).await
}

/// The answer of a request that started `job`: its result (with `job`, its
/// id) or error when it ends within `job_answer_wait`, else `202` with the
/// job as `getJob` describes it.
async fn job_answer<K>(app: &App<K>, job: &jobs::Job) -> Result<Response> {
    match job.outcome_within(app.config.limits.job_answer_wait).await {
        Some(Ok(mut result)) => {
            result["job"] = json!(job.id());
            Ok(Json(result).into_response())
        }
        Some(Err(e)) => Err(e),
        None => Ok((StatusCode::ACCEPTED, Json(json!({"job": job.describe()}))).into_response()),
    }
}

/// `dev.datarepo.checkToken` (GET): `{"writes": true}` when the request's
/// token authorizes writes, `401` otherwise; what the web interface asks
/// to say whether the token it was given is the server's.
pub(crate) async fn check_token<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
) -> Result<Json<Value>> {
    app.authorize_write(&headers)?;
    Ok(Json(json!({ "writes": true })))
}

#[derive(Deserialize)]
pub(crate) struct GetJobParams {
    id: String,
}

/// `dev.datarepo.getJob?id=` → the job (`JobNotFound` once forgotten).
pub(crate) async fn get_job<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<GetJobParams>, QueryRejection>,
) -> Result<Json<Value>> {
    app.authorize_read(&headers)?;
    let p = query(params)?;
    let job = app.jobs.get(&p.id).ok_or_else(|| {
        XrpcError::new(
            StatusCode::BAD_REQUEST,
            "JobNotFound",
            format!(
                "no job {:?}: jobs are kept in the server's memory (the last 100 finished), \
                 and a restart forgets them",
                p.id
            ),
        )
    })?;
    Ok(Json(job.describe()))
}

#[derive(Deserialize)]
pub(crate) struct ListJobsParams {
    repo: Option<String>,
}

/// `dev.datarepo.listJobs[?repo=]` → `{jobs: [...]}`, newest first.
pub(crate) async fn list_jobs<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<ListJobsParams>, QueryRejection>,
) -> Result<Json<Value>> {
    app.authorize_read(&headers)?;
    let p = query(params)?;
    let jobs: Vec<Value> = app
        .jobs
        .list(p.repo.as_deref())
        .iter()
        .map(|j| j.describe())
        .collect();
    Ok(Json(json!({ "jobs": jobs })))
}

#[derive(Deserialize)]
pub(crate) struct DropIndexInput {
    repo: String,
    collection: String,
    path: String,
}

/// `dev.datarepo.dropIndex` (write token) → `{}`.
pub(crate) async fn drop_index<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    raw: std::result::Result<Bytes, BytesRejection>,
) -> Result<Json<Value>> {
    app.authorize_write(&headers)?;
    let (input, _): (DropIndexInput, _) = body(raw)?;
    let repo = app.repo(&input.repo).await?;
    tokio::spawn(async move { repo.drop_index(&input.collection, &input.path).await })
        .await
        .map_err(|e| XrpcError::internal(format!("index drop task failed: {e}")))??;
    Ok(Json(json!({})))
}

#[derive(Deserialize)]
pub(crate) struct PutLexiconsInput {
    repo: String,
    lexicons: Vec<Value>,
}

/// `dev.datarepo.putLexicons` (write token): adds or replaces Lexicon
/// documents, all or none, as `datarepo lexicon add` does, and answers its
/// report (`Repository::lexicons_added_report`). Like a first record, it
/// creates the repository.
pub(crate) async fn put_lexicons<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    raw: std::result::Result<Bytes, BytesRejection>,
) -> Result<Json<Value>> {
    app.authorize_write(&headers)?;
    let (input, _): (PutLexiconsInput, _) = body(raw)?;
    if input.lexicons.is_empty() {
        return Err(XrpcError::invalid("lexicons: give at least one document"));
    }
    // Declaring a repository's Lexicons may come before its first record.
    let repo = app.repo_for_write(&input.repo).await?;
    // In a task of its own: the check of existing records runs to its end
    // even when the client goes away.
    let report = tokio::spawn(async move {
        let added = repo.add_lexicons(input.lexicons).await?;
        Ok::<_, repo::Error>(repo.lexicons_added_report(&added).await)
    })
    .await
    .map_err(|e| XrpcError::internal(format!("Lexicon task failed: {e}")))??;
    Ok(Json(report))
}

#[derive(Deserialize)]
pub(crate) struct DeleteLexiconInput {
    repo: String,
    nsid: String,
}

/// `dev.datarepo.deleteLexicon` (write token) → `{removed: nsid}`, as
/// `datarepo lexicon rm`: a collection it declared keeps its key type and
/// is no longer validated.
pub(crate) async fn delete_lexicon<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    raw: std::result::Result<Bytes, BytesRejection>,
) -> Result<Json<Value>> {
    app.authorize_write(&headers)?;
    let (input, _): (DeleteLexiconInput, _) = body(raw)?;
    let repo = app.repo(&input.repo).await?;
    repo.remove_lexicon(&input.nsid).await?;
    Ok(Json(json!({ "removed": input.nsid })))
}

#[derive(Deserialize)]
pub(crate) struct DefineCollectionInput {
    repo: String,
    collection: String,
    key: String,
}

/// `dev.datarepo.defineCollection` (write token) → `{collection, key}`, as
/// `datarepo collection define`: the collection's record key type (its
/// existing records must fit). Like a first record, it creates the
/// repository.
pub(crate) async fn define_collection<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    raw: std::result::Result<Bytes, BytesRejection>,
) -> Result<Json<Value>> {
    app.authorize_write(&headers)?;
    let (input, _): (DefineCollectionInput, _) = body(raw)?;
    let key: rkey::KeyType = input
        .key
        .parse()
        .map_err(|e: rkey::Error| XrpcError::invalid(format!("key: {e}")))?;
    let repo = app.repo_for_write(&input.repo).await?;
    let info = repo.define_collection(&input.collection, key, None).await?;
    Ok(Json(
        json!({ "collection": input.collection, "key": info.key.to_string(),
               "keyType": info.key.to_string() }),
    ))
}

#[derive(Deserialize)]
pub(crate) struct RebuildIndexesInput {
    repo: String,
}

/// `dev.datarepo.rebuildIndexes` (write token) → `{rebuilt: true,
/// records}`, as `datarepo index rebuild`: every field index of the
/// repository built again from its records.
pub(crate) async fn rebuild_indexes<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    raw: std::result::Result<Bytes, BytesRejection>,
) -> Result<Response> {
    app.authorize_write(&headers)?;
    let (input, _): (RebuildIndexesInput, _) = body(raw)?;
    let repo = app.repo(&input.repo).await?;
    let job = app.jobs.start("rebuildIndexes", repo.id(), json!({}));
    let running = Arc::clone(&job);
    tokio::spawn(async move {
        let _finished = jobs::Job::ensure_finished(&running);
        let rebuilt = repo
            .rebuild_indexes(|p| running.progress(p.records, Some(p.total)))
            .await;
        running.finish(
            rebuilt
                .map_err(XrpcError::from)
                .map(|records| json!({ "rebuilt": true, "records": records })),
        );
    });
    job_answer(&app, &job).await
}
