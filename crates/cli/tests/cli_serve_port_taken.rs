//! A second `datarepo serve` on a store whose server holds the port fails
//! to start and leaves the running server writing: it must not open the
//! store (which would fence the running writer) before it can listen.

mod common;

use std::{
    io::{Read, Write},
    net::TcpStream,
    process::{Command, Stdio},
    time::Duration,
};

const TOKEN: &str = "port-taken-token";
const DID: &str = "did:web:example.com";
const POST: &str = "app.bsky.feed.post";

/// The status code of one HTTP/1.1 request to `port`, or `None` when
/// nothing answers.
fn status(port: u16, method: &str, path: &str, body: &str) -> Option<u16> {
    let mut conn = TcpStream::connect(("127.0.0.1", port)).ok()?;
    conn.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    conn.write_all(request.as_bytes()).ok()?;
    let mut response = String::new();
    conn.read_to_string(&mut response).ok()?;
    response.split(' ').nth(1)?.parse().ok()
}

fn create(port: u16, rkey: &str) -> Option<u16> {
    let body = serde_json::json!({
        "repo": DID, "collection": POST, "rkey": rkey, "record": {"text": rkey}
    });
    status(
        port,
        "POST",
        "/xrpc/com.atproto.repo.createRecord",
        &body.to_string(),
    )
}

fn serve(store: &str, port: u16) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_datarepo"));
    cmd.args(["--store", store, "serve", "--addr"])
        .arg(format!("127.0.0.1:{port}"))
        .env("DATAREPO_TOKEN", TOKEN)
        .env("RUST_LOG", "warn");
    cmd
}

/// A server process, killed if the test ends early so it cannot outlive it.
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_second_server_that_cannot_listen_leaves_the_first_writing() {
    let tmp = testkit::tempdir("serve-port-taken");
    let store = tmp.path().join("data");
    let store = store.to_str().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut first = Server(
        serve(store, port)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let up = (0..600).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        status(port, "GET", "/xrpc/_health", "") == Some(200)
    });
    assert!(up, "the first server did not start within 30 s");
    assert_eq!(create(port, "before"), Some(200));

    let second = serve(store, port).output().unwrap();
    assert!(!second.status.success());
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(stderr.contains("cannot listen"), "{stderr}");

    // The first server still writes, and stops cleanly on SIGTERM.
    assert_eq!(create(port, "after"), Some(200));
    // The shell's own `kill`: no separate binary needed.
    let term = Command::new("sh")
        .args(["-c", &format!("kill -TERM {}", first.0.id())])
        .status()
        .unwrap();
    assert!(term.success());
    assert!(first.0.wait().unwrap().success());

    let out = common::datarepo(&["--store", store, "--repo", DID, "ls", POST, "--json"], "");
    assert!(out.status.success(), "{out:?}");
    let page = &common::json_lines(&out)[0];
    let rkeys: Vec<&str> = page["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap().rsplit('/').next().unwrap())
        .collect();
    assert_eq!(rkeys, ["after", "before"]);
}
