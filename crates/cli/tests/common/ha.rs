//! Helpers for the high-availability tests: servers of one store on the
//! S3-compatible test server, writers that write through whichever of
//! them acknowledges, and the checks of what was acknowledged.

use super::{Answer, http_within};

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

pub const TOKEN: &str = "ha-token";
pub const DID: &str = "did:web:ha.example";
pub const POST: &str = "app.bsky.feed.post";
/// A short lease, yet long enough that a writer starved of CPU by the
/// other tests running beside it (2.4 s) does not lose it.
pub const LEASE: [&str; 4] = ["--lease-renew-ms", "250", "--lease-ttl-ms", "3000"];

/// An acknowledged write: which server answered, and what.
#[derive(Debug, Clone)]
pub struct Ack {
    pub port: u16,
    pub uri: String,
    pub cid: String,
    pub rev: String,
}

pub fn create(port: u16, text: &str, timeout: Duration) -> Option<Answer> {
    let body = serde_json::json!({"repo": DID, "collection": POST, "record": {"text": text}});
    http_within(
        port,
        "POST",
        "/xrpc/com.atproto.repo.createRecord",
        TOKEN,
        &body.to_string(),
        timeout,
    )
}

pub fn role(port: u16) -> Option<String> {
    let answer = http_within(port, "GET", "/xrpc/_health", "", "", Duration::from_secs(5))?;
    answer.json()["role"].as_str().map(str::to_owned)
}

/// Writers writing distinct records, each to whichever of `ports`
/// acknowledges it, until `stop`.
pub fn writers(
    count: usize,
    ports: [u16; 2],
    stop: &Arc<AtomicBool>,
    acks: &Arc<Mutex<Vec<Ack>>>,
) -> Vec<std::thread::JoinHandle<()>> {
    (0..count)
        .map(|w| {
            let (stop, acks) = (Arc::clone(stop), Arc::clone(acks));
            std::thread::spawn(move || {
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    let text = format!("w{w}-{i}");
                    'attempts: while !stop.load(Ordering::Relaxed) {
                        for port in ports {
                            let Some(answer) = create(port, &text, Duration::from_secs(3)) else {
                                continue;
                            };
                            if answer.status == 200 {
                                let v = answer.json();
                                acks.lock().unwrap().push(Ack {
                                    port,
                                    uri: v["uri"].as_str().unwrap().to_owned(),
                                    cid: v["cid"].as_str().unwrap().to_owned(),
                                    rev: v["commit"]["rev"].as_str().unwrap().to_owned(),
                                });
                                break 'attempts;
                            }
                        }
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    i += 1;
                }
            })
        })
        .collect()
}

/// Every record of the collection, by URI: its CID.
fn records(port: u16) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let mut cursor = String::new();
    loop {
        let path = format!(
            "/xrpc/com.atproto.repo.listRecords?repo={DID}&collection={POST}&limit=100{cursor}"
        );
        let answer = http_within(port, "GET", &path, TOKEN, "", Duration::from_secs(30))
            .expect("listRecords answers");
        assert_eq!(answer.status, 200, "{}", answer.body);
        let v = answer.json();
        for r in v["records"].as_array().unwrap() {
            out.insert(
                r["uri"].as_str().unwrap().to_owned(),
                r["cid"].as_str().unwrap().to_owned(),
            );
        }
        match v["cursor"].as_str() {
            Some(c) => cursor = format!("&cursor={c}"),
            None => return out,
        }
    }
}

/// Checks that every acknowledged write is stored, and that the old
/// writer's commits all precede the new writer's.
pub fn check_acknowledged(acks: &[Ack], old: u16, new: u16) {
    let stored = records(new);
    for ack in acks {
        assert_eq!(
            stored.get(&ack.uri),
            Some(&ack.cid),
            "acknowledged by :{} but not stored: {ack:?}",
            ack.port
        );
    }
    let revs = |port: u16| {
        acks.iter()
            .filter(|a| a.port == port)
            .map(|a| a.rev.clone())
            .collect::<Vec<_>>()
    };
    let (old_revs, new_revs) = (revs(old), revs(new));
    assert!(!old_revs.is_empty(), "the old writer acknowledged nothing");
    assert!(!new_revs.is_empty(), "the new writer acknowledged nothing");
    let last_old = old_revs.iter().max().unwrap();
    let first_new = new_revs.iter().min().unwrap();
    assert!(
        last_old < first_new,
        "the old writer acknowledged commit {last_old} after the new writer's {first_new}"
    );
}

