//! `dev.datarepo.*` reads that look inside a repository: what the web
//! interface needs beyond AT Protocol's API (collections with their
//! declarations, counts, the commit log with each commit's changes, a
//! record's history, and the Pail's shards). Every one is a read:
//! `--private-reads` covers them as it covers the rest of the API.

use std::sync::Arc;

use axum::{
    Json,
    extract::{Query, State, rejection::QueryRejection},
    http::{HeaderMap, StatusCode},
};
use repo::{LogEntry, RecordDiff, record_uri};
use rkey::Tid;
use serde::Deserialize;
use serde_json::{Value, json};
use store::Kv;

use crate::handlers::request::{page_limit, parse_cid, query};
use crate::{app::App, error::XrpcError};

type Result<T> = std::result::Result<T, XrpcError>;

/// Commits a history request looks at when it does not say.
const HISTORY_COMMITS: usize = 200;
/// Most commits one history request may look at (each costs a Pail lookup).
const MAX_HISTORY_COMMITS: usize = 2000;
/// Most shard entries one `getShard` answers (a shard may hold thousands).
const MAX_SHARD_ENTRIES: usize = 5000;

fn parse_rev(s: &str, field: &str) -> Result<Tid> {
    Tid::parse(s).map_err(|e| XrpcError::invalid(format!("{field}: {s:?} is not a rev ({e})")))
}

/// A commit as these endpoints show it; `time` is the instant its rev
/// encodes.
/// Adds `prevRev`, the previous commit's rev, when its block is kept (a
/// link for people; garbage collection may have dropped it).
async fn add_prev_rev<K: Kv + 'static>(
    repo: &repo::Repository<K>,
    entry: &LogEntry,
    commit: &mut Value,
) -> Result<()> {
    if let Some(prev) = entry.commit.prev
        && let Some(block) = repo.block(prev).await?
        && let Ok(older) = repo::CommitData::decode(prev, block.bytes())
    {
        commit["prevRev"] = json!(older.rev.to_string());
    }
    Ok(())
}

/// What a change did: `create`, `update` or `delete`.
#[derive(Deserialize)]
pub(crate) struct RepoParams {
    repo: String,
}

/// `dev.datarepo.describeCollections` → `{"collections": [{collection,
/// keyType, declared, lexicon, indexes: [{path, kind}]}]}`, in name order.
pub(crate) async fn describe_collections<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<RepoParams>, QueryRejection>,
) -> Result<Json<Value>> {
    app.authorize_read(&headers).await?;
    let p = query(params)?;
    let repo = app.repo(&p.repo).await?;
    let indexes = repo.indexes(None).await?;
    let collections: Vec<Value> = repo
        .collections()
        .await
        .iter()
        .map(|(name, info)| {
            let indexes: Vec<Value> = indexes
                .iter()
                .filter(|d| d.collection == *name)
                .map(|d| json!({"path": d.path, "kind": d.kind.name()}))
                .collect();
            json!({
                "collection": name,
                "keyType": info.key.to_string(),
                "declared": info.declared,
                "lexicon": info.lexicon.is_some(),
                "indexes": indexes,
            })
        })
        .collect();
    Ok(Json(json!({ "collections": collections })))
}

/// `dev.datarepo.getRepoStats` → `{"records", "commits", "collections":
/// [{collection, records}]}`: counts that read every record key and log
/// entry, so a browser asks for them after the page is shown.
pub(crate) async fn get_repo_stats<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<RepoParams>, QueryRejection>,
) -> Result<Json<Value>> {
    app.authorize_read(&headers).await?;
    let p = query(params)?;
    let repo = app.repo(&p.repo).await?;
    let mut total = 0u64;
    let mut collections = Vec::new();
    for (name, _) in repo.collections().await {
        let n = repo.count(&name, None).await?;
        total += n;
        collections.push(json!({"collection": name, "records": n}));
    }
    let commits = repo.commit_count().await?;
    Ok(Json(json!({
        "records": total,
        "commits": commits,
        "collections": collections,
    })))
}

#[derive(Deserialize)]
pub(crate) struct ListCommitsParams {
    repo: String,
    limit: Option<i64>,
    cursor: Option<String>,
    counts: Option<bool>,
}

