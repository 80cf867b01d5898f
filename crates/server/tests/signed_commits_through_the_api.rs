//! With a signing-key directory, a repository created by its first write
//! through the API gets a key file of its own and every commit is signed:
//! describeRepo names the public key, getRepo's CAR verifies offline
//! against it, and getRecord's proof of a record verifies.

use crate::common;

use std::sync::Arc;

use common::{DID, TestServer};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repositories_created_through_the_api_sign_every_commit() {
    let keys = testkit::tempdir("server-keys");
    let mut config = common::config();
    config.signing_keys = Some(server::SigningKeyDir {
        dir: keys.path().to_owned(),
        curve: repo::Curve::P256,
        random: Arc::new(|b: &mut [u8; 32]| b.fill(0x42)),
    });
    let srv = TestServer::start(store::MemoryKv::new(), config).await;
    for i in 0..5 {
        let (s, body) = srv
            .post(
                "com.atproto.repo.createRecord",
                &json!({"repo": DID, "collection": "app.x.post", "rkey": format!("r{i}"), "record": {"i": i}}),
            )
            .await;
        assert_eq!(s, 200, "{body}");
    }
    let file = keys.path().join(format!("{DID}.key"));
    let key = repo::SigningKey::read_file(&file).unwrap();
    let did_key = key.public_key().did_key();

    let (s, described) = srv
        .get("com.atproto.repo.describeRepo", &[("repo", DID)])
        .await;
    assert_eq!(s, 200);
    assert_eq!(described["signingKey"], did_key);

    let public: repo::PublicKey = did_key.parse().unwrap();
    let (s, car) = srv
        .get_bytes("com.atproto.sync.getRepo", &[("did", DID)])
        .await;
    assert_eq!(s, 200);
    let options = repo::VerifyOptions {
        keys: vec![public],
        ..repo::VerifyOptions::default()
    };
    let report = repo::verify_car(&car[..], &options).await.unwrap();
    assert_eq!((report.records, report.commits.len()), (5, 1));

    // No response carries the private key.
    let pem = key.to_pkcs8_pem();
    let secret_line = pem.lines().nth(1).unwrap();
    for bytes in [&car[..], described.to_string().as_bytes()] {
        assert!(
            !bytes
                .windows(secret_line.len())
                .any(|w| w == secret_line.as_bytes())
        );
    }

    let (s, proof) = srv
        .get_bytes(
            "com.atproto.sync.getRecord",
            &[("did", DID), ("collection", "app.x.post"), ("rkey", "r3")],
        )
        .await;
    assert_eq!(s, 200);
    let proven = repo::verify_record(&proof[..], DID, "app.x.post", "r3", &[public])
        .await
        .unwrap();
    assert_eq!(
        proven.record.unwrap().to_json(),
        json!({"$type": "app.x.post", "i": 3})
    );
}
