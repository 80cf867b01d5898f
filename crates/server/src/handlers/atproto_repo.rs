//! `com.atproto.repo.*`: record writes and reads.

use std::sync::Arc;

use axum::{
    Json,
    body::Bytes,
    extract::{Query, State, rejection::BytesRejection, rejection::QueryRejection},
    http::{HeaderMap, StatusCode},
};
use repo::{CommitResult, Validation, Write, record_uri};
use serde::Deserialize;
use serde_json::{Value, json};
use store::Kv;

use super::request::{Result, body, nullable, opt_cid, parse_cid, query};
use crate::{app::App, error::XrpcError};

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
    let writer = app.authorize_write(&headers).await?;
    let (input, len): (CreateRecordInput, _) = body(raw)?;
    writer.may_write(&input.repo)?;
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

pub(crate) async fn put_record<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    raw: std::result::Result<Bytes, BytesRejection>,
) -> Result<Json<Value>> {
    let writer = app.authorize_write(&headers).await?;
    let (input, len): (PutRecordInput, _) = body(raw)?;
    writer.may_write(&input.repo)?;
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
    let writer = app.authorize_write(&headers).await?;
    let (input, _): (DeleteRecordInput, _) = body(raw)?;
    writer.may_write(&input.repo)?;
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
    let writer = app.authorize_write(&headers).await?;
    let (input, len): (ApplyWritesInput, _) = body(raw)?;
    writer.may_write(&input.repo)?;
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
    app.authorize_read(&headers).await?;
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
    /// Record paths to keep of each value (a datarepo addition).
    fields: Option<String>,
}

pub(crate) async fn list_records<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<ListRecordsParams>, QueryRejection>,
) -> Result<Json<Value>> {
    app.authorize_read(&headers).await?;
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
    let fields = super::request::record_fields(p.fields.as_deref())?;
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
                "value": r.to_json_fields(fields.as_ref()),
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
    app.authorize_read(&headers).await?;
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
    // An account hosted here names the handle and DID document; otherwise
    // a repository named by a DID has no verified handle, and one named by
    // a handle is given the did:web of that name.
    let account = app
        .accounts
        .by_did(id)
        .await
        .map_err(|e| XrpcError::internal(e.to_string()))?;
    let (did, handle, correct) = match &account {
        Some(a) => (a.did.clone(), a.handle.clone(), true),
        None if id.starts_with("did:") => (id.to_owned(), "handle.invalid".to_owned(), false),
        None => (format!("did:web:{id}"), id.to_owned(), true),
    };
    let did_doc = match &account {
        Some(a) => app.did_document(a).await?.unwrap_or_else(|| json!({})),
        None => json!({}),
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
        "didDoc": did_doc,
        "collections": collections,
        "handleIsCorrect": correct,
    });
    if let Some(key) = signing_key {
        out["signingKey"] = json!(key);
    }
    Ok(Json(out))
}
