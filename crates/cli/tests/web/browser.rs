//! Headless Chromium through chromedriver, and the page reads the web
//! interface tests make.

use std::{
    os::unix::process::CommandExt,
    process::{Child, Command, Stdio},
    time::Duration,
};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

use crate::common::free_port;

pub fn q(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// chromedriver on a free port in a process group of its own, which the
/// browsers it starts join: dropping it kills the group, so no browser
/// outlives a test that failed before closing its session. The driver and
/// its browsers keep their temporary files (Chromium's profile and
/// `scoped_dir`s, which a closed session leaves behind) in a directory
/// removed with it.
pub struct Driver {
    child: Child,
    port: u16,
    _tmp: testkit::TempDir,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = Command::new("sh")
            .args(["-c", &format!("kill -9 -{}", self.child.id())])
            .status();
        // Should the group not be killed, the leader at least.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn start_driver() -> Driver {
    let port = free_port();
    let tmp = testkit::tempdir("chromium");
    let child = Command::new("chromedriver")
        .arg(format!("--port={port}"))
        .env("TMPDIR", tmp.path())
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect(
            "chromedriver is not installed: the README's test command installs Debian's \
             chromium and chromium-driver (apt-get install chromium chromium-driver)",
        );
    let driver = Driver {
        child,
        port,
        _tmp: tmp,
    };
    let up = (0..200).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    assert!(up, "chromedriver did not start within 10 s");
    driver
}

pub async fn browser(driver: &Driver, dark: bool, width: u32, height: u32) -> Client {
    let mut args = vec![
        "--headless=new".to_owned(),
        "--no-sandbox".to_owned(),
        "--disable-gpu".to_owned(),
        "--disable-dev-shm-usage".to_owned(),
        "--no-first-run".to_owned(),
        format!("--window-size={width},{height}"),
    ];
    if dark {
        args.push("--force-dark-mode".to_owned());
    }
    let mut caps = serde_json::Map::new();
    caps.insert("goog:chromeOptions".into(), json!({ "args": args }));
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{}", driver.port))
        .await
        .expect("a Chromium session")
}

/// Evaluates `expr` in the page until it is truthy (15 s at most).
pub async fn wait_for(c: &Client, what: &str, expr: &str) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let v = c
            .execute(
                &format!("try {{ return ({expr}); }} catch (e) {{ return null; }}"),
                vec![],
            )
            .await
            .unwrap();
        let truthy = match &v {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::String(s) => !s.is_empty(),
            Value::Array(a) => !a.is_empty(),
            Value::Number(n) => n.as_f64() != Some(0.0),
            Value::Object(_) => true,
        };
        if truthy {
            return v;
        }
        if tokio::time::Instant::now() > deadline {
            let text = c
                .execute("return document.body.innerText", vec![])
                .await
                .unwrap();
            panic!(
                "waited 15 s for {what} ({expr}); the page shows:\n{}",
                text.as_str().unwrap_or("")
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub async fn texts(c: &Client, css: &str) -> Vec<String> {
    let v = c
        .execute(
            "return [...document.querySelectorAll(arguments[0])].map(e => e.textContent.trim())",
            vec![json!(css)],
        )
        .await
        .unwrap();
    serde_json::from_value(v).unwrap()
}

pub async fn click(c: &Client, css: &str) {
    c.find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("no {css} on the page: {e}"))
        .click()
        .await
        .unwrap();
}

/// Clicks the link at `css` and waits until `expr` holds, clicking again
/// (at most three times in all) while the page has not left its URL: a
/// click that lands while the view replaces the link is lost.
pub async fn follow_link(c: &Client, css: &str, what: &str, expr: &str) -> Value {
    let before = c.current_url().await.unwrap();
    for _ in 0..3 {
        click(c, css).await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while tokio::time::Instant::now() < deadline {
            if c.current_url().await.unwrap() != before {
                return wait_for(c, what, expr).await;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    wait_for(c, what, expr).await
}

pub async fn path(c: &Client) -> String {
    let url = c.current_url().await.unwrap();
    match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_owned(),
    }
}

pub async fn screenshot(c: &Client, name: &str) {
    if let Ok(dir) = std::env::var("DATAREPO_SCREENSHOTS") {
        let png = c.screenshot().await.unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(format!("{dir}/{name}.png"), png).unwrap();
    }
}

pub async fn set_token(c: &Client, token: &str) {
    let input = c.find(Locator::Css("#token-input")).await.unwrap();
    input.send_keys(token).await.unwrap();
    click(c, "#token-save").await;
}
