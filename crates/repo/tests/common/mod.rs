//! Shared helpers for the repo tests.
#![allow(dead_code)]

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use repo::{Env, Repos};
use store::{MemoryKv, Store};

/// A clock that starts at 2026-01-01 and moves 1 ms per reading.
pub(crate) fn env() -> Env {
    let t = Arc::new(AtomicU64::new(1_767_225_600_000_000));
    Env::new(move || t.fetch_add(1000, Ordering::Relaxed), 7)
}

/// The wall clock plus an offset (seconds) the test moves: the object
/// store stamps blob objects with the wall clock, so collections of blobs
/// are tested against it.
#[allow(clippy::disallowed_methods)]
pub(crate) fn env_ahead_by(offset_secs: &Arc<AtomicU64>, clock_id: u16) -> Env {
    let offset = Arc::clone(offset_secs);
    Env::new(
        move || {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_micros() as u64;
            now + offset.load(Ordering::Relaxed) * 1_000_000
        },
        clock_id,
    )
}

/// Repositories over a fresh in-memory store.
pub(crate) fn repos() -> Repos<MemoryKv> {
    Repos::new(Arc::new(Store::new(MemoryKv::new())), env())
}

pub(crate) fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// `n` records created in `collection`, with rkeys `post0000`, `post0001`, …
pub(crate) fn posts(collection: &str, n: usize) -> Vec<repo::Write> {
    (0..n)
        .map(|i| repo::Write::Create {
            collection: collection.into(),
            rkey: Some(post_rkey(i)),
            value: serde_json::json!({ "text": format!("post {i}") }),
        })
        .collect()
}

/// Creates of every (rkey, record) of `model` in `collection`.
pub(crate) fn creates(
    collection: &str,
    model: &std::collections::BTreeMap<String, serde_json::Value>,
) -> Vec<repo::Write> {
    model
        .iter()
        .map(|(rkey, value)| repo::Write::Create {
            collection: collection.into(),
            rkey: Some(rkey.clone()),
            value: value.clone(),
        })
        .collect()
}

/// The rkey of the `i`th of [`posts`].
pub(crate) fn post_rkey(i: usize) -> String {
    format!("post{i:04}")
}

/// Where a [`PausingKv`] waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PauseAt {
    /// A scan of the repository heads: a collection reading its roots,
    /// after it listed its candidates.
    HeadScan,
    /// A write made only of deletions: a collection's first sweep batch.
    Deletions,
    /// Any write: a commit being applied, its repository lock held.
    Write,
}

/// The in-memory store, except that it waits once at `at` when armed, so
/// that a test lands commits at that point of a collection.
#[derive(Debug, Clone)]
pub(crate) struct PausingKv {
    inner: store::MemoryKv,
    at: PauseAt,
    pause: Arc<std::sync::Mutex<Option<tokio::sync::oneshot::Receiver<()>>>>,
    reached: Arc<tokio::sync::Notify>,
}

impl PausingKv {
    pub(crate) fn new(at: PauseAt) -> Self {
        Self {
            inner: store::MemoryKv::new(),
            at,
            pause: Arc::default(),
            reached: Arc::default(),
        }
    }

    /// Arms the pause; sending on the returned channel releases it.
    pub(crate) fn arm(&self) -> tokio::sync::oneshot::Sender<()> {
        let (release, armed) = tokio::sync::oneshot::channel();
        *self.pause.lock().unwrap() = Some(armed);
        release
    }

    /// Returns once the armed pause is reached.
    pub(crate) async fn reached(&self) {
        self.reached.notified().await;
    }

    async fn wait_if(&self, here: bool) {
        if !here {
            return;
        }
        let armed = self.pause.lock().unwrap().take();
        if let Some(release) = armed {
            self.reached.notify_one();
            release.await.unwrap();
        }
    }
}

impl store::Kv for PausingKv {
    fn blobs(&self) -> store::Blobs {
        self.inner.blobs()
    }

    async fn get(&self, key: &[u8]) -> Result<Option<bytes::Bytes>, store::Error> {
        self.inner.get(key).await
    }
    async fn apply(&self, ops: Vec<store::WriteOp>) -> Result<store::Durability, store::Error> {
        let deletions = ops.iter().all(|op| matches!(op, store::WriteOp::Delete(_)));
        self.wait_if(self.at == PauseAt::Write || (self.at == PauseAt::Deletions && deletions))
            .await;
        self.inner.apply(ops).await
    }
    async fn scan(
        &self,
        range: &keycodec::KeyRange,
        reverse: bool,
        limit: usize,
    ) -> Result<Vec<(bytes::Bytes, bytes::Bytes)>, store::Error> {
        let heads = *range == keycodec::RecordType::Head.range();
        self.wait_if(self.at == PauseAt::HeadScan && heads).await;
        self.inner.scan(range, reverse, limit).await
    }
}

/// Lands a commit of `did` at `rev` on the head `prev` with tree `data`,
/// written straight to the store (no repository checks): `blocks` are the
/// new shards, `records` the record-index changes (their blocks included).
pub(crate) async fn land_raw_commit(
    repos: &Repos<MemoryKv>,
    did: &str,
    prev: &repo::HeadInfo,
    rev: rkey::Tid,
    data: cid::Cid,
    mut blocks: Vec<store::Block>,
    records: Vec<store::RecordChange>,
) {
    let commit = repo::CommitData::new(did.into(), rev, data, Some(prev.commit)).encode();
    let cid = commit.cid();
    blocks.push(commit);
    repos
        .store()
        .commit(store::Commit {
            repo: did.into(),
            expected: Some(prev.commit),
            head: store::Head {
                commit: cid,
                rev: rev.as_u64(),
            },
            blocks,
            records,
            collections: Vec::new(),
            index: Vec::new(),
            history: store::LogChange::default(),
            event: None,
            stream: None,
        })
        .await
        .unwrap();
}

/// `did`'s head CAR.
pub(crate) async fn export(repos: &Repos<MemoryKv>, did: &str) -> Vec<u8> {
    let (car, _) = repos
        .open(did)
        .await
        .unwrap()
        .export_car(Vec::new(), None, |_| {})
        .await
        .unwrap();
    car
}

/// Stops a progress callback once, on the thread that calls it, until the
/// test lets it go: `pause` goes into the callback, the test awaits
/// [`Paused::reached`] and then sends on [`Paused::release`].
pub(crate) struct Paused {
    reached: tokio::sync::oneshot::Receiver<()>,
    pub(crate) release: std::sync::mpsc::Sender<()>,
}

impl Paused {
    pub(crate) fn new() -> (Self, Pause) {
        let (reached, reached_rx) = tokio::sync::oneshot::channel();
        let (release, released) = std::sync::mpsc::channel();
        (
            Self {
                reached: reached_rx,
                release,
            },
            Pause {
                reached: Some(reached),
                released,
            },
        )
    }

    /// Once the callback has stopped.
    pub(crate) async fn reached(&mut self) {
        (&mut self.reached).await.unwrap();
    }
}

/// The callback's side of [`Paused`].
pub(crate) struct Pause {
    reached: Option<tokio::sync::oneshot::Sender<()>>,
    released: std::sync::mpsc::Receiver<()>,
}

impl Pause {
    /// The first time `now` holds, blocks until released.
    pub(crate) fn once(&mut self, now: bool) {
        if now && let Some(reached) = self.reached.take() {
            reached.send(()).unwrap();
            self.released.recv().unwrap();
        }
    }
}
