//! The web interface's "Sign in", in headless Chromium: an account signs
//! in with its handle and password, writes its own repository with the
//! editor (after its access token has expired: the page refreshes the
//! session by itself), is refused writing another account's repository
//! with the server's words, and signs out.

use crate::common;
use crate::web;

use std::process::Stdio;

use common::{ServerProcess, free_port, serve, wait_until_up};
use fantoccini::{Client, Locator};
use serde_json::json;
use web::{
    browser::{browser, click, q, start_driver, wait_for},
    data::{NOTES, TOKEN, api, api_post},
};

const ALICE: &str = "did:web:alice.test";
const BOB: &str = "did:web:bob.test";

async fn write_note(c: &Client, rkey: &str) {
    wait_for(
        c,
        "the records",
        "document.querySelector('.view[data-ready=records]')",
    )
    .await;
    click(c, "button.write-only").await;
    let editor = c.find(Locator::Css("textarea.editor")).await.unwrap();
    editor.clear().await.unwrap();
    editor
        .send_keys(r#"{"body": "written after signing in"}"#)
        .await
        .unwrap();
    c.find(Locator::Css("input.rkey"))
        .await
        .unwrap()
        .send_keys(rkey)
        .await
        .unwrap();
    click(c, ".edit-form button[type=submit]").await;
}

#[test]
fn an_account_signs_in_and_writes_its_own_repository() {
    let dir = testkit::tempdir("web-sign-in");
    let port = free_port();
    let _server = ServerProcess(
        serve(dir.path().join("data").to_str().unwrap(), port, TOKEN)
            .args(["--access-token-ttl-secs", "2"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert!(wait_until_up(port), "the server did not start within 30 s");
    for (handle, did) in [("alice.test", ALICE), ("bob.test", BOB)] {
        let (s, b) = api_post(
            port,
            "com.atproto.server.createAccount",
            &json!({"handle": handle, "password": format!("{handle} password")}),
        );
        assert_eq!(s, 200, "{b}");
        let (s, b) = api_post(
            port,
            "com.atproto.repo.createRecord",
            &json!({"repo": did, "collection": NOTES, "rkey": "first", "record": {"body": "seed"}}),
        );
        assert_eq!(s, 200, "{b}");
    }
    let driver = start_driver();
    common::rt().block_on(async {
        let c = browser(&driver, false, 1280, 900).await;
        let base = format!("http://127.0.0.1:{port}");
        c.goto(&format!("{base}/repo/{}/{NOTES}", q(ALICE)))
            .await
            .unwrap();
        wait_for(
            &c,
            "the records",
            "document.querySelector('.view[data-ready=records]')",
        )
        .await;
        let new_button = c.find(Locator::Css("button.write-only")).await.unwrap();
        assert!(!new_button.is_displayed().await.unwrap(), "no write before signing in");

        // A wrong password: the server's message, still signed out.
        c.find(Locator::Css("#sign-in-handle"))
            .await
            .unwrap()
            .send_keys("alice.test")
            .await
            .unwrap();
        c.find(Locator::Css("#sign-in-password"))
            .await
            .unwrap()
            .send_keys("wrong")
            .await
            .unwrap();
        click(&c, "#sign-in-submit").await;
        wait_for(
            &c,
            "the refusal",
            "document.querySelector('#sign-in-state').textContent.includes('Invalid identifier or password')",
        )
        .await;
        let password = c.find(Locator::Css("#sign-in-password")).await.unwrap();
        password.clear().await.unwrap();
        password.send_keys("alice.test password").await.unwrap();
        click(&c, "#sign-in-submit").await;
        wait_for(
            &c,
            "signed in",
            "document.querySelector('#signed-in-as').textContent === 'signed in as alice.test'",
        )
        .await;

        // Past the access token's 2 s: the page refreshes and writes.
        tokio::time::sleep(std::time::Duration::from_secs(3)).await;
        write_note(&c, "by-alice").await;
        wait_for(
            &c,
            "the new record",
            "location.pathname.endsWith('/by-alice') && document.querySelector('pre.json')",
        )
        .await;
        let created = api(
            port,
            &format!(
                "/xrpc/com.atproto.repo.getRecord?repo={}&collection={NOTES}&rkey=by-alice",
                q(ALICE)
            ),
        );
        assert_eq!(created["value"]["body"], "written after signing in");

        // Bob's repository (reached within the page: a reload would forget
        // the session, which lives in the page's memory only): refused, in
        // the server's words; nothing written.
        c.execute(
            "history.pushState({}, '', arguments[0]); dispatchEvent(new PopStateEvent('popstate'));",
            vec![json!(format!("/repo/{}/{NOTES}", q(BOB)))],
        )
        .await
        .unwrap();
        write_note(&c, "intruder").await;
        let refused = wait_for(
            &c,
            "the refusal",
            "document.querySelector('.write-message .error') && document.querySelector('.write-message .error').textContent",
        )
        .await;
        assert!(
            refused.as_str().unwrap().contains("may write only its own repository"),
            "{refused}"
        );
        let listed = api(
            port,
            &format!(
                "/xrpc/com.atproto.repo.listRecords?repo={}&collection={NOTES}",
                q(BOB)
            ),
        );
        assert_eq!(listed["records"].as_array().unwrap().len(), 1, "{listed}");

        // Signing out: no more writing.
        click(&c, "#sign-out").await;
        wait_for(
            &c,
            "signed out",
            "!document.body.classList.contains('can-write') && !document.querySelector('#sign-in-form').hidden",
        )
        .await;
        c.close().await.unwrap();
    });
}