/// `dev.datarepo.listCommits` → `{"commits": [{cid, rev, time, data, prev?,
/// signed, counts?}], "cursor"?}`, newest first; `cursor` is the last rev of
/// the page. With `counts=true`, each commit whose previous commit is
/// stored has `counts: {create, update, delete}`, what it changed.
pub(crate) async fn list_commits<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<ListCommitsParams>, QueryRejection>,
) -> Result<Json<Value>> {
    app.authorize_read(&headers).await?;
    let p = query(params)?;
    let limit = page_limit(p.limit, 50, app.config.limits.max_page)?;
    let before = p
        .cursor
        .as_deref()
        .map(|c| parse_rev(c, "cursor"))
        .transpose()?;
    let repo = app.repo(&p.repo).await?;
    let mut page = repo.commits(before, limit + 1).await?;
    let more = page.len() > limit;
    page.truncate(limit);
    let mut commits = Vec::with_capacity(page.len());
    for entry in &page {
        let mut commit = entry.to_json();
        if p.counts == Some(true)
            && let Some([create, update, delete]) = repo.change_counts(entry).await?
        {
            commit["counts"] = json!({"create": create, "update": update, "delete": delete});
        }
        commits.push(commit);
    }
    let mut out = json!({ "commits": commits });
    if more && let Some(last) = page.last() {
        out["cursor"] = json!(last.commit.rev.to_string());
    }
    Ok(Json(out))
}

#[derive(Deserialize)]
pub(crate) struct GetCommitParams {
    repo: String,
    rev: String,
    ops: Option<bool>,
    limit: Option<i64>,
    cursor: Option<String>,
}

/// Changes one `getCommit` answers when it does not say.
const COMMIT_OPS: usize = 1000;
/// Most changes one `getCommit` answers (an import's commit has millions).
const MAX_COMMIT_OPS: usize = 10_000;

/// `dev.datarepo.getCommit` → `{"commit": {...}, "counts": {create, update,
/// delete}, "ops": [{action, collection, rkey, uri, cid?, prev?}],
/// "cursor"?}`: what the commit changed, in path order, `limit` changes after
/// the path `cursor` (`counts` are of all of them); not computed, and
/// `counts` and `ops` absent, with `ops=false`.
pub(crate) async fn get_commit<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<GetCommitParams>, QueryRejection>,
) -> Result<Json<Value>> {
    app.authorize_read(&headers).await?;
    let p = query(params)?;
    let rev = parse_rev(&p.rev, "rev")?;
    let limit = page_limit(p.limit, COMMIT_OPS, MAX_COMMIT_OPS)?;
    let repo = app.repo(&p.repo).await?;
    if p.ops == Some(false) {
        let entry = repo.commit_at(rev).await?;
        let mut commit = entry.to_json();
        add_prev_rev(&repo, &entry, &mut commit).await?;
        return Ok(Json(json!({ "commit": commit })));
    }
    let (entry, changes) = repo.changes(rev).await?;
    let mut counts = json!({"create": 0, "update": 0, "delete": 0});
    for d in &changes {
        let action = d.action();
        counts[action] = json!(counts[action].as_u64().unwrap_or(0) + 1);
    }
    let after = |d: &&RecordDiff| {
        p.cursor
            .as_deref()
            .is_none_or(|c| format!("{}/{}", d.collection, d.rkey).as_str() > c)
    };
    let page: Vec<&RecordDiff> = changes.iter().filter(after).take(limit + 1).collect();
    let more = page.len() > limit;
    let ops: Vec<Value> = page
        .iter()
        .take(limit)
        .map(|d| d.to_json(repo.id()))
        .collect();
    let mut out = json!({ "commit": entry.to_json(), "counts": counts, "ops": ops });
    add_prev_rev(&repo, &entry, &mut out["commit"]).await?;
    if more && let Some(last) = page.get(limit - 1) {
        out["cursor"] = json!(format!("{}/{}", last.collection, last.rkey));
    }
    Ok(Json(out))
}

#[derive(Deserialize)]
pub(crate) struct RecordHistoryParams {
    repo: String,
    collection: String,
    rkey: String,
    limit: Option<i64>,
    cursor: Option<String>,
}