/// Whether the server on `port` takes writes now (`_health?writer=true`).
pub fn writable(port: u16) -> Option<u16> {
    http_within(
        port,
        "GET",
        "/xrpc/_health?writer=true",
        "",
        "",
        Duration::from_secs(5),
    )
    .map(|a| a.status)
}

/// Waits up to 30 s for the server on `port` to become the writer.
pub fn wait_for_writer(port: u16) -> bool {
    wait_for_role(port, "writer")
}

/// Asks the server on `port` up to 300 times, 100 ms apart, until it says
/// it is `wanted`.
pub fn wait_for_role(port: u16, wanted: &str) -> bool {
    (0..300).any(|_| {
        if role(port).as_deref() == Some(wanted) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
        false
    })
}

/// A writer and a standby of one store on the S3-compatible test server,
/// both answering, the standby standing by.
pub struct Pair {
    pub location: String,
    pub writer: super::ServerProcess,
    pub standby: super::ServerProcess,
    pub wport: u16,
    pub sport: u16,
    /// The writer's standard error.
    pub writer_log: std::path::PathBuf,
    _tmp: testkit::TempDir,
}

/// Starts a [`Pair`] on a fresh location `name` (the standby with
/// `standby_extra` arguments too); `None`, saying so, without the test
/// server.
pub fn start_pair(name: &str, standby_extra: &[&str]) -> Option<Pair> {
    let Some(location) = testkit::s3_location(name) else {
        eprintln!("skipped: no S3-compatible test server (DATAREPO_TEST_S3)");
        return None;
    };
    let tmp = testkit::tempdir(name);
    let (wport, sport) = (super::free_port(), super::free_port());
    let writer_log = tmp.path().join("writer.log");
    let writer = super::spawn_serve(&location, wport, TOKEN, &LEASE, &writer_log);
    assert!(super::wait_until_up(wport), "the writer did not start");
    let mut args = vec!["--standby"];
    args.extend(LEASE);
    args.extend(standby_extra);
    let standby = super::spawn_serve(
        &location,
        sport,
        TOKEN,
        &args,
        &tmp.path().join("standby.log"),
    );
    assert!(super::wait_until_up(sport), "the standby did not start");
    // (The machine may be busy with other tests: health checks get time.)
    assert!(
        wait_for_role(wport, "writer"),
        "the writer is not the writer"
    );
    assert!(
        wait_for_role(sport, "standby"),
        "the standby is not standing by"
    );
    Some(Pair {
        location,
        writer,
        standby,
        wport,
        sport,
        writer_log,
        _tmp: tmp,
    })
}

/// Partition `p`'s role on the server on `port` (of a partitioned store),
/// and the writer it names.
pub fn partition_role(port: u16, p: usize) -> (Option<String>, Option<String>) {
    let Some(answer) = http_within(port, "GET", "/xrpc/_health", "", "", Duration::from_secs(5))
    else {
        return (None, None);
    };
    let entry = &answer.json()["partitions"][p];
    (
        entry["role"].as_str().map(str::to_owned),
        entry["writer"].as_str().map(str::to_owned),
    )
}

/// How many partitions the server on `port` writes.
pub fn partitions_written(port: u16) -> Option<usize> {
    let answer = http_within(port, "GET", "/xrpc/_health", "", "", Duration::from_secs(5))?;
    let health = answer.json();
    Some(
        health["partitions"]
            .as_array()?
            .iter()
            .filter(|p| p["role"] == "writer")
            .count(),
    )
}

/// Waits up to 120 s for `done`, asked every 100 ms; fails naming `what`.
pub fn wait_for(done: impl Fn() -> bool, what: &str) {
    assert!(
        (0..1200).any(|_| {
            if done() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
            false
        }),
        "not within 120 s: {what}"
    );
}
