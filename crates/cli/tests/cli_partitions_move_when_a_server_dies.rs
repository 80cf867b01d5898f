//! A store of 4 partitions on S3-compatible storage served by 4 processes,
//! each writing one partition and standing by for the others: writes to
//! 1,000 repositories by 8 concurrent writers, sent to any process, land in their repository's partition (forwarded to its
//! writer); when the process writing partition 0 (and sequencing the
//! merged firehose) is killed, another takes its partition over; every
//! acknowledged write is then stored, `listRepos` pages through every
//! partition's repositories, `check` passes in every partition, and the
//! merged firehose, followed across the move, delivers every commit once,
//! numbered 1, 2, 3, … as a replay from the start numbers them.

use crate::common::{
    self,
    ha::{LEASE, partition_role, wait_for},
    http_within,
};

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use serde_json::{Value, json};

const TOKEN: &str = "partitions-token";
const POST: &str = "app.bsky.feed.post";
const REPOS: usize = 1_000;
const PARTITIONS: u32 = 4;

fn did(i: usize) -> String {
    format!("did:web:p{i}.example")
}

/// An acknowledged write.
#[derive(Debug, Clone)]
struct Ack {
    repo: String,
    uri: String,
    cid: String,
    rev: String,
}

#[test]
fn partitions_move_to_the_live_servers_and_lose_nothing() {
    let Some(location) = testkit::s3_location("partitions-move") else {
        eprintln!("skipped: no S3-compatible test server (DATAREPO_TEST_S3)");
        return;
    };
    let tmp = testkit::tempdir("partitions-move");
    let init = common::datarepo(
        &[
            "--store",
            &location,
            "init",
            "--partitions",
            &PARTITIONS.to_string(),
        ],
        "",
    );
    assert!(init.status.success(), "{init:?}");

    let ports: Vec<u16> = (0..PARTITIONS).map(|_| common::free_port()).collect();
    let mut servers: Vec<Option<common::ServerProcess>> = ports
        .iter()
        .enumerate()
        .map(|(p, port)| {
            let owned = p.to_string();
            let mut args = vec!["--partitions-owned", owned.as_str()];
            args.extend(LEASE);
            Some(common::spawn_serve(
                &location,
                *port,
                TOKEN,
                &args,
                &tmp.path().join(format!("serve-{p}.log")),
            ))
        })
        .collect();
    for port in &ports {
        assert!(common::wait_until_up(*port), "a server did not start");
    }
    for (p, port) in ports.iter().enumerate() {
        wait_for(
            || partition_role(*port, p).0.as_deref() == Some("writer"),
            &format!("server {p} writes partition {p}"),
        );
    }

    // A follower of the merged firehose on a server that stays up.
    let follow_log = tmp.path().join("follow.jsonl");
    let mut follower = common::spawn_follower(ports[3], &follow_log, &[]);
    // And of the merged /subscribe stream, on another.
    let jetstream_log = tmp.path().join("jetstream.jsonl");
    let mut jetstream = common::spawn_follower(ports[2], &jetstream_log, &["--jetstream"]);

    let live = Arc::new(Mutex::new(ports.clone()));
    let stop = Arc::new(AtomicBool::new(false));
    let acks = Arc::new(Mutex::new(Vec::<Ack>::new()));
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let (live, stop, acks) = (Arc::clone(&live), Arc::clone(&stop), Arc::clone(&acks));
            std::thread::spawn(move || {
                let mut i = w;
                while !stop.load(Ordering::Relaxed) {
                    let repo = did(i % REPOS);
                    let body = json!({"repo": repo, "collection": POST,
                                      "record": {"text": format!("w{w}-{i}")}});
                    'attempts: while !stop.load(Ordering::Relaxed) {
                        let ports = live.lock().unwrap().clone();
                        // Each write through a different server in turn.
                        for k in 0..ports.len() {
                            let port = ports[(i + k) % ports.len()];
                            let Some(answer) = http_within(
                                port,
                                "POST",
                                "/xrpc/com.atproto.repo.createRecord",
                                TOKEN,
                                &body.to_string(),
                                Duration::from_secs(5),
                            ) else {
                                continue;
                            };
                            if answer.status == 200 {
                                let v = answer.json();
                                acks.lock().unwrap().push(Ack {
                                    repo: repo.clone(),
                                    uri: v["uri"].as_str().unwrap().to_owned(),
                                    cid: v["cid"].as_str().unwrap().to_owned(),
                                    rev: v["commit"]["rev"].as_str().unwrap().to_owned(),
                                });
                                break 'attempts;
                            }
                        }
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    i += 8;
                }
            })
        })
        .collect();

    // Some hundreds of repositories written before the kill, the rest after.
    let acked = || acks.lock().unwrap().len();
    wait_for(|| acked() >= 400, "400 writes before the kill");
    // The writer of partition 0, which also sequences the merged firehose.
    live.lock().unwrap().retain(|p| *p != ports[0]);
    let mut killed = servers[0].take().unwrap();
    killed.0.kill().unwrap();
    killed.0.wait().unwrap();
    let mover = (0..300)
        .find_map(|_| {
            let found =
                (1..4).find(|&s| partition_role(ports[s], 0).0.as_deref() == Some("writer"));
            if found.is_none() {
                std::thread::sleep(Duration::from_millis(100));
            }
            found
        })
        .expect("no server took partition 0 over within 30 s");
    assert!(
        (1..4).all(|s| s == mover || partition_role(ports[s], 0).0.as_deref() == Some("standby")),
        "more than one server writes partition 0"
    );
    let at_takeover = acked();
    wait_for(
        || acked() >= (at_takeover + 400).max(REPOS + 200),
        "400 writes after the takeover, and every repository written",
    );
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    let acks = acks.lock().unwrap().clone();
    assert!(
        acks.len() > 40,
        "too few writes to mean anything: {}",
        acks.len()
    );

    // Every acknowledged write is stored, read through any live server.
    let survivor = ports[3];
    for ack in &acks {
        let rkey = ack.uri.rsplit('/').next().unwrap();
        let path = format!(
            "/xrpc/com.atproto.repo.getRecord?repo={}&collection={POST}&rkey={rkey}",
            ack.repo
        );
        let stored = (0..100).find_map(|_| {
            let answer = http_within(survivor, "GET", &path, "", "", Duration::from_secs(10))?;
            if answer.status == 200 {
                return Some(answer.json()["cid"].as_str()?.to_owned());
            }
            std::thread::sleep(Duration::from_millis(100));
            None
        });
        assert_eq!(
            stored.as_deref(),
            Some(ack.cid.as_str()),
            "not stored: {ack:?}"
        );
    }

    // listRepos pages through every partition's repositories, in order.
    let written: BTreeSet<String> = acks.iter().map(|a| a.repo.clone()).collect();
    let mut listed = Vec::new();
    let mut cursor = String::new();
    loop {
        let path = format!("/xrpc/com.atproto.sync.listRepos?limit=97{cursor}");
        let page = http_within(survivor, "GET", &path, "", "", Duration::from_secs(10)).unwrap();
        assert_eq!(page.status, 200, "{}", page.body);
        let page = page.json();
        listed.extend(
            page["repos"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["did"].as_str().unwrap().to_owned()),
        );
        match page["cursor"].as_str() {
            Some(c) => cursor = format!("&cursor={c}"),
            None => break,
        }
    }
    let expected: Vec<String> = written.iter().cloned().collect();
    assert_eq!(listed, expected, "listRepos across partitions");

    // The merged firehose: every commit once, numbered without a gap,
    // as a replay from the start numbers them too.
    let newest_rev: BTreeMap<&str, &str> = acks.iter().fold(BTreeMap::new(), |mut m, a| {
        let e = m.entry(a.repo.as_str()).or_insert(a.rev.as_str());
        if a.rev.as_str() > *e {
            *e = a.rev.as_str();
        }
        m
    });
    let followed = common::lines_once(
        &follow_log,
        |events| {
            let seen: BTreeSet<(String, String)> = events.iter().map(common::commit_of).collect();
            newest_rev
                .iter()
                .all(|(repo, rev)| seen.contains(&((*repo).to_owned(), (*rev).to_owned())))
        },
        "the follower receives every commit",
    );
    drop(follower.0.kill());
    let _ = follower.0.wait();
    let seqs: Vec<u64> = followed
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    let numbered: Vec<u64> = (1..=seqs.len() as u64).collect();
    assert_eq!(seqs, numbered, "the merged stream skipped or repeated");
    let commits: BTreeSet<(String, String)> = followed.iter().map(common::commit_of).collect();
    assert_eq!(commits.len(), followed.len(), "a commit came twice");
    for ack in &acks {
        assert!(
            commits.contains(&(ack.repo.clone(), ack.rev.clone())),
            "the merged stream lacks {ack:?}"
        );
    }
    let replayed = common::follow(ports[1], 0, followed.len());
    let key = |e: &Value| (e["seq"].clone(), e["repo"].clone(), e["rev"].clone());
    assert_eq!(
        replayed.iter().map(key).collect::<Vec<_>>(),
        followed.iter().map(key).collect::<Vec<_>>(),
        "a replay from another server numbers the stream differently"
    );

    // The merged /subscribe stream, followed across the move: every
    // acknowledged record once.
    let created = |events: &[Value]| -> Vec<String> {
        events
            .iter()
            .filter(|e| e["commit"]["operation"] == "create")
            .map(|e| {
                format!(
                    "at://{}/{}/{}",
                    e["did"].as_str().unwrap(),
                    e["commit"]["collection"].as_str().unwrap(),
                    e["commit"]["rkey"].as_str().unwrap()
                )
            })
            .collect()
    };
    // Which acknowledged records it lacks (each with its place among the
    // acknowledgements and its partition), for the failure's message.
    let missing = std::cell::RefCell::new(Vec::new());
    let followed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        common::lines_once(
            &jetstream_log,
            |events| {
                let records = created(events);
                let have: BTreeSet<&String> = records.iter().collect();
                let lacking: Vec<String> = acks
                    .iter()
                    .enumerate()
                    .filter(|(_, a)| !have.contains(&a.uri))
                    .map(|(i, a)| format!("#{i} {} (partition {})", a.uri, partition_of(&a.repo)))
                    .collect();
                let complete = lacking.is_empty();
                *missing.borrow_mut() = lacking;
                complete
            },
            "the /subscribe follower receives every record",
        )
    }));
    let Ok(followed) = followed else {
        let missing = missing.borrow();
        panic!(
            "the /subscribe follower lacks {} of {} acknowledged records ({at_takeover} acknowledged before the takeover): {:?}\nthe servers' warnings:\n{}",
            missing.len(),
            acks.len(),
            &missing[..missing.len().min(12)],
            warnings(tmp.path())
        );
    };
    let records = created(&followed);
    let _ = jetstream.0.kill();
    let distinct: BTreeSet<&String> = records.iter().collect();
    assert_eq!(
        distinct.len(),
        records.len(),
        "a record came twice on /subscribe"
    );

    // `check` passes in every partition: one repository of each.
    let mut checked = BTreeSet::new();
    for repo in &written {
        let partition = partition_of(repo);
        if checked.insert(partition) {
            let out = common::datarepo(&["--store", &location, "--repo", repo, "check"], "");
            assert!(out.status.success(), "check of {repo}: {out:?}");
        }
    }
    assert_eq!(
        checked.len(),
        PARTITIONS as usize,
        "not every partition was written"
    );

    for server in servers.iter_mut().flatten() {
        assert!(server.terminate(), "a server did not stop cleanly");
    }
}

/// The warnings and errors the servers logged (the last 40), for a
/// failure's message.
fn warnings(dir: &std::path::Path) -> String {
    let mut lines = Vec::new();
    for p in 0..PARTITIONS {
        let log = std::fs::read_to_string(dir.join(format!("serve-{p}.log"))).unwrap_or_default();
        lines.extend(
            log.lines()
                .filter(|l| l.contains("WARN") || l.contains("ERROR"))
                .map(|l| format!("server {p}: {l}")),
        );
    }
    let from = lines.len().saturating_sub(40);
    lines[from..].join("\n")
}

/// The partition of `repo` (the choice itself is pinned by the store's
/// golden test).
fn partition_of(repo: &str) -> u32 {
    store::Partitions::new(PARTITIONS).unwrap().of(repo)
}
