//! `serve --signing-key-dir`: a repository created by its first write gets
//! a key file of its own (mode 0600) and signed commits; describeRepo names
//! its public key, and `verify-record` checks getRecord's proof offline
//! with that key (and refuses it with another).

use crate::common;

use common::{datarepo, json_lines};

#[test]
fn repositories_created_by_the_server_are_signed_and_provable() {
    let dir = testkit::tempdir("cli-serve-keys");
    let store = dir.path().join("store");
    let keys = dir.path().join("keys");
    let port = common::free_port();
    let _server = common::ServerProcess(
        common::serve(store.to_str().unwrap(), port, "tok")
            .arg("--signing-key-dir")
            .arg(&keys)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert!(common::wait_until_up(port));
    let body = r#"{"repo": "did:web:s", "collection": "app.x.post", "rkey": "one", "record": {"text": "proven"}}"#;
    let (status, _) = common::http(
        port,
        "POST",
        "/xrpc/com.atproto.repo.createRecord",
        "tok",
        body,
    )
    .unwrap();
    assert_eq!(status, 200);
    let key_file = keys.join("did:web:s.key");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&key_file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let (_, described) = common::http(
        port,
        "GET",
        "/xrpc/com.atproto.repo.describeRepo?repo=did:web:s",
        "",
        "",
    )
    .unwrap();
    let described: serde_json::Value = serde_json::from_str(&described).unwrap();
    let did_key = described["signingKey"].as_str().unwrap().to_owned();

    let proof = common::rt().block_on(async {
        reqwest::get(format!(
            "http://127.0.0.1:{port}/xrpc/com.atproto.sync.getRecord?did=did:web:s&collection=app.x.post&rkey=one"
        ))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap()
    });
    let proof_file = dir.path().join("proof.car");
    std::fs::write(&proof_file, &proof).unwrap();
    let uri = "at://did:web:s/app.x.post/one";
    let proof_path = proof_file.to_str().unwrap();
    let out = datarepo(
        &[
            "verify-record",
            proof_path,
            "--uri",
            uri,
            "--key",
            &did_key,
            "--json",
        ],
        "",
    );
    assert!(out.status.success(), "{out:?}");
    let verified = &json_lines(&out)[0];
    assert_eq!(verified["value"]["text"], "proven");
    assert_eq!(verified["key"], did_key.as_str());

    let other = datarepo(
        &[
            "key",
            "generate",
            "--out",
            dir.path().join("o.key").to_str().unwrap(),
        ],
        "",
    );
    let other = String::from_utf8(other.stdout).unwrap();
    let out = datarepo(
        &[
            "verify-record",
            proof_path,
            "--uri",
            uri,
            "--key",
            other.trim(),
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
}
