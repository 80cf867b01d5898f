//! High availability on S3-compatible storage: a standby
//! (`serve --standby`) refuses writes naming the writer, and when the
//! writer is killed (SIGKILL) under 32 concurrent writers it takes the
//! lease over and takes writes; every acknowledged write is then in the
//! store, and every commit the old writer acknowledged comes before every
//! one the new writer did.

use crate::common::{
    self,
    ha::{self, check_acknowledged, create, wait_for_writer, writable, writers},
};

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

#[test]
fn a_standby_takes_over_a_killed_writer_and_loses_no_acknowledged_write() {
    // Bound whole: its temporary directory lives as long as the test.
    let Some(mut pair) = ha::start_pair("standby-kill", &[]) else {
        return;
    };
    let (wport, sport) = (pair.wport, pair.sport);
    assert!(create(wport, "first", Duration::from_secs(10)).is_some_and(|a| a.status == 200));

    // A standby refuses a write, naming the writer.
    let refused = create(sport, "refused", Duration::from_secs(10)).unwrap();
    assert_eq!(refused.status, 503, "{}", refused.body);
    assert_eq!(refused.json()["error"], "NotWriter");
    assert_eq!(refused.header("retry-after"), Some("1"));
    let writer_url = format!("http://127.0.0.1:{wport}");
    assert_eq!(refused.header("datarepo-writer"), Some(writer_url.as_str()));
    let health = common::http_within(
        sport,
        "GET",
        "/xrpc/_health",
        "",
        "",
        Duration::from_secs(5),
    )
    .unwrap();
    assert_eq!(health.json()["writer"], writer_url.as_str());
    assert_eq!(writable(wport), Some(200));
    assert_eq!(writable(sport), Some(503));

    let stop = Arc::new(AtomicBool::new(false));
    let acks = Arc::new(Mutex::new(Vec::new()));
    let threads = writers(32, [wport, sport], &stop, &acks);
    std::thread::sleep(Duration::from_millis(1_500));
    pair.writer.0.kill().unwrap();
    pair.writer.0.wait().unwrap();
    assert!(
        wait_for_writer(sport),
        "the standby did not take over within 30 s"
    );
    assert_eq!(writable(sport), Some(200));
    std::thread::sleep(Duration::from_millis(1_500));
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }

    let acks = acks.lock().unwrap().clone();
    check_acknowledged(&acks, wport, sport);
    // The store is whole.
    let out = common::datarepo(&["--store", &pair.location, "check"], "");
    assert!(out.status.success(), "{out:?}");
    assert!(
        pair.standby.terminate(),
        "the new writer did not stop cleanly"
    );
}
