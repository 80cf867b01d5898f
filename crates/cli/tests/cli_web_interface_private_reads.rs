//! The web interface of a server started with `--private-reads`: a page
//! opened without the token shows the API's refusal and no record content;
//! with the token, the record.

use crate::common;
use crate::web;

use std::process::Stdio;

use common::{ServerProcess, free_port, http, serve, wait_until_up};
use serde_json::{Value, json};
use web::{
    browser::{browser, q, set_token, start_driver, texts, wait_for},
    data::{NOTES, REPO, TOKEN, api_post},
};

#[test]
fn private_reads_cover_the_interface() {
    let dir = testkit::tempdir("web-private-reads");
    let port = free_port();
    let _server = ServerProcess(
        serve(dir.path().join("data").to_str().unwrap(), port, TOKEN)
            .arg("--private-reads")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert!(wait_until_up(port), "the server did not start within 30 s");
    let (s, b) = api_post(
        port,
        "com.atproto.repo.createRecord",
        &json!({"repo": REPO, "collection": NOTES, "rkey": "secret", "record": {"body": "hush-hush"}}),
    );
    assert_eq!(s, 200, "{b}");
    let driver = start_driver();
    common::rt().block_on(async {
        let c = browser(&driver, false, 1280, 900).await;
        let base = format!("http://127.0.0.1:{port}");
        c.goto(&format!("{base}/repo/{}/{NOTES}/secret", q(REPO)))
            .await
            .unwrap();
        let err = wait_for(
            &c,
            "the refusal",
            "document.querySelector('.error') && document.querySelector('.error').textContent",
        )
        .await;
        let (status, body) = http(
            port,
            "GET",
            &format!(
                "/xrpc/com.atproto.repo.getRecord?repo={}&collection={NOTES}&rkey=secret",
                q(REPO)
            ),
            "",
            "",
        )
        .unwrap();
        assert_eq!(status, 401, "{body}");
        let message = serde_json::from_str::<Value>(&body).unwrap()["message"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            err.as_str().unwrap().contains(&message),
            "{err} lacks {message}"
        );
        let page = c
            .execute("return document.body.innerText", vec![])
            .await
            .unwrap();
        assert!(
            !page.as_str().unwrap().contains("hush-hush"),
            "no record content without the token"
        );
        set_token(&c, TOKEN).await;
        wait_for(&c, "the record", "document.querySelector('pre.json')").await;
        assert!(texts(&c, "pre.json").await[0].contains("\"hush-hush\""));
        c.close().await.unwrap();
    });
}
