//! A running collection shows its phase and progress in the metrics
//! (`datarepo_gc_phase`, `_phase_done`, `_running_seconds`), all back to
//! zero once none runs; and stopping the server's collection loop stops a
//! collection under way on its own thread.

use crate::common;

use std::{
    sync::{Arc, atomic::Ordering},
    time::Duration,
};

use common::{DID, SlowKv, TestServer, config, env, sample};
use repo::Repos;
use serde_json::json;
use server::{GcSchedule, Server};
use store::{Retention, Store};

const POST: &str = "app.bsky.feed.post";

async fn metric(srv: &TestServer, name: &str) -> f64 {
    sample(&srv.scrape().await, name, "").unwrap_or_else(|| panic!("no {name}"))
}

async fn write(srv: &TestServer, i: usize) {
    let (status, body) = srv
        .post(
            "com.atproto.repo.createRecord",
            &json!({"repo": DID, "collection": POST, "record": {"$type": POST, "text": format!("post {i}")}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
}

/// Scrapes until a collection is seen under way: its (phase, seconds).
async fn seen_running(srv: &TestServer) -> (f64, f64) {
    for _ in 0..500 {
        let phase = metric(srv, "datarepo_gc_phase").await;
        if phase > 0.0 {
            return (phase, metric(srv, "datarepo_gc_running_seconds").await);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no collection seen running within 10 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_collection_reports_its_phase_and_stops_with_the_loop() {
    // Every scan takes 150 ms once slowed: a collection lists, reads its
    // roots and sweeps with scans, so it runs long enough to be seen.
    let kv = SlowKv::new(Duration::from_millis(150), false);
    let repos = Arc::new(Repos::new(Arc::new(Store::new(kv.clone())), env()));
    let server = Server::new(Arc::clone(&repos), config());
    let gc = server.spawn_gc(GcSchedule {
        interval: Duration::from_millis(50),
        retention: Retention::Last(1),
    });
    let srv = TestServer::start_router(server.router()).await;
    assert_eq!(metric(&srv, "datarepo_gc_phase").await, 0.0);
    for i in 0..5 {
        write(&srv, i).await;
    }
    kv.slow.store(true, Ordering::Relaxed);

    let (phase, _) = seen_running(&srv).await;
    assert!((1.0..=3.0).contains(&phase), "phase {phase}");
    // Later in the same collection: time has passed, and the phase is
    // the same or a later one.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let later = metric(&srv, "datarepo_gc_phase").await;
    if later > 0.0 {
        assert!(later >= phase, "phase {phase} then {later}");
        assert!(metric(&srv, "datarepo_gc_running_seconds").await > 0.0);
    }
    // It ends; with nothing committed since, none starts again, and the
    // gauges are back to zero.
    let ok = r#"outcome="ok""#;
    for _ in 0..500 {
        if sample(&srv.scrape().await, "datarepo_gc_runs_total", ok).unwrap_or(0.0) >= 1.0
            && metric(&srv, "datarepo_gc_phase").await == 0.0
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(sample(&srv.scrape().await, "datarepo_gc_runs_total", ok).unwrap() >= 1.0);
    for name in [
        "datarepo_gc_phase",
        "datarepo_gc_phase_done",
        "datarepo_gc_running_seconds",
    ] {
        assert_eq!(metric(&srv, name).await, 0.0, "{name}");
    }

    // A commit, so that a collection starts; stopping the loop while it
    // runs stops it.
    kv.slow.store(false, Ordering::Relaxed);
    write(&srv, 99).await;
    kv.slow.store(true, Ordering::Relaxed);
    seen_running(&srv).await;
    tokio::time::timeout(Duration::from_secs(10), gc.stop())
        .await
        .expect("the collection under way stops with the loop");
    srv.stop().await;
}
