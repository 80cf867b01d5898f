//! On S3-compatible storage, two servers writing different partitions of
//! one store keep every handle to one account: the same handle asked for
//! at once through both (for DIDs in partitions of different servers) is
//! given to exactly one, and logs in as that one through either server; a
//! creation that fails gives its handle back at once; a handle whose
//! claim was left by a creation that never finished is free again after
//! `--handle-claim-secs`, but not a handle whose account exists.

use crate::common::{
    self,
    ha::{LEASE, partition_role, wait_for},
};

use std::{thread, time::Duration};

use serde_json::json;

const TOKEN: &str = "handles-token";
const PARTITIONS: u32 = 4;
const PASSWORD: &str = "correct horse battery";

/// A DID named after `stem` whose partition is one of `wanted`.
fn did_in(stem: &str, wanted: &[u32]) -> String {
    let partitions = store::Partitions::new(PARTITIONS).unwrap();
    (0..)
        .map(|i| format!("did:web:{stem}-{i}.example"))
        .find(|did| wanted.contains(&partitions.of(did)))
        .unwrap()
}

fn create_account(port: u16, handle: &str, did: &str) -> common::Answer {
    common::post_json(
        port,
        "/xrpc/com.atproto.server.createAccount",
        TOKEN,
        &json!({"handle": handle, "did": did, "password": PASSWORD}),
    )
}

/// The DID `handle` logs in as through the server at `port`.
fn logs_in_as(port: u16, handle: &str) -> Option<String> {
    let session = common::post_json(
        port,
        "/xrpc/com.atproto.server.createSession",
        "",
        &json!({"identifier": handle, "password": PASSWORD}),
    );
    (session.status == 200).then(|| session.json()["did"].as_str().unwrap().to_owned())
}

#[test]
fn a_handle_goes_to_one_account_across_servers() {
    let Some(location) = testkit::s3_location("handles-unique") else {
        eprintln!("skipped: no S3-compatible test server (DATAREPO_TEST_S3)");
        return;
    };
    let tmp = testkit::tempdir("handles-unique");
    let init = common::datarepo(&["--store", &location, "init", "--partitions", "4"], "");
    assert!(init.status.success(), "{init:?}");
    let (a, b) = (common::free_port(), common::free_port());
    // Accounts on S3 need the servers' shared session secret and a place
    // for the accounts' signing keys.
    let secret = tmp.path().join("jwt-secret");
    let keys = tmp.path().join("signing-keys");
    let mut servers = Vec::new();
    for (port, owned, log) in [(a, "0,1", "a.log"), (b, "2,3", "b.log")] {
        let mut args = vec![
            "--partitions-owned",
            owned,
            "--handle-claim-secs",
            "3",
            "--jwt-secret-file",
            secret.to_str().unwrap(),
            "--signing-key-dir",
            keys.to_str().unwrap(),
        ];
        args.extend(LEASE);
        servers.push(common::spawn_serve(
            &location,
            port,
            TOKEN,
            &args,
            &tmp.path().join(log),
        ));
        // The first makes the secret the second reads.
        assert!(common::wait_until_up(port));
    }
    for (port, owned) in [(a, [0, 1]), (b, [2, 3])] {
        wait_for(
            || {
                owned
                    .iter()
                    .all(|&p| partition_role(port, p).0.as_deref() == Some("writer"))
            },
            "each server writes its partitions",
        );
    }

    // One handle, two DIDs (one in each server's partitions), asked for at
    // once: through both servers, or both through one (which forwards the
    // other's creation to its writer).
    for i in 0..12 {
        let handle = format!("race{i}.test");
        let first = did_in(&format!("first{i}"), &[0, 1]);
        let second = did_in(&format!("second{i}"), &[2, 3]);
        let ports = match i % 3 {
            0 => (a, b),
            1 => (a, a),
            _ => (b, b),
        };
        let answers = thread::scope(|s| {
            let one = s.spawn(|| create_account(ports.0, &handle, &first));
            let two = s.spawn(|| create_account(ports.1, &handle, &second));
            [one.join().unwrap(), two.join().unwrap()]
        });
        let made: Vec<&str> = answers
            .iter()
            .zip([&first, &second])
            .filter(|(answer, _)| answer.status == 200)
            .map(|(_, did)| did.as_str())
            .collect();
        let bodies: Vec<&str> = answers.iter().map(|x| x.body.as_str()).collect();
        assert_eq!(made.len(), 1, "{handle}: {bodies:?}");
        let loser = answers.iter().find(|x| x.status != 200).unwrap();
        assert_eq!(loser.status, 400, "{}", loser.body);
        assert_eq!(loser.json()["error"], "HandleNotAvailable");
        for port in [a, b] {
            wait_for(
                || logs_in_as(port, &handle).as_deref() == Some(made[0]),
                "the handle logs in as its one account through either server",
            );
        }
    }

    // A creation that fails after claiming its handle (a DID only the admin
    // may give, asked for without the admin token) gives it back at once.
    let handle = "returned.test";
    let refused = common::post_json(
        a,
        "/xrpc/com.atproto.server.createAccount",
        "",
        &json!({"handle": handle, "did": did_in("refused", &[2, 3]), "password": PASSWORD}),
    );
    assert_eq!(refused.status, 400, "{}", refused.body);
    let made = create_account(b, handle, &did_in("returned", &[0, 1]));
    assert_eq!(made.status, 200, "{}", made.body);

    // A claim left by a creation that never finished (written here as a
    // stopped process would have left it) keeps its handle for
    // --handle-claim-secs, then another DID takes it.
    let root: store::Location = location.parse().unwrap();
    let claims = tokio::runtime::Runtime::new().unwrap().block_on(async {
        let claims = store::HandleClaims::at(&root).await.unwrap();
        let left = claims
            .claim("ghost.test", "did:web:ghost.example")
            .await
            .unwrap();
        assert_eq!(left, store::Claim::Made);
        claims
    });
    let taker = did_in("taker", &[2, 3]);
    let early = create_account(a, "ghost.test", &taker);
    assert_eq!(early.status, 400, "{}", early.body);
    thread::sleep(Duration::from_secs(4));
    let late = create_account(a, "ghost.test", &taker);
    assert_eq!(late.status, 200, "{}", late.body);
    wait_for(
        || logs_in_as(b, "ghost.test").as_deref() == Some(taker.as_str()),
        "the taken-over handle logs in as its new account",
    );
    // An old claim whose account exists is not taken: race0.test's claim
    // is older than the stale age by now.
    let late = create_account(b, "race0.test", &did_in("latecomer", &[0, 1]));
    assert_eq!(late.status, 400, "{}", late.body);
    assert_eq!(late.json()["error"], "HandleNotAvailable");
    drop(claims);

    for mut server in servers {
        assert!(server.terminate(), "a server did not stop cleanly");
    }
}
