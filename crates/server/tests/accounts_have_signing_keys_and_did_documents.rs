//! Every new account gets a secp256k1 signing key of its own, so its
//! commits are signed; its DID document (served at /.well-known/did.json
//! for a hosted did:web, and sent with its sessions) names that key as
//! #atproto and this server as #atproto_pds, and describeRepo gives it
//! with the handle. With --did-method key the DID is the key's did:key.

use crate::common;

use std::sync::Arc;

use common::{
    TOKEN, TestServer,
    sessions::{call, clock, sessions},
};
use serde_json::{Value, json};
use server::{AccountPolicy, Config, DidMethod};
use store::MemoryKv;

const PUBLIC_URL: &str = "https://pds.example.com";

async fn start(keys: &testkit::TempDir, did_method: DidMethod) -> TestServer {
    let policy = AccountPolicy {
        did_method,
        public_url: Some(PUBLIC_URL.into()),
        signing_keys: Some(server::SigningKeyDir {
            dir: keys.path().to_owned(),
            curve: repo::Curve::K256,
            random: Arc::new(|b: &mut [u8; 32]| {
                for (i, x) in b.iter_mut().enumerate() {
                    *x = 0x30 + i as u8;
                }
            }),
        }),
        ..AccountPolicy::default()
    };
    let config = Config {
        token: Some(TOKEN.into()),
        sessions: Some(sessions(&clock(), 60, policy)),
        ..Config::default()
    };
    TestServer::start(MemoryKv::new(), config).await
}

/// The `#atproto` key of a DID document, and its `#atproto_pds` endpoint.
fn key_and_endpoint(doc: &Value) -> (String, String) {
    let did = doc["id"].as_str().unwrap();
    let method = &doc["verificationMethod"][0];
    assert_eq!(method["id"], format!("{did}#atproto"), "{doc}");
    assert_eq!(method["type"], "Multikey");
    assert_eq!(method["controller"], did);
    let service = &doc["service"][0];
    assert_eq!(service["id"], "#atproto_pds");
    assert_eq!(service["type"], "AtprotoPersonalDataServer");
    (
        format!("did:key:{}", method["publicKeyMultibase"].as_str().unwrap()),
        service["serviceEndpoint"].as_str().unwrap().to_owned(),
    )
}

/// Writes a record as the account and checks the repository's CAR
/// verifies against `did_key` (a secp256k1 key).
async fn writes_are_signed_by(s: &TestServer, did: &str, access: &str, did_key: &str) {
    let (status, out) = call(
        s,
        "com.atproto.repo.createRecord",
        Some(access),
        Some(json!({"repo": did, "collection": "app.bsky.feed.post",
                    "record": {"text": "signed", "createdAt": "2026-11-27T00:00:00Z"}})),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    assert!(did_key.starts_with("did:key:zQ3s"), "secp256k1: {did_key}");
    let (status, car) = s
        .get_bytes("com.atproto.sync.getRepo", &[("did", did)])
        .await;
    assert_eq!(status, 200);
    let options = repo::VerifyOptions {
        keys: vec![did_key.parse().unwrap()],
        ..repo::VerifyOptions::default()
    };
    let report = repo::verify_car(&car[..], &options).await.unwrap();
    assert_eq!(report.records, 1);
}

#[tokio::test]
async fn a_did_web_account_is_signed_and_its_document_served() {
    let keys = testkit::tempdir("account-keys");
    let s = start(&keys, DidMethod::Web).await;
    let (status, created) = call(
        &s,
        "com.atproto.server.createAccount",
        Some(TOKEN),
        Some(json!({"handle": "alice.example.com", "password": "pw"})),
    )
    .await;
    assert_eq!(status, 200, "{created}");
    let did = "did:web:alice.example.com";
    assert_eq!(created["did"], did);
    let (key, endpoint) = key_and_endpoint(&created["didDoc"]);
    assert_eq!(endpoint, PUBLIC_URL);
    assert_eq!(
        created["didDoc"]["alsoKnownAs"],
        json!(["at://alice.example.com"])
    );
    // The key is the one kept in the key directory.
    let file = repo::SigningKey::read_file(&keys.path().join(format!("{did}.key"))).unwrap();
    assert_eq!(file.public_key().did_key(), key);
    let access = created["accessJwt"].as_str().unwrap();
    writes_are_signed_by(&s, did, access, &key).await;

    // Served for the handle's host; not for another host.
    let served: Value = s
        .client
        .get(format!("{}/.well-known/did.json", s.url))
        .header("host", "Alice.Example.com")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(served, created["didDoc"]);
    let other = s
        .client
        .get(format!("{}/.well-known/did.json", s.url))
        .header("host", "bob.example.com")
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 404);

    // A login sends the same document.
    let (status, session) = call(
        &s,
        "com.atproto.server.createSession",
        None,
        Some(json!({"identifier": "alice.example.com", "password": "pw"})),
    )
    .await;
    assert_eq!(status, 200, "{session}");
    assert_eq!(session["didDoc"], served);
    // describeRepo names the account's handle and document.
    let (status, described) = s
        .get("com.atproto.repo.describeRepo", &[("repo", did)])
        .await;
    assert_eq!(status, 200, "{described}");
    assert_eq!(described["handle"], "alice.example.com");
    assert_eq!(described["handleIsCorrect"], true);
    assert_eq!(described["didDoc"], served);
    assert_eq!(described["signingKey"], key);
    s.stop().await;
}

#[tokio::test]
async fn a_did_key_account_is_named_by_its_key() {
    let keys = testkit::tempdir("account-keys");
    let s = start(&keys, DidMethod::Key).await;
    let (status, created) = call(
        &s,
        "com.atproto.server.createAccount",
        Some(TOKEN),
        Some(json!({"handle": "carol.example.com", "password": "pw"})),
    )
    .await;
    assert_eq!(status, 200, "{created}");
    let did = created["did"].as_str().unwrap().to_owned();
    let (key, _) = key_and_endpoint(&created["didDoc"]);
    assert_eq!(did, key, "a did:key names its own key");
    assert!(keys.path().join(format!("{did}.key")).exists());
    writes_are_signed_by(&s, &did, created["accessJwt"].as_str().unwrap(), &key).await;
    s.stop().await;
}
