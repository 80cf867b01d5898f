//! Helpers shared by the CLI tests.
#![allow(dead_code, unreachable_pub)]

use std::{
    io::Write,
    process::{Command, Output, Stdio},
};

use serde_json::Value;

pub mod ha;

/// A runtime for tests that open the store themselves.
pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Runs `datarepo` with `args`, `stdin` on its standard input.
pub fn datarepo(args: &[&str], stdin: &str) -> Output {
    datarepo_with(
        Command::new(env!("CARGO_BIN_EXE_datarepo")).args(args),
        stdin,
    )
}

/// Runs a prepared `datarepo` command (its arguments and environment set),
/// `stdin` on its standard input.
pub fn datarepo_with(cmd: &mut Command, stdin: &str) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A command may stop reading early (a usage error); its output tells.
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    child.wait_with_output().unwrap()
}

/// The JSON object on each line of `out`'s standard output.
pub fn json_lines(out: &Output) -> Vec<Value> {
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The JSON object on each complete line of the file at `path` (none
/// when it does not exist yet).
pub fn json_lines_of(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The repository and rev of a commit `datarepo follow --json` printed.
pub fn commit_of(event: &Value) -> (String, String) {
    (
        event["repo"].as_str().unwrap().to_owned(),
        event["rev"].as_str().unwrap().to_owned(),
    )
}

/// The JSON lines of `log` (a follower's) once `complete` says they are,
/// asked every 100 ms for up to 60 s (a follower replaying a merged stream
/// from its start shares two cores with the whole suite); fails naming
/// `what`.
pub fn lines_once(
    log: &std::path::Path,
    complete: impl Fn(&[Value]) -> bool,
    what: &str,
) -> Vec<Value> {
    (0..600)
        .find_map(|_| {
            let lines = json_lines_of(log);
            if complete(&lines) {
                return Some(lines);
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
            None
        })
        .unwrap_or_else(|| {
            let lines = json_lines_of(log);
            let last: Vec<&Value> = lines.iter().rev().take(3).collect();
            panic!(
                "not within 60 s: {what} ({} lines in {}; the last: {last:?})",
                lines.len(),
                log.display()
            )
        })
}

/// `datarepo follow` of the server on `port` from cursor 0 (with `extra`
/// arguments: `--jetstream`), printing its events as JSON lines into
/// `log` until killed (dropped).
pub fn spawn_follower(port: u16, log: &std::path::Path, extra: &[&str]) -> ServerProcess {
    ServerProcess(
        Command::new(env!("CARGO_BIN_EXE_datarepo"))
            .args([
                "follow",
                &format!("http://127.0.0.1:{port}"),
                "--cursor",
                "0",
                "--json",
            ])
            .args(extra)
            .stdout(std::fs::File::create(log).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

/// A `datarepo serve` process on 127.0.0.1, killed if the test ends early
/// so it cannot outlive it.
pub struct ServerProcess(pub std::process::Child);

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl ServerProcess {
    /// Stops the server with SIGTERM (through the shell's own `kill`, no
    /// separate binary) and returns whether it exited cleanly.
    pub fn terminate(&mut self) -> bool {
        let term = Command::new("sh")
            .args(["-c", &format!("kill -TERM {}", self.0.id())])
            .status()
            .unwrap();
        term.success() && self.0.wait().unwrap().success()
    }
}

/// A free port on 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `datarepo --store STORE serve --addr 127.0.0.1:PORT` with `token`.
pub fn serve(store: &str, port: u16, token: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_datarepo"));
    cmd.args(["--store", store, "serve", "--addr"])
        .arg(format!("127.0.0.1:{port}"))
        .env("DATAREPO_TOKEN", token)
        .env("RUST_LOG", "warn");
    cmd
}

/// `datarepo serve` on `store` at a free port, its output discarded, once
/// it answers its health check; the process and its port.
pub fn start_server(store: &str, token: &str) -> (ServerProcess, u16) {
    let port = free_port();
    let server = ServerProcess(
        serve(store, port, token)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert!(wait_until_up(port), "the server did not start within 30 s");
    (server, port)
}

/// The rkeys `datarepo ls --json` lists in `collection` of `repo`.
pub fn listed_rkeys(store: &str, repo: &str, collection: &str) -> Vec<String> {
    let ls = datarepo(
        &["--store", store, "--repo", repo, "ls", collection, "--json"],
        "",
    );
    assert!(ls.status.success(), "{ls:?}");
    json_lines(&ls)[0]["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let uri = r["uri"].as_str().unwrap();
            uri.rsplit('/').next().unwrap().to_owned()
        })
        .collect()
}

/// One HTTP/1.1 request to `port` with `token`: its status and body, or
/// `None` when nothing answers.
pub fn http(port: u16, method: &str, path: &str, token: &str, body: &str) -> Option<(u16, String)> {
    http_within(
        port,
        method,
        path,
        token,
        body,
        std::time::Duration::from_secs(30),
    )
    .map(|a| (a.status, a.body))
}

/// An HTTP answer: status, headers (names lower-cased) and body.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    /// The value of header `name` (lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

/// One HTTP/1.1 request to `port`, waiting at most `timeout` for the
/// answer; `None` when nothing answers in time.
pub fn http_within(
    port: u16,
    method: &str,
    path: &str,
    token: &str,
    body: &str,
    timeout: std::time::Duration,
) -> Option<Answer> {
    use std::io::Read;
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    conn.set_read_timeout(Some(timeout)).ok()?;
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    conn.write_all(request.as_bytes()).ok()?;
    let mut response = String::new();
    conn.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Some(Answer {
        status,
        headers,
        body: body.to_owned(),
    })
}

/// A JSON `POST` of `body` to `path` with `token`, answered within 30 s.
pub fn post_json(port: u16, path: &str, token: &str, body: &Value) -> Answer {
    http_within(
        port,
        "POST",
        path,
        token,
        &body.to_string(),
        std::time::Duration::from_secs(30),
    )
    .expect("the server answers")
}

/// `datarepo serve` of the store at `location` on 127.0.0.1:`port` with
/// `token` and `extra` arguments, its standard error to `log`.
pub fn spawn_serve(
    location: &str,
    port: u16,
    token: &str,
    extra: &[&str],
    log: &std::path::Path,
) -> ServerProcess {
    let mut cmd = serve(location, port, token);
    cmd.args(extra)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap());
    ServerProcess(cmd.spawn().unwrap())
}

/// `com.atproto.repo.createRecord` of `body` (its input, as JSON) through
/// the server on `port` with `token`: the new record's key.
pub fn create_record(port: u16, token: &str, body: &Value) -> String {
    let (status, reply) = http(
        port,
        "POST",
        "/xrpc/com.atproto.repo.createRecord",
        token,
        &body.to_string(),
    )
    .expect("the server answers");
    assert_eq!(status, 200, "{reply}");
    let reply: Value = serde_json::from_str(&reply).unwrap();
    let uri = reply["uri"].as_str().unwrap();
    uri.rsplit('/').next().unwrap().to_owned()
}

/// Waits up to 30 s for the server on `port` to answer its health check.
pub fn wait_until_up(port: u16) -> bool {
    (0..600).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        http(port, "GET", "/xrpc/_health", "", "").map(|(s, _)| s) == Some(200)
    })
}

/// `datarepo follow` of the server on `port` from `cursor`: the first
/// `count` commits it prints as JSON.
pub fn follow(port: u16, cursor: u64, count: usize) -> Vec<Value> {
    let out = datarepo(
        &[
            "follow",
            &format!("http://127.0.0.1:{port}"),
            "--cursor",
            &cursor.to_string(),
            "--limit",
            &count.to_string(),
            "--json",
        ],
        "",
    );
    assert!(out.status.success(), "{out:?}");
    json_lines(&out)
}

/// `datarepo --store STORE --repo DID put COLLECTION RKEY` of `record`,
/// which must succeed.
pub fn put_record(store: &str, did: &str, collection: &str, rkey: &str, record: &Value) {
    let out = datarepo(
        &["--store", store, "--repo", did, "put", collection, rkey],
        &record.to_string(),
    );
    assert!(out.status.success(), "put {collection}/{rkey}: {out:?}");
}
