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

/// Who a write comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Writer {
    /// The admin token: any repository.
    Admin,
    /// An account's session: the repository of its DID only.
    Account(String),
}

impl Writer {
    /// Refuses a write to `repo` by anyone but its owner or the admin.
    pub(crate) fn may_write(&self, repo: &str) -> Result<()> {
        match self {
            Self::Admin => Ok(()),
            Self::Account(did) if did == repo => Ok(()),
            Self::Account(did) => Err(XrpcError::auth(format!(
                "this session is {did}'s, which may write only its own repository, not {repo}"
            ))),
        }
    }
}

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

    /// Who may make this write: the admin token, or an active account's
    /// access token (whose repository the caller then checks with
    /// [`Writer::may_write`]). Reads no store: a token's signature and
    /// expiry are checked in memory, an account's status is remembered.
    pub(crate) async fn authorize_write(&self, headers: &HeaderMap) -> Result<Writer> {
        match self.roles.role() {
            crate::role::Role::Writer if self.roles.may_acknowledge() => {}
            role => return Err(crate::role::not_acknowledged(&role)),
        }
        if let Some(did) = self.session_did(headers).await? {
            return Ok(Writer::Account(did));
        }
        self.check_token(headers, "writes").map(|()| Writer::Admin)
    }

    /// The DID of the active account whose access token `headers` carry;
    /// `None` when they carry no such token (the admin token, or nothing).
    async fn session_did(&self, headers: &HeaderMap) -> Result<Option<String>> {
        let Some(sessions) = &self.config.sessions else {
            return Ok(None);
        };
        let Some(token) = bearer(headers).and_then(|t| std::str::from_utf8(t).ok()) else {
            return Ok(None);
        };
        // A JWT has two dots; the admin token is checked as before.
        if token.bytes().filter(|b| *b == b'.').count() != 2 {
            return Ok(None);
        }
        let claims = sessions
            .tokens
            .verify_access(token, (sessions.clock)())
            .map_err(super::session::token_error)?;
        let status = self
            .accounts
            .status(&claims.sub)
            .await
            .map_err(|e| XrpcError::internal(e.to_string()))?;
        match status {
            Some(accounts::account::Status::Active) => Ok(Some(claims.sub)),
            Some(accounts::account::Status::Deactivated) => Err(XrpcError::new(
                axum::http::StatusCode::UNAUTHORIZED,
                "AccountDeactivated",
                "this account is deactivated: it cannot write",
            )),
            Some(accounts::account::Status::Takendown) => Err(XrpcError::new(
                axum::http::StatusCode::UNAUTHORIZED,
                "AccountTakedown",
                "this account has been taken down",
            )),
            None => Err(XrpcError::auth("the token's account no longer exists")),
        }
    }

    /// Runs `work` (Argon2id hashing) on the blocking pool, at most
    /// half the cores (at least one) at a time.
    pub(crate) async fn hashing<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T> {
        let _permit = Arc::clone(&self.hashing)
            .acquire_owned()
            .await
            .map_err(|e| XrpcError::internal(e.to_string()))?;
        tokio::task::spawn_blocking(work)
            .await
            .map_err(|e| XrpcError::internal(format!("hashing failed: {e}")))
    }

    /// Whether these headers may read: anyone, or with `--private-reads`
    /// the admin token or any account's valid session.
    pub(crate) async fn authorize_read(&self, headers: &HeaderMap) -> Result<()> {
        if !self.config.private_reads || self.session_did(headers).await?.is_some() {
            return Ok(());
        }
        self.check_token(headers, "reads")
    }

    /// The repository `id`, unless its account is deactivated or taken
    /// down (then it neither reads nor writes, for anyone, until the
    /// operator activates it again).
    pub(crate) async fn repo(&self, id: &str) -> Result<Arc<Repository<K>>> {
        self.check_available(id).await?;
        Ok(self.repos.open(id).await?)
    }

    /// Refuses the repository of a deactivated or taken-down account, as
    /// the reference PDS does. A replica does not know of status changes
    /// made after it started, so it checks none.
    async fn check_available(&self, id: &str) -> Result<()> {
        use accounts::account::Status;
        if self.roles.role() != crate::role::Role::Writer {
            return Ok(());
        }
        let status = self
            .accounts
            .status(id)
            .await
            .map_err(|e| XrpcError::internal(e.to_string()))?;
        match status {
            Some(Status::Deactivated) => Err(XrpcError::new(
                axum::http::StatusCode::BAD_REQUEST,
                "RepoDeactivated",
                format!("Repo has been deactivated: {id}"),
            )),
            Some(Status::Takendown) => Err(XrpcError::new(
                axum::http::StatusCode::BAD_REQUEST,
                "RepoTakendown",
                format!("Repo has been taken down: {id}"),
            )),
            Some(Status::Active) | None => Ok(()),
        }
    }

    /// The repository, created on the first authorized write to it (with a
    /// key of its own in the signing-key directory, when there is one).
    pub(super) async fn repo_for_write(&self, id: &str) -> Result<Arc<Repository<K>>> {
        self.check_available(id).await?;
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
        let stream = self.stream.notifier();
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
                stream.notify_one();
            }
            result
        });
        task.await.map_err(|e| {
            repo::Error::Io(std::io::Error::other(format!("write task failed: {e}")))
        })?
    }
}
