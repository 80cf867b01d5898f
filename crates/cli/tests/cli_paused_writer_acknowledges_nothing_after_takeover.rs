//! A writer paused (SIGSTOP) past its lease while writes arrive: a standby
//! takes over; resumed, the old writer acknowledges nothing more (not even
//! the requests it was holding), says why and exits; every acknowledged
//! write is stored, and the old writer's commits all precede the new one's.

use crate::common::ha::{self, check_acknowledged, create, wait_for_writer, writers};

use std::{
    process::Command,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

fn signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn a_paused_writer_acknowledges_nothing_after_a_standby_takes_over() {
    // Bound whole: its temporary directory lives as long as the test.
    let Some(mut pair) = ha::start_pair("standby-pause", &[]) else {
        return;
    };
    let (wport, sport) = (pair.wport, pair.sport);

    let stop = Arc::new(AtomicBool::new(false));
    let acks = Arc::new(Mutex::new(Vec::new()));
    let threads = writers(8, [wport, sport], &stop, &acks);
    std::thread::sleep(Duration::from_millis(1_000));
    let pid = pair.writer.0.id();
    signal(pid, "-STOP");
    // Requests the paused writer holds, waiting for as long as it takes.
    let held: Vec<_> = (0..4)
        .map(|n| {
            std::thread::spawn(move || {
                create(wport, &format!("held-{n}"), Duration::from_secs(60)).map(|a| a.status)
            })
        })
        .collect();
    assert!(
        wait_for_writer(sport),
        "the standby did not take over within 30 s"
    );
    // The new writer takes writes for a while before the old one resumes.
    std::thread::sleep(Duration::from_millis(1_500));
    signal(pid, "-CONT");

    let exited = (0..200).find_map(|_| {
        std::thread::sleep(Duration::from_millis(100));
        pair.writer.0.try_wait().unwrap()
    });
    let status = exited.expect("the resumed writer did not exit within 20 s");
    assert!(!status.success(), "{status}");
    let log = std::fs::read_to_string(&pair.writer_log).unwrap();
    assert!(log.contains("writer lease"), "{log}");
    for h in held {
        let answer = h.join().unwrap();
        assert_ne!(
            answer,
            Some(200),
            "the paused writer acknowledged a write it held after the takeover"
        );
    }
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    let acks = acks.lock().unwrap().clone();
    check_acknowledged(&acks, wport, sport);
    assert!(
        pair.standby.terminate(),
        "the new writer did not stop cleanly"
    );
}
