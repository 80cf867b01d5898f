//! On S3-compatible storage, `datarepo account create` on a partitioned
//! store claims the handle as `serve` does: a handle another DID has
//! claimed (a creation under way elsewhere) is refused with the claim's
//! DID, and a handle the command made is then refused to a server's
//! createAccount for another DID.

use crate::common::{self, ha::LEASE};

use serde_json::json;

const TOKEN: &str = "claims-token";

#[test]
fn account_create_claims_its_handle() {
    let Some(location) = testkit::s3_location("cli-claims") else {
        eprintln!("skipped: no S3-compatible test server (DATAREPO_TEST_S3)");
        return;
    };
    let tmp = testkit::tempdir("cli-claims");
    let init = common::datarepo(&["--store", &location, "init", "--partitions", "2"], "");
    assert!(init.status.success(), "{init:?}");
    let password = tmp.path().join("password");
    std::fs::write(&password, "correct horse battery\n").unwrap();
    let password = password.to_str().unwrap();
    let keys = tmp.path().join("keys");
    let keys = keys.to_str().unwrap();

    // A claim another process holds (written as a creation under way
    // would have left it).
    let root: store::Location = location.parse().unwrap();
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let claims = store::HandleClaims::at(&root).await.unwrap();
        let made = claims
            .claim("busy.test", "did:web:elsewhere.example")
            .await
            .unwrap();
        assert_eq!(made, store::Claim::Made);
    });
    let busy = common::datarepo(
        &[
            "--store",
            &location,
            "account",
            "create",
            "--handle",
            "busy.test",
            "--password-file",
            password,
            "--signing-key-dir",
            keys,
        ],
        "",
    );
    assert!(!busy.status.success(), "{busy:?}");
    assert!(
        String::from_utf8_lossy(&busy.stderr).contains("did:web:elsewhere.example"),
        "{busy:?}"
    );

    // The command's own handle is claimed for its DID.
    let made = common::datarepo(
        &[
            "--store",
            &location,
            "--json",
            "account",
            "create",
            "--handle",
            "mine.test",
            "--password-file",
            password,
            "--signing-key-dir",
            keys,
        ],
        "",
    );
    assert!(made.status.success(), "{made:?}");
    let held = tokio::runtime::Runtime::new().unwrap().block_on(async {
        let claims = store::HandleClaims::at(&root).await.unwrap();
        claims.read("mine.test").await.unwrap().unwrap().did
    });
    assert_eq!(held, "did:web:mine.test");

    // A server refuses the handle to another DID.
    let port = common::free_port();
    let secret = tmp.path().join("jwt-secret");
    let mut args = vec![
        "--jwt-secret-file",
        secret.to_str().unwrap(),
        "--signing-key-dir",
        keys,
    ];
    args.extend(LEASE);
    let mut server =
        common::spawn_serve(&location, port, TOKEN, &args, &tmp.path().join("serve.log"));
    assert!(common::wait_until_up(port));
    let answer = common::post_json(
        port,
        "/xrpc/com.atproto.server.createAccount",
        TOKEN,
        &json!({"handle": "mine.test", "did": "did:web:another.example",
                "password": "correct horse battery"}),
    );
    assert_eq!(answer.status, 400, "{}", answer.body);
    assert_eq!(answer.json()["error"], "HandleNotAvailable");
    assert!(server.terminate(), "the server did not stop cleanly");
}
