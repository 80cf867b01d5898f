//! `datarepo account` on a partitioned store without `--repo`: `create`
//! puts each account in the partition of its DID and refuses a handle
//! another partition's account has (whatever its case); `list` spans every
//! partition; `show` and `deactivate` find an account by handle or DID in
//! whichever partition holds it; a server on the store then logs the
//! accounts in. Checked against a model of what was made, and each
//! account's partition read on its own.

use crate::common;

use std::collections::BTreeMap;

use serde_json::json;

const PARTITIONS: u32 = 4;

#[test]
fn account_commands_span_the_partitions() {
    let tmp = testkit::tempdir("accounts-partitions");
    let store = tmp.path().join("data");
    let store = store.to_str().unwrap();
    let init = common::datarepo(&["--store", store, "init", "--partitions", "4"], "");
    assert!(init.status.success(), "{init:?}");
    let password = tmp.path().join("password");
    std::fs::write(&password, "correct horse battery\n").unwrap();
    let password = password.to_str().unwrap();
    let partitions = store::Partitions::new(PARTITIONS).unwrap();

    // Handle → DID, as made.
    let mut model = BTreeMap::new();
    for i in 0..12 {
        let handle = format!("user{i}.test");
        let made = common::datarepo(
            &[
                "--store",
                store,
                "--json",
                "account",
                "create",
                "--handle",
                &handle,
                "--password-file",
                password,
            ],
            "",
        );
        assert!(made.status.success(), "{made:?}");
        let did = common::json_lines(&made)[0]["did"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(did, format!("did:web:{handle}"));
        // In its DID's partition, and in no other.
        for p in 0..PARTITIONS {
            let place = format!("{store}/p-{p:04}");
            let shown = common::datarepo(&["--store", &place, "account", "show", &did], "");
            assert_eq!(
                shown.status.success(),
                p == partitions.of(&did),
                "{did} in {p}"
            );
        }
        model.insert(handle, did);
    }

    // A handle is taken across partitions, whatever its case and DID.
    let other = (0..)
        .map(|i| format!("did:web:other{i}.example"))
        .find(|did| partitions.of(did) != partitions.of(&model["user3.test"]))
        .unwrap();
    let taken = common::datarepo(
        &[
            "--store",
            store,
            "account",
            "create",
            "--handle",
            "USER3.test",
            "--did",
            &other,
            "--password-file",
            password,
        ],
        "",
    );
    assert!(!taken.status.success());
    assert!(
        String::from_utf8_lossy(&taken.stderr).contains("already taken"),
        "{taken:?}"
    );

    // list: every partition's accounts, in DID order.
    let listed = common::datarepo(&["--store", store, "--json", "account", "list"], "");
    assert!(listed.status.success(), "{listed:?}");
    let dids: Vec<String> = common::json_lines(&listed)[0]["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["did"].as_str().unwrap().to_owned())
        .collect();
    let mut expected: Vec<String> = model.values().cloned().collect();
    expected.sort();
    assert_eq!(dids, expected);

    // By handle or DID, wherever the account is.
    let off = common::datarepo(
        &["--store", store, "account", "deactivate", "user7.test"],
        "",
    );
    assert!(off.status.success(), "{off:?}");
    let shown = common::datarepo(
        &[
            "--store",
            store,
            "--json",
            "account",
            "show",
            &model["user7.test"],
        ],
        "",
    );
    assert!(shown.status.success(), "{shown:?}");
    assert_eq!(common::json_lines(&shown)[0]["status"], "deactivated");
    let missing = common::datarepo(&["--store", store, "account", "show", "nobody.test"], "");
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no account nobody.test"));

    // A server on the store logs them in by handle.
    let (_server, port) = common::start_server(store, "accounts-token");
    for (handle, did) in &model {
        let session = common::post_json(
            port,
            "/xrpc/com.atproto.server.createSession",
            "",
            &json!({"identifier": handle, "password": "correct horse battery"}),
        );
        assert_eq!(session.status, 200, "{handle}: {}", session.body);
        assert_eq!(session.json()["did"], did.as_str());
    }
}
