//! The writer lease's timing: a writer whose renewals stop landing (here:
//! every put of its object store delayed past the lease's time to live)
//! stops acknowledging before a standby can take the lease over; a lease
//! renewed on time is never taken; of two standbys, exactly one takes it.

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
use futures::stream::BoxStream;
use server::{
    Role, Roles,
    lease::{LeaseEnd, LeaseTiming, keep, take, wait_for_takeover},
};
use slatedb::object_store::{
    self, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, memory::InMemory, path::Path,
};
use store::{Lease, LeaseHolder};
use tokio::time::Instant;

/// Delays every put by `delay_ms` (the network between a writer and its
/// object store slowing down).
#[derive(Debug)]
struct DelayedPuts {
    inner: Arc<dyn ObjectStore>,
    delay_ms: AtomicU64,
}

impl fmt::Display for DelayedPuts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DelayedPuts({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for DelayedPuts {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        let delay = self.delay_ms.load(Ordering::Relaxed);
        tokio::time::sleep(Duration::from_millis(delay)).await;
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(
        &self,
        location: &Path,
        ranges: &[Range<u64>],
    ) -> object_store::Result<Vec<Bytes>> {
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
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: object_store::CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

const TIMING: LeaseTiming = LeaseTiming {
    renew: Duration::from_millis(100),
    ttl: Duration::from_millis(1_000),
};

fn holder(id: &str) -> LeaseHolder {
    LeaseHolder {
        id: id.to_owned(),
        address: format!("http://{id}.example"),
        renew_ms: 100,
        ttl_ms: 1_000,
        term: 0,
        renewal: 0,
    }
}

/// When `roles` first stops acknowledging, checked every millisecond.
async fn stopped_acknowledging(roles: Arc<Roles>) -> Instant {
    loop {
        if !roles.may_acknowledge() {
            return Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_whose_renewals_are_delayed_stops_before_a_standby_takes_over() {
    let shared: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let delayed = Arc::new(DelayedPuts {
        inner: Arc::clone(&shared),
        delay_ms: AtomicU64::new(0),
    });
    let writer_lease = Lease::beside(delayed.clone(), "db");
    let standby_lease = Lease::beside(Arc::clone(&shared), "db");

    let held = take(&writer_lease, &holder("writer")).await.unwrap();
    assert_eq!(held.holder.term, 1);
    let writer_roles = Arc::new(Roles::new(Role::Writer));
    let keeping = tokio::spawn(keep(writer_lease, held, TIMING, Arc::clone(&writer_roles)));
    let standby_roles = Arc::new(Roles::new(Role::Standby { writer: None }));
    let waiting = {
        let roles = Arc::clone(&standby_roles);
        tokio::spawn(async move {
            wait_for_takeover(&standby_lease, &holder("standby"), TIMING, &roles).await
        })
    };

    // Renewed on time, the lease is never taken over, for twice its ttl.
    tokio::time::sleep(TIMING.ttl * 2).await;
    assert!(
        !waiting.is_finished(),
        "a standby took a lease renewed on time"
    );
    assert!(writer_roles.may_acknowledge());
    assert_eq!(
        standby_roles.role(),
        Role::Standby {
            writer: Some("http://writer.example".to_owned())
        }
    );

    // Every put of the writer now takes four times the ttl.
    delayed.delay_ms.store(4_000, Ordering::Relaxed);
    let stopped = tokio::spawn(stopped_acknowledging(Arc::clone(&writer_roles)));
    let taken = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("the standby takes the lapsed lease over")
        .unwrap();
    let stopped = tokio::time::timeout(Duration::from_secs(10), stopped)
        .await
        .expect("the writer stops acknowledging")
        .unwrap();
    assert!(
        stopped < taken.started,
        "the writer acknowledged until {:?} after the standby began taking over",
        stopped - taken.started
    );
    assert_eq!(taken.holder.term, 2);
    assert_eq!(taken.holder.id, "standby");
    let end = tokio::time::timeout(Duration::from_secs(10), keeping)
        .await
        .expect("the writer stops keeping the lease")
        .unwrap();
    assert!(
        matches!(end, LeaseEnd::Lapsed { .. } | LeaseEnd::TakenOver { .. }),
        "{end:?}"
    );
    assert!(!writer_roles.may_acknowledge());

    // The writer's delayed renewal, landing late, did not undo the
    // takeover.
    tokio::time::sleep(Duration::from_millis(4_500)).await;
    let (now, _) = Lease::beside(shared, "db").read().await.unwrap().unwrap();
    assert_eq!((now.id.as_str(), now.term), ("standby", 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_two_standbys_exactly_one_takes_a_lapsed_lease() {
    let shared: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let lease = Lease::beside(Arc::clone(&shared), "db");
    // A writer that took the lease and died.
    take(&lease, &holder("dead")).await.unwrap();
    let standbys: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|id| {
            let lease = lease.clone();
            tokio::spawn(async move {
                let roles = Roles::new(Role::Standby { writer: None });
                wait_for_takeover(&lease, &holder(id), TIMING, &roles).await
            })
        })
        .collect();
    let (winner, _, losers) = futures::future::select_all(standbys).await;
    let winner = winner.unwrap();
    assert_eq!(winner.holder.term, 2);
    // The loser goes on watching the winner, which renews nothing here:
    // after the winner's ttl it would take over in turn (term 3), never
    // at the same term.
    let loser = losers.into_iter().next().unwrap();
    let second = tokio::time::timeout(Duration::from_secs(5), loser)
        .await
        .expect("the loser takes the unrenewed lease a ttl later")
        .unwrap();
    assert_eq!(second.holder.term, 3);
    assert_ne!(second.holder.id, winner.holder.id);
    assert!(second.started.duration_since(winner.started) >= TIMING.ttl);
}