/// `dev.datarepo.getRecordHistory` → `{"versions": [{action, cid?, prev?,
/// commit}], "cursor"?}`, newest first. `limit` bounds the versions read
/// from the record's history (and the commits looked at below the
/// repository's history start); `cursor` continues below the last of them.
pub(crate) async fn get_record_history<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<RecordHistoryParams>, QueryRejection>,
) -> Result<Json<Value>> {
    app.authorize_read(&headers).await?;
    let p = query(params)?;
    let commits = page_limit(p.limit, HISTORY_COMMITS, MAX_HISTORY_COMMITS)?;
    let before = p
        .cursor
        .as_deref()
        .map(|c| parse_rev(c, "cursor"))
        .transpose()?;
    let repo = app.repo(&p.repo).await?;
    let history = repo
        .record_history(&p.collection, &p.rkey, before, commits)
        .await?;
    let versions: Vec<Value> = history
        .versions
        .iter()
        .map(|v| v.to_json(repo.id(), &p.collection, &p.rkey))
        .collect();
    let mut out = json!({ "versions": versions });
    if let Some(rev) = history.cursor {
        out["cursor"] = json!(rev.to_string());
    }
    Ok(Json(out))
}

#[derive(Deserialize)]
pub(crate) struct GetRecordParams {
    repo: String,
    collection: String,
    rkey: String,
    rev: Option<String>,
}

/// `dev.datarepo.getRecord` → getRecord's `{uri, cid, value}` and the
/// record's encoded `size` in bytes, as of the commit with `rev` when given
/// (`RecordNotFound` when the record did not exist then).
pub(crate) async fn get_record<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<GetRecordParams>, QueryRejection>,
) -> Result<Json<Value>> {
    app.authorize_read(&headers).await?;
    let p = query(params)?;
    let rev = p.rev.as_deref().map(|r| parse_rev(r, "rev")).transpose()?;
    let repo = app.repo(&p.repo).await?;
    let uri = record_uri(repo.id(), &p.collection, &p.rkey);
    let record = match rev {
        Some(rev) => repo.record_at(rev, &p.collection, &p.rkey).await?,
        None => repo.get_record(&p.collection, &p.rkey).await?,
    };
    let record = record.ok_or_else(|| {
        let when = rev.map(|r| format!(" at rev {r}")).unwrap_or_default();
        XrpcError::new(
            StatusCode::BAD_REQUEST,
            "RecordNotFound",
            format!("record not found{when}: {uri}"),
        )
    })?;
    Ok(Json(json!({
        "uri": uri,
        "cid": record.cid().to_string(),
        "value": record.to_json(),
        "size": record.bytes().len(),
    })))
}

#[derive(Deserialize)]
pub(crate) struct GetLexiconParams {
    repo: String,
    nsid: String,
}

/// `dev.datarepo.getLexicon` → `{"lexicon": {...}}`: the Lexicon document
/// with this NSID among the repository's (`LexiconNotFound` otherwise).
pub(crate) async fn get_lexicon<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<GetLexiconParams>, QueryRejection>,
) -> Result<Json<Value>> {
    app.authorize_read(&headers).await?;
    let p = query(params)?;
    let repo = app.repo(&p.repo).await?;
    let lexicons = repo.lexicons();
    let doc = lexicons.get(&p.nsid).ok_or_else(|| {
        XrpcError::new(
            StatusCode::BAD_REQUEST,
            "LexiconNotFound",
            format!("no Lexicon {} in {}", p.nsid, repo.id()),
        )
    })?;
    Ok(Json(json!({ "lexicon": doc.json() })))
}

#[derive(Deserialize)]
pub(crate) struct GetBlockParams {
    repo: String,
    cid: String,
}

/// `dev.datarepo.getBlock` → `{cid, codec, size, value?}`: a stored block,
/// with `value` its content as JSON when it is a dag-cbor map (a record or
/// a commit).
pub(crate) async fn get_block<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<GetBlockParams>, QueryRejection>,
) -> Result<Json<Value>> {
    app.authorize_read(&headers).await?;
    let p = query(params)?;
    let cid = parse_cid(&p.cid, "cid")?;
    let repo = app.repo(&p.repo).await?;
    let block = repo.block(cid).await?.ok_or_else(|| {
        XrpcError::new(
            StatusCode::BAD_REQUEST,
            "BlockNotFound",
            format!("no block {cid} is stored"),
        )
    })?;
    let codec = match cid.codec() {
        0x71 => "dag-cbor".to_owned(),
        0x55 => "raw".to_owned(),
        c => format!("0x{c:x}"),
    };
    let mut out = json!({
        "cid": cid.to_string(),
        "codec": codec,
        "size": block.bytes().len(),
    });
    if let Ok(record) = repo::Record::from_block(block) {
        out["value"] = record.to_json();
    }
    Ok(Json(out))
}

