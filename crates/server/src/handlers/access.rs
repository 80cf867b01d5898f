//! Who may read and write, the repository a request names, and commits
//! run to completion whatever the client does.

use std::sync::Arc;

use axum::http::HeaderMap;
use cid::Cid;
use repo::{CommitResult, Repository, Validation, Write};
use store::Kv;
use subtle::ConstantTimeEq;

use super::request::{Result, bearer};
use crate::{app::App, error::XrpcError};

impl<K: Kv + 'static> App<K> {
    pub(super) fn check_token(&self, headers: &HeaderMap, what: &str) -> Result<()> {
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
    pub(super) async fn repo_for_write(&self, id: &str) -> Result<Arc<Repository<K>>> {
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

    pub(super) async fn create(
        &self,
        id: &str,
    ) -> std::result::Result<Arc<Repository<K>>, repo::Error> {
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
    pub(super) async fn commit(
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
    pub(super) async fn try_commit(
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
