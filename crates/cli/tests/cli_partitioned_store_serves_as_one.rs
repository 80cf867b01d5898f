//! A local store created with `init --partitions 4` and served by one
//! process answers as one store: records land in their repository's
//! partition (the directory its ID hashes to), accounts log in by handle
//! whichever partition holds them and a handle is taken across
//! partitions, `listRepos` pages through every partition against a model,
//! the CLI reads each repository from its partition and lists them all,
//! `gc` and `check` report each partition, and the merged firehose
//! numbers every commit once, 1, 2, 3, …

use crate::common::{self, http_within};

use std::{collections::BTreeSet, time::Duration};

use serde_json::{Value, json};

const TOKEN: &str = "partitioned-token";
const POST: &str = "app.bsky.feed.post";
const PARTITIONS: u32 = 4;

fn get(port: u16, path: &str) -> common::Answer {
    http_within(port, "GET", path, "", "", Duration::from_secs(30)).expect("the server answers")
}

#[test]
fn a_partitioned_store_serves_as_one_store() {
    let tmp = testkit::tempdir("partitioned-local");
    let store = tmp.path().join("data");
    let store = store.to_str().unwrap();
    let init = common::datarepo(
        &["--store", store, "init", "--partitions", "4", "--json"],
        "",
    );
    assert!(init.status.success(), "{init:?}");
    assert_eq!(common::json_lines(&init)[0]["partitions"], 4);
    // The root is no database of its own: a partition is.
    for p in 0..PARTITIONS {
        assert!(tmp.path().join(format!("data/p-{p:04}/db")).is_dir());
    }
    assert!(!tmp.path().join("data/db").exists());
    let again = common::datarepo(&["--store", store, "init", "--partitions", "8"], "");
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already has 4 partitions"));

    let port = common::free_port();
    let mut server = common::ServerProcess(
        common::serve(store, port, TOKEN)
            .arg("--open-registration")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert!(common::wait_until_up(port), "the server did not start");
    let health = get(port, "/xrpc/_health").json();
    assert_eq!(health["role"], "partitioned");
    assert_eq!(health["partitions"].as_array().unwrap().len(), 4);
    // Every partition's metrics, each family once, each sample labelled.
    let metrics = get(port, "/metrics").body;
    assert_eq!(metrics.matches("# TYPE datarepo_gc_phase gauge").count(), 1);
    for p in 0..PARTITIONS {
        assert!(metrics.contains(&format!("datarepo_gc_phase{{partition=\"{p}\"}} 0")));
    }
    assert!(metrics.ends_with("# EOF\n"));

    // Records of 24 repositories, each in the partition its ID hashes to.
    let partitions = store::Partitions::new(PARTITIONS).unwrap();
    let mut model = BTreeSet::new();
    for i in 0..24 {
        let did = format!("did:web:r{i}.example");
        let body = json!({"repo": did, "collection": POST, "record": {"text": format!("r{i}")}});
        let answer = common::post_json(port, "/xrpc/com.atproto.repo.createRecord", TOKEN, &body);
        assert_eq!(answer.status, 200, "{}", answer.body);
        model.insert(did);
    }
    let out = common::datarepo(&["--store", store, "--json", "repo", "list"], "");
    assert!(out.status.success(), "{out:?}");
    let listed: Vec<String> = common::json_lines(&out)[0]["repos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["did"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(listed, model.iter().cloned().collect::<Vec<_>>());
    let mut used = BTreeSet::new();
    for did in &model {
        let p = partitions.of(did);
        used.insert(p);
        // Reading the partition's own database finds it; another's does not.
        let there = format!("{store}/p-{p:04}");
        let elsewhere = format!("{store}/p-{:04}", (p + 1) % PARTITIONS);
        for (place, found) in [(there, true), (elsewhere, false)] {
            let out = common::datarepo(&["--store", &place, "--repo", did, "ls", POST], "");
            assert_eq!(out.status.success(), found, "{did} in {place}: {out:?}");
        }
    }
    assert_eq!(
        used.len(),
        PARTITIONS as usize,
        "every partition holds some"
    );
    // The root, given a repository, reads from its partition.
    let out = common::datarepo(
        &["--store", store, "--repo", "did:web:r3.example", "ls", POST],
        "",
    );
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("text=\"r3\""),
        "{out:?}"
    );
    let out = common::datarepo(&["--store", store, "ls", POST], "");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("has 4 partitions"),
        "{out:?}"
    );

    // Accounts: made in their DID's partition, found by handle from any.
    let mut handles = Vec::new();
    for name in ["ann", "ben", "cat", "dan", "eve", "fay"] {
        let handle = format!("{name}.test");
        let made = common::post_json(
            port,
            "/xrpc/com.atproto.server.createAccount",
            "",
            &json!({"handle": handle, "password": "correct horse battery"}),
        );
        assert_eq!(made.status, 200, "{}", made.body);
        assert_eq!(made.json()["did"], format!("did:web:{handle}"));
        model.insert(format!("did:web:{handle}"));
        handles.push(handle);
    }
    let taken = common::post_json(
        port,
        "/xrpc/com.atproto.server.createAccount",
        "",
        &json!({"handle": "ann.test", "password": "another password"}),
    );
    assert_eq!(taken.status, 400, "{}", taken.body);
    assert_eq!(taken.json()["error"], "HandleNotAvailable");
    for handle in &handles {
        let session = common::post_json(
            port,
            "/xrpc/com.atproto.server.createSession",
            "",
            &json!({"identifier": handle, "password": "correct horse battery"}),
        );
        assert_eq!(session.status, 200, "{}", session.body);
        let jwt = session.json()["accessJwt"].as_str().unwrap().to_owned();
        let body = json!({"repo": format!("did:web:{handle}"), "collection": POST,
                          "record": {"text": "mine"}});
        let wrote = common::post_json(port, "/xrpc/com.atproto.repo.createRecord", &jwt, &body);
        assert_eq!(wrote.status, 200, "{}", wrote.body);
        let me = http_within(
            port,
            "GET",
            "/xrpc/com.atproto.server.getSession",
            &jwt,
            "",
            Duration::from_secs(30),
        )
        .unwrap();
        assert_eq!(me.status, 200, "{}", me.body);
        assert_eq!(me.json()["handle"], handle.as_str());
    }
    let wrong = common::post_json(
        port,
        "/xrpc/com.atproto.server.createSession",
        "",
        &json!({"identifier": "ann.test", "password": "wrong"}),
    );
    assert_eq!(wrong.status, 401, "{}", wrong.body);

    // listRepos pages through every partition as the model orders them.
    for limit in [1, 5, 100] {
        let mut listed = Vec::new();
        let mut cursor = String::new();
        loop {
            let page = get(
                port,
                &format!("/xrpc/com.atproto.sync.listRepos?limit={limit}{cursor}"),
            );
            assert_eq!(page.status, 200, "{}", page.body);
            let page = page.json();
            let repos = page["repos"].as_array().unwrap();
            assert!(repos.len() <= limit);
            listed.extend(repos.iter().map(|r| r["did"].as_str().unwrap().to_owned()));
            match page["cursor"].as_str() {
                Some(c) => cursor = format!("&cursor={c}"),
                None => break,
            }
        }
        assert_eq!(
            listed,
            model.iter().cloned().collect::<Vec<_>>(),
            "limit {limit}"
        );
    }

    // The merged firehose: every commit once, in increasing order; a
    // replay from a cursor continues it exactly.
    let heads: Vec<(String, String)> = model
        .iter()
        .map(|did| {
            let head = get(
                port,
                &format!("/xrpc/com.atproto.sync.getLatestCommit?did={did}"),
            );
            assert_eq!(head.status, 200, "{}", head.body);
            (did.clone(), head.json()["rev"].as_str().unwrap().to_owned())
        })
        .collect();
    let log = tmp.path().join("follow.jsonl");
    let mut follower = common::spawn_follower(port, &log, &[]);
    let events = common::lines_once(
        &log,
        |events| {
            let seen: BTreeSet<(String, String)> = events.iter().map(common::commit_of).collect();
            heads.iter().all(|h| seen.contains(h))
        },
        "the merged stream holds every repository's head",
    );
    let _ = follower.0.kill();
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "out of order: {seqs:?}"
    );
    let distinct: BTreeSet<(String, String)> = events.iter().map(common::commit_of).collect();
    assert_eq!(distinct.len(), events.len(), "a commit came twice");
    let middle = seqs[seqs.len() / 2];
    let rest = common::follow(port, middle, seqs.iter().filter(|s| **s > middle).count());
    let key = |e: &Value| (e["seq"].clone(), e["repo"].clone(), e["rev"].clone());
    assert_eq!(
        rest.iter().map(key).collect::<Vec<_>>(),
        events[seqs.len() / 2 + 1..]
            .iter()
            .map(key)
            .collect::<Vec<_>>()
    );
    // The merged /subscribe stream: every record written, once.
    let written: Vec<(String, String)> = model
        .iter()
        .map(|did| {
            let page = get(
                port,
                &format!("/xrpc/com.atproto.repo.listRecords?repo={did}&collection={POST}"),
            );
            let uri = page.json()["records"][0]["uri"]
                .as_str()
                .unwrap()
                .to_owned();
            (did.clone(), uri.rsplit('/').next().unwrap().to_owned())
        })
        .collect();
    let log = tmp.path().join("jetstream.jsonl");
    let mut follower = common::spawn_follower(port, &log, &["--jetstream"]);
    let created = |events: &[Value]| -> Vec<(String, String)> {
        events
            .iter()
            .filter(|e| e["commit"]["operation"] == "create")
            .map(|e| {
                (
                    e["did"].as_str().unwrap().to_owned(),
                    e["commit"]["rkey"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let creates = created(&common::lines_once(
        &log,
        |events| {
            let creates = created(events);
            written.iter().all(|w| creates.contains(w))
        },
        "the merged /subscribe stream holds every record",
    ));
    let _ = follower.0.kill();
    let distinct: BTreeSet<&(String, String)> = creates.iter().collect();
    assert_eq!(distinct.len(), creates.len(), "a record came twice");
    // Followers connected while commits land read them from the entries
    // this process keeps in memory once caught up: every commit once, in
    // order, numbered without a gap; the /subscribe follower every record.
    let firehose_log = tmp.path().join("live-firehose.jsonl");
    let jetstream_log = tmp.path().join("live-jetstream.jsonl");
    let mut live_followers = [
        common::spawn_follower(port, &firehose_log, &[]),
        common::spawn_follower(port, &jetstream_log, &["--jetstream"]),
    ];
    common::lines_once(
        &firehose_log,
        |events| events.len() >= seqs.len(),
        "the live follower caught up",
    );
    let mut landed = Vec::new();
    for i in 0..40 {
        let did = format!("did:web:r{}.example", i % 24);
        let body =
            json!({"repo": did, "collection": POST, "record": {"text": format!("live {i}")}});
        let answer = common::post_json(port, "/xrpc/com.atproto.repo.createRecord", TOKEN, &body);
        assert_eq!(answer.status, 200, "{}", answer.body);
        let answer = answer.json();
        landed.push((
            (did, answer["commit"]["rev"].as_str().unwrap().to_owned()),
            answer["uri"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .to_owned(),
        ));
    }
    let events = common::lines_once(
        &firehose_log,
        |events| {
            let seen: BTreeSet<(String, String)> = events.iter().map(common::commit_of).collect();
            landed.iter().all(|(commit, _)| seen.contains(commit))
        },
        "the live follower has every commit",
    );
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    let records = common::lines_once(
        &jetstream_log,
        |events| {
            let seen = created(events);
            landed
                .iter()
                .all(|(commit, rkey)| seen.contains(&(commit.0.clone(), rkey.clone())))
        },
        "the live /subscribe follower has every record",
    );
    let creates = created(&records);
    let distinct: BTreeSet<&(String, String)> = creates.iter().collect();
    assert_eq!(distinct.len(), creates.len(), "a record came twice");
    for follower in &mut live_followers {
        let _ = follower.0.kill();
    }
    // Each partition's own stream is still there, by its parameter.
    let one = get(port, "/xrpc/com.atproto.sync.subscribeRepos?partition=9");
    assert_eq!(one.status, 400, "{}", one.body);

    assert!(server.terminate(), "the server did not stop cleanly");
    let gc = common::datarepo(&["--store", store, "gc", "--json"], "");
    assert!(gc.status.success(), "{gc:?}");
    let reports = common::json_lines(&gc);
    let reported: Vec<u64> = reports
        .iter()
        .map(|r| r["partition"].as_u64().unwrap())
        .collect();
    assert_eq!(reported, vec![0, 1, 2, 3]);
    for did in ["did:web:r0.example", "did:web:ann.test"] {
        let check = common::datarepo(&["--store", store, "--repo", did, "check"], "");
        assert!(check.status.success(), "{check:?}");
    }
    // Without --repo, check reads every repository of every partition once,
    // each reported with the partition that holds it.
    let check = common::datarepo(&["--store", store, "--json", "check"], "");
    assert!(check.status.success(), "{check:?}");
    let report = &common::json_lines(&check)[0];
    assert_eq!(report["intact"], true);
    let mut checked = BTreeSet::new();
    for entry in report["repos"].as_array().unwrap() {
        let did = entry["repo"].as_str().unwrap().to_owned();
        assert_eq!(entry["intact"], true, "{entry}");
        assert_eq!(entry["partition"], partitions.of(&did), "{entry}");
        assert!(checked.insert(did), "a repository was checked twice");
    }
    assert!(model.is_subset(&checked), "{checked:?}");
    assert!(checked.contains("did:web:ann.test"));
}