#[derive(Deserialize)]
pub(crate) struct GetShardParams {
    repo: String,
    cid: String,
    cursor: Option<String>,
    limit: Option<i64>,
    children: Option<bool>,
}

/// `dev.datarepo.getShard` → `{cid, size, maxSize, maxKeyLength, entryCount,
/// entries: [{key, data?, link?, child?}], cursor?}`: one Pail shard, its
/// entries after `cursor` (a key) in key order; with `children=true`, each
/// linked shard's `{entryCount, size}` as `child` (one more shard read per
/// link on the page).
pub(crate) async fn get_shard<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<GetShardParams>, QueryRejection>,
) -> Result<Json<Value>> {
    app.authorize_read(&headers).await?;
    let p = query(params)?;
    let cid = parse_cid(&p.cid, "cid")?;
    let limit = page_limit(p.limit, 500, MAX_SHARD_ENTRIES)?;
    let repo = app.repo(&p.repo).await?;
    let shard = repo.shard(cid).await.map_err(|e| match e {
        repo::Error::MissingBlock(_) => XrpcError::new(
            StatusCode::BAD_REQUEST,
            "ShardNotFound",
            format!("no block {cid} is stored"),
        ),
        repo::Error::Pail(e) => XrpcError::new(
            StatusCode::BAD_REQUEST,
            "ShardNotFound",
            format!("{cid} is not a Pail shard: {e}"),
        ),
        e => e.into(),
    })?;
    let after = p.cursor.as_deref();
    let mut entries: Vec<Value> = Vec::new();
    let mut more = false;
    for (key, value) in shard.entries() {
        if after.is_some_and(|a| key <= a) {
            continue;
        }
        if entries.len() == limit {
            more = true;
            break;
        }
        let mut e = json!({ "key": key });
        if let Some(data) = value.data() {
            e["data"] = json!(data.to_string());
        }
        if let Some(link) = value.link() {
            e["link"] = json!(link.to_string());
            if p.children == Some(true) {
                let child = repo.shard(link).await?;
                e["child"] = json!({"entryCount": child.len(), "size": child.bytes().len()});
            }
        }
        entries.push(e);
    }
    let config = shard.config();
    let mut out = json!({
        "cid": cid.to_string(),
        "size": shard.bytes().len(),
        "maxSize": config.max_size,
        "maxKeyLength": config.max_key_length,
        "entryCount": shard.len(),
        "entries": entries,
    });
    if more && let Some(last) = out["entries"].as_array().and_then(|e| e.last()) {
        out["cursor"] = last["key"].clone();
    }
    Ok(Json(out))
}

#[derive(Deserialize)]
pub(crate) struct PailPathParams {
    repo: String,
    collection: String,
    rkey: String,
    rev: Option<String>,
}

/// `dev.datarepo.getPailPath` → `{"rev", "root", "found", "cid"?, "steps":
/// [{shard, prefix, entry}]}`: the shards from the Pail root (of the head, or of the
/// commit with `rev`) down to the record's key.
pub(crate) async fn get_pail_path<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<PailPathParams>, QueryRejection>,
) -> Result<Json<Value>> {
    app.authorize_read(&headers).await?;
    let p = query(params)?;
    let repo = app.repo(&p.repo).await?;
    let (rev, root) = match p.rev.as_deref() {
        Some(r) => {
            let entry = repo.commit_at(parse_rev(r, "rev")?).await?;
            (entry.commit.rev, entry.commit.data)
        }
        None => {
            let head = repo.head().await?;
            (head.rev, head.data)
        }
    };
    let (steps, record) = repo.pail_path(root, &p.collection, &p.rkey).await?;
    let steps: Vec<Value> = steps
        .iter()
        .map(|s| json!({"shard": s.shard.to_string(), "prefix": s.prefix, "entry": s.entry}))
        .collect();
    let mut out = json!({
        "rev": rev.to_string(),
        "root": root.to_string(),
        "found": record.is_some(),
        "steps": steps,
    });
    if let Some(cid) = record {
        out["cid"] = json!(cid.to_string());
    }
    Ok(Json(out))
}
