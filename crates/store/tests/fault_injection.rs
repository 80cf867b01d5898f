//! Fault injection: an object store that fails a fraction of calls (and
//! delays others) under SlateDB. Commits, bulk commits too, then fail with
//! a typed error or succeed whole; no partial commit is ever visible; and
//! once the faults stop, a reopened store works and holds every
//! acknowledged commit.

use crate::common;

use std::{
    fmt,
    ops::Range,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use async_trait::async_trait;
use bytes::Bytes;
use common::block;
use futures::stream::BoxStream;
use slatedb::object_store::{
    self, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, local::LocalFileSystem, path::Path,
};
use store::{Block, Commit, Head, RecordChange, SlateKv, Store};

/// Fails every `every`-th data call (never when 0; all when 1), and while
/// failing delays every 7th call by 20 ms.
#[derive(Debug)]
struct Faulty {
    inner: Arc<dyn ObjectStore>,
    every: AtomicU64,
    calls: AtomicU64,
}

impl fmt::Display for Faulty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Faulty({})", self.inner)
    }
}

impl Faulty {
    async fn gate(&self) -> object_store::Result<()> {
        let every = self.every.load(Ordering::Relaxed);
        if every == 0 {
            return Ok(());
        }
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        if n % 7 == 3 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if n.is_multiple_of(every) {
            return Err(object_store::Error::Generic {
                store: "faulty",
                source: "injected fault".into(),
            });
        }
        Ok(())
    }
}

#[async_trait]
impl ObjectStore for Faulty {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.gate().await?;
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.gate().await?;
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        self.gate().await?;
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(
        &self,
        location: &Path,
        ranges: &[Range<u64>],
    ) -> object_store::Result<Vec<Bytes>> {
        self.gate().await?;
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.gate().await?;
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: object_store::CopyOptions,
    ) -> object_store::Result<()> {
        self.gate().await?;
        self.inner.copy_opts(from, to, options).await
    }
}

const REPO: &str = "did:web:faults";

fn commit(expected: Option<cid::Cid>, rev: u64) -> Commit {
    let (c, bytes) = block(rev);
    let (r, rbytes) = block(10_000 + rev);
    Commit {
        repo: REPO.into(),
        expected,
        head: Head { commit: c, rev },
        blocks: vec![
            Block::verify(c, bytes).unwrap(),
            Block::verify(r, rbytes.clone()).unwrap(),
        ],
        records: vec![RecordChange {
            collection: "a.b.c".into(),
            rkey: format!("r{rev:05}"),
            record: Some(Block::verify(r, rbytes).unwrap()),
        }],
        collections: Vec::new(),
        index: Vec::new(),
        history: store::LogChange::default(),
        event: None,
        stream: None,
    }
}

/// Every record in the index belongs to a commit in the log, and both
/// blocks of every logged commit are present: no partial commit.
async fn consistent(store: &Store<SlateKv>) -> u64 {
    let head = store.head(REPO).await.unwrap();
    let log = store.commit_log(REPO, false, usize::MAX).await.unwrap();
    let recs = store
        .list_records(REPO, "a.b.c", None, false, usize::MAX)
        .await
        .unwrap();
    assert_eq!(
        log.len(),
        recs.len(),
        "record index and commit log disagree"
    );
    for (rev, cid) in &log {
        assert_eq!(*cid, block(*rev).0);
        assert!(store.get_block(cid).await.unwrap().is_some());
        assert!(
            store
                .get_block(&block(10_000 + rev).0)
                .await
                .unwrap()
                .is_some()
        );
    }
    assert_eq!(head.map(|h| h.rev), log.last().map(|(r, _)| *r));
    head.map_or(0, |h| h.rev)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_surface_as_errors_and_never_leave_partial_commits() {
    let tmp = testkit::tempdir("faults");
    let dir = tmp.path();
    let local: Arc<dyn ObjectStore> = Arc::new(LocalFileSystem::new_with_prefix(dir).unwrap());
    let faulty = Arc::new(Faulty {
        inner: Arc::clone(&local),
        every: AtomicU64::new(0),
        calls: AtomicU64::new(0),
    });
    let kv = SlateKv::open_object_store("db", Arc::clone(&faulty) as Arc<dyn ObjectStore>)
        .await
        .unwrap();
    let store = Store::new(kv.clone()).with_durability_timeout(Duration::from_secs(3));
    let mut head: Option<Head> = None;
    let mut acked = 0u64;
    for rev in 1..=5 {
        store
            .commit(commit(head.map(|h| h.commit), rev))
            .await
            .unwrap();
        head = Some(Head {
            commit: block(rev).0,
            rev,
        });
        acked = rev;
    }

    // Transient faults (every third call fails, some are slow): SlateDB's
    // retries absorb them; every commit either is acknowledged whole or fails.
    faulty.every.store(3, Ordering::Relaxed);
    for rev in 6..=20 {
        let expected = head.map(|h| h.commit);
        match tokio::time::timeout(Duration::from_secs(5), store.commit(commit(expected, rev)))
            .await
        {
            Ok(Ok(())) => {
                head = Some(Head {
                    commit: block(rev).0,
                    rev,
                });
                acked = rev;
            }
            Ok(Err(_)) | Err(_) => break,
        }
    }
    let transient_acked = acked;

    // An outage (every call fails): nothing more is acknowledged; the
    // commit fails with a typed error (here: durability not confirmed in
    // time, since SlateDB keeps retrying).
    faulty.every.store(1, Ordering::Relaxed);
    let outage = store
        .commit(commit(head.map(|h| h.commit), acked + 1))
        .await;
    assert!(
        matches!(
            outage,
            Err(store::Error::DurabilityTimeout(_) | store::Error::Unavailable(_))
        ),
        "{outage:?}"
    );
    // A bulk commit (an import) on the current head fails the same way,
    // while writing its blocks ahead, within the durability timeout.
    let now = store.head(REPO).await.unwrap().unwrap();
    let bulk = tokio::time::timeout(
        Duration::from_secs(20),
        store.bulk_commit(commit(Some(now.commit), now.rev + 1), |_, _| {}),
    )
    .await
    .expect("a bulk commit during an outage gives up in time");
    assert!(
        matches!(
            bulk,
            Err(store::Error::DurabilityTimeout(_) | store::Error::Unavailable(_))
        ),
        "{bulk:?}"
    );
    eprintln!(
        "transient faults: {} commits acknowledged; outage: {outage:?}; bulk: {bulk:?}",
        transient_acked - 5
    );
    faulty.every.store(0, Ordering::Relaxed);
    let _ = tokio::time::timeout(Duration::from_secs(5), kv.close()).await;

    // Faults over: reopen, everything acknowledged is there, nothing partial,
    // and the store takes new commits.
    let kv = SlateKv::open_object_store("db", local).await.unwrap();
    let store = Store::new(kv.clone());
    let rev = consistent(&store).await;
    assert!(rev >= acked, "acknowledged rev {acked} lost (head {rev})");
    let head = store.head(REPO).await.unwrap().unwrap();
    store
        .commit(commit(Some(head.commit), rev + 1))
        .await
        .unwrap();
    assert_eq!(consistent(&store).await, rev + 1);
    kv.close().await.unwrap();
}
