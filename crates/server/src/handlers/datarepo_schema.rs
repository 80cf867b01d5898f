//! `dev.datarepo.*` schema: Lexicons and collection declarations.

use std::sync::Arc;

use axum::{
    Json,
    body::Bytes,
    extract::{State, rejection::BytesRejection},
    http::HeaderMap,
};
use serde::Deserialize;
use serde_json::{Value, json};
use store::Kv;

use super::request::{Result, body};
use crate::{app::App, error::XrpcError};

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
    let writer = app.authorize_write(&headers).await?;
    let (input, _): (PutLexiconsInput, _) = body(raw)?;
    writer.may_write(&input.repo)?;
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
    let writer = app.authorize_write(&headers).await?;
    let (input, _): (DeleteLexiconInput, _) = body(raw)?;
    writer.may_write(&input.repo)?;
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
    let writer = app.authorize_write(&headers).await?;
    let (input, _): (DefineCollectionInput, _) = body(raw)?;
    writer.may_write(&input.repo)?;
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
