//! Long administrative work as jobs: an index build or rebuild runs in a
//! task of its own, `dev.datarepo.getJob` and `listJobs` report its
//! progress and outcome, and the request that started it answers with the
//! outcome when it comes soon, or at once with the job to follow
//! otherwise, so that a client never takes a running build for a failed
//! one. Jobs live in the server's memory: a restart forgets them (an
//! interrupted build declares nothing; `index add` again).

use std::{
    collections::VecDeque,
    sync::{
        Arc, Mutex, MutexGuard, PoisonError,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use serde_json::{Value, json};
use tokio::{sync::watch, time::Instant};

use crate::error::XrpcError;

/// Finished jobs kept for `getJob` and `listJobs` (running ones always are).
const FINISHED_KEPT: usize = 100;

/// The jobs of one server.
#[derive(Default)]
pub(crate) struct Jobs {
    next: AtomicU64,
    /// Oldest first.
    table: Mutex<VecDeque<Arc<Job>>>,
}

/// One job: what it does, and how far it is.
pub(crate) struct Job {
    id: String,
    kind: &'static str,
    repo: String,
    params: Value,
    started: Instant,
    state: Mutex<State>,
    /// Flips to true when the job ends.
    finished: watch::Sender<bool>,
}

#[derive(Default)]
struct State {
    done: u64,
    total: Option<u64>,
    /// An index build's changes left to catch up with (0: none, or reading).
    behind: u64,
    /// `Some` once finished: the result, or the error.
    outcome: Option<Result<Value, XrpcError>>,
    elapsed_at_end: Option<Duration>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Plain data, whole after every operation.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Jobs {
    /// Registers a new running job.
    pub(crate) fn start(&self, kind: &'static str, repo: &str, params: Value) -> Arc<Job> {
        let id = (self.next.fetch_add(1, Ordering::Relaxed) + 1).to_string();
        let job = Arc::new(Job {
            id,
            kind,
            repo: repo.to_owned(),
            params,
            started: Instant::now(),
            state: Mutex::new(State::default()),
            finished: watch::channel(false).0,
        });
        let mut table = lock(&self.table);
        table.push_back(Arc::clone(&job));
        // Forget the oldest finished jobs past the bound.
        let finished = table.iter().filter(|j| j.is_finished()).count();
        let mut excess = finished.saturating_sub(FINISHED_KEPT);
        table.retain(|j| {
            if excess > 0 && j.is_finished() {
                excess -= 1;
                false
            } else {
                true
            }
        });
        job
    }

    /// The job with this id, if kept.
    pub(crate) fn get(&self, id: &str) -> Option<Arc<Job>> {
        lock(&self.table).iter().find(|j| j.id == id).cloned()
    }

    /// The kept jobs, of one repository or all, newest first.
    pub(crate) fn list(&self, repo: Option<&str>) -> Vec<Arc<Job>> {
        lock(&self.table)
            .iter()
            .rev()
            .filter(|j| repo.is_none_or(|r| r == j.repo))
            .cloned()
            .collect()
    }
}

impl Job {
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    fn is_finished(&self) -> bool {
        lock(&self.state).outcome.is_some()
    }

    /// Records progress: `done` of `total` (when known).
    pub(crate) fn progress(&self, done: u64, total: Option<u64>) {
        let mut state = lock(&self.state);
        state.done = done;
        state.total = total;
    }

    /// Records an index build's progress: its records read, then the
    /// changes it is catching up with.
    pub(crate) fn index_progress(&self, p: repo::IndexProgress) {
        let mut state = lock(&self.state);
        state.done = p.records;
        state.total = Some(p.total);
        state.behind = p.behind;
    }

    /// Finishes the job with an error should `running` end without an
    /// outcome (its task panicked or was cancelled): never running for ever.
    pub(crate) fn ensure_finished(running: &Arc<Self>) -> impl Drop + Send + 'static {
        struct Guard(Arc<Job>);
        impl Drop for Guard {
            fn drop(&mut self) {
                if !self.0.is_finished() {
                    self.0.finish(Err(XrpcError::internal(
                        "the job's task ended without an outcome (see the server's log)",
                    )));
                }
            }
        }
        Guard(Arc::clone(running))
    }

    /// Records the outcome; the job is finished.
    pub(crate) fn finish(&self, outcome: Result<Value, XrpcError>) {
        {
            let mut state = lock(&self.state);
            state.outcome = Some(outcome);
            state.elapsed_at_end = Some(self.started.elapsed());
        }
        self.finished.send_replace(true);
    }

    /// The outcome, once the job ends within `wait`; `None` while it runs.
    pub(crate) async fn outcome_within(&self, wait: Duration) -> Option<Result<Value, XrpcError>> {
        let mut finished = self.finished.subscribe();
        let _ = tokio::time::timeout(wait, finished.wait_for(|done| *done)).await;
        lock(&self.state).outcome.clone()
    }

    /// `{id, kind, repo, params, state, progress: {done, total?, behind?},
    /// elapsedMs, result?, error?: {error, message}}` (`behind`: an index
    /// build's changes left to catch up with, while there are some).
    pub(crate) fn describe(&self) -> Value {
        let state = lock(&self.state);
        let elapsed = state
            .elapsed_at_end
            .unwrap_or_else(|| self.started.elapsed());
        let mut out = json!({
            "id": self.id,
            "kind": self.kind,
            "repo": self.repo,
            "params": self.params,
            "state": match &state.outcome {
                None => "running",
                Some(Ok(_)) => "succeeded",
                Some(Err(_)) => "failed",
            },
            "progress": {"done": state.done},
            "elapsedMs": u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
        });
        if let Some(total) = state.total {
            out["progress"]["total"] = json!(total);
        }
        if state.behind > 0 && state.outcome.is_none() {
            out["progress"]["behind"] = json!(state.behind);
        }
        match &state.outcome {
            Some(Ok(result)) => out["result"] = result.clone(),
            Some(Err(e)) => out["error"] = json!({"error": e.error, "message": e.message}),
            None => {}
        }
        out
    }
}
