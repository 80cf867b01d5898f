//! Shared pieces of the comparison benchmarks.

use cid::Cid;
use multihash_codetable::{Code, MultihashDigest};

/// Deterministic splitmix64, the same generator the tests use.
pub use testkit::Rng;

/// `n` distinct random keys of 20–40 characters from `[a-z0-9]`.
#[must_use]
pub fn random_keys(n: usize, seed: u64) -> Vec<String> {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = Rng(seed);
    let mut seen = std::collections::HashSet::with_capacity(n);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let len = 20 + (rng.next_u64() % 21) as usize;
        let key: String = (0..len)
            .map(|_| char::from(ALPHABET[(rng.next_u64() % ALPHABET.len() as u64) as usize]))
            .collect();
        if seen.insert(key.clone()) {
            out.push(key);
        }
    }
    out
}

/// A raw-codec CID value for item `i`.
#[must_use]
pub fn raw_value(i: u64) -> Cid {
    Cid::new_v1(0x55, Code::Sha2_256.digest(&i.to_be_bytes()))
}

/// The value of command-line option `name` (`--name VALUE`), or `default`.
#[must_use]
pub fn arg<T: std::str::FromStr>(name: &str, default: T) -> T {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// CPU seconds (user + system) process `pid` has used.
#[must_use]
pub fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which is in parentheses).
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the whole line: 11 and 12 here.
    (ticks(11) + ticks(12)) / 100.0
}

/// Waits (at most 60 s) until process `pid` has finished what earlier
/// work left it (a store's flushes and compactions, freeing memory): under
/// a tenth of a core for half a second. Without it a measure pays for the
/// one before it.
pub async fn settle(pid: u32) {
    for _ in 0..120 {
        let before = cpu_secs(pid);
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        if cpu_secs(pid) - before < 0.05 {
            return;
        }
    }
}

/// A field of `/proc/self/status` in MiB (Linux; NaN elsewhere).
fn status_mib(field: &str) -> f64 {
    status_mib_of("self", field)
}

/// A field of `/proc/{process}/status` in MiB (Linux; NaN elsewhere).
fn status_mib_of(process: &str, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{process}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// Peak resident memory since the last [`reset_peak`], in MiB.
#[must_use]
pub fn peak_mib() -> f64 {
    status_mib("VmHWM:")
}

/// Peak resident memory of process `pid` so far, in MiB.
#[must_use]
pub fn peak_mib_of(pid: u32) -> f64 {
    status_mib_of(&pid.to_string(), "VmHWM:")
}

/// Resident memory now, in MiB.
#[must_use]
pub fn current_mib() -> f64 {
    status_mib("VmRSS:")
}

/// Resets the peak to the current resident size.
pub fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Runs `cmd` (spawned by the caller's settings of its standard streams)
/// to its end: its exit status, wall time from spawn, and peak resident
/// memory in MiB (`wait4`'s `ru_maxrss`; std's `Child::wait` does not
/// return it).
///
/// # Panics
///
/// When the command cannot start or `wait4` fails.
#[allow(unsafe_code, clippy::zombie_processes, clippy::disallowed_methods)]
pub fn run_measured(
    cmd: &mut std::process::Command,
) -> (std::process::ExitStatus, std::time::Duration, f64) {
    use std::os::unix::process::ExitStatusExt as _;
    let start = std::time::Instant::now();
    let child = cmd.spawn().unwrap_or_else(|e| panic!("start {cmd:?}: {e}"));
    let pid = i32::try_from(child.id()).expect("pid fits i32");
    let mut status = 0;
    // SAFETY: `rusage` is plain integers, valid when zeroed.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are to live locals that `wait4` only writes;
    // the child is ours and not yet reaped (its `Child` is never waited on).
    let rc = unsafe { libc::wait4(pid, &raw mut status, 0, &raw mut usage) };
    let wall = start.elapsed();
    assert_eq!(rc, pid, "wait4: {}", std::io::Error::last_os_error());
    // ru_maxrss is in KiB on Linux.
    #[allow(clippy::cast_precision_loss)]
    let peak_mib = usage.ru_maxrss as f64 / 1024.0;
    (std::process::ExitStatus::from_raw(status), wall, peak_mib)
}

/// The `datarepo` binary the process benchmarks run: `DATAREPO_BIN`, else
/// the workspace's release build (`cargo build --release --bin datarepo`).
#[must_use]
pub fn datarepo_bin() -> std::path::PathBuf {
    std::env::var_os("DATAREPO_BIN").map_or_else(
        || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/release/datarepo"),
        std::path::PathBuf::from,
    )
}

/// A `datarepo serve` process on a free loopback port, writing the store
/// at a path with a write token; killed when dropped.
pub struct ServeProcess {
    child: std::process::Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
}

impl ServeProcess {
    /// Starts `bin serve` on `store`, logging warnings only.
    ///
    /// # Panics
    ///
    /// When no port is free or the binary does not start.
    #[must_use]
    pub fn start(bin: &std::path::Path, store: &std::path::Path, token: &str) -> Self {
        Self::start_with(bin, store, token, &[])
    }

    /// [`ServeProcess::start`] with more arguments to `serve`.
    ///
    /// # Panics
    ///
    /// As [`ServeProcess::start`].
    #[must_use]
    pub fn start_with(
        bin: &std::path::Path,
        store: &std::path::Path,
        token: &str,
        serve_args: &[&str],
    ) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port();
        let addr = format!("127.0.0.1:{port}");
        let child = std::process::Command::new(bin)
            .arg("--store")
            .arg(store)
            .args(["serve", "--addr", &addr])
            // Every client of a benchmark comes from one loopback address.
            .args(["--max-connections-per-ip", "100000"])
            .args(serve_args)
            .env("DATAREPO_TOKEN", token)
            .env("RUST_LOG", "warn")
            .spawn()
            .expect("datarepo serve starts");
        Self {
            child,
            base: format!("http://{addr}"),
            addr,
        }
    }

    /// The server's process id.
    #[must_use]
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until the server answers `_health`.
    pub async fn ready(&self) {
        let client = reqwest::Client::new();
        while client
            .get(format!("{}/xrpc/_health", self.base))
            .send()
            .await
            .is_err()
        {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
}

impl ServeProcess {
    /// Stops the server as an operator does (SIGTERM: a clean shutdown)
    /// and waits for it to exit.
    ///
    /// # Panics
    ///
    /// When the process cannot be waited for.
    pub fn stop(mut self) -> std::process::ExitStatus {
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(sent.success(), "SIGTERM to datarepo serve");
        self.child.wait().expect("datarepo serve exits")
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What a benchmark does with each acknowledged write: its answer (JSON
/// text) and when it arrived.
pub type OnAck = std::sync::Arc<dyn Fn(&str, std::time::Instant) + Send + Sync>;

/// `writers` connections sending durable `createRecord`s to the server at
/// `base` for `secs`, each as fast as it is answered; writer `w`'s `n`th
/// body is `body(w, n)` (createRecord's input as JSON text). Each answer
/// goes to `on_ack`. The number acknowledged.
///
/// # Panics
///
/// When a request fails or is refused.
#[allow(clippy::disallowed_methods)] // a benchmark measures wall time
pub async fn create_records_for(
    base: &str,
    token: &str,
    secs: f64,
    writers: usize,
    body: std::sync::Arc<dyn Fn(usize, u64) -> String + Send + Sync>,
    on_ack: Option<OnAck>,
) -> u64 {
    let client = reqwest::Client::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs_f64(secs);
    let mut tasks = Vec::new();
    for w in 0..writers {
        let (client, body, on_ack) = (client.clone(), body.clone(), on_ack.clone());
        let url = format!("{base}/xrpc/com.atproto.repo.createRecord");
        let token = token.to_owned();
        tasks.push(tokio::spawn(async move {
            let mut n = 0u64;
            while std::time::Instant::now() < deadline {
                let response = client
                    .post(&url)
                    .bearer_auth(&token)
                    .header("content-type", "application/json")
                    .body(body(w, n))
                    .send()
                    .await
                    .expect("createRecord is answered");
                assert!(
                    response.status().is_success(),
                    "createRecord: {}",
                    response.status()
                );
                let text = response.text().await.expect("createRecord's answer");
                if let Some(on_ack) = &on_ack {
                    on_ack(&text, std::time::Instant::now());
                }
                n += 1;
            }
            n
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.expect("a writer finishes");
    }
    total
}

/// Sends durable `createRecord`s to the server at `base`, one at a time,
/// until `stop`; each one's latency. `record(i)` is the `i`th record's JSON.
///
/// # Panics
///
/// When a request fails or is refused.
#[allow(clippy::disallowed_methods)] // a benchmark measures wall time
pub async fn create_records_until(
    base: String,
    token: &str,
    repo: &str,
    collection: &str,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    record: impl Fn(usize) -> serde_json::Value,
) -> Vec<std::time::Duration> {
    let client = reqwest::Client::new();
    let url = format!("{base}/xrpc/com.atproto.repo.createRecord");
    let mut latencies = Vec::new();
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let body = serde_json::json!({"repo": repo, "collection": collection, "record": record(latencies.len())});
        let start = std::time::Instant::now();
        let response = client
            .post(&url)
            .bearer_auth(token)
            .json(&body)
            .send()
            .await
            .expect("createRecord is answered");
        assert!(
            response.status().is_success(),
            "createRecord: {}",
            response.status()
        );
        response.bytes().await.expect("createRecord's answer");
        latencies.push(start.elapsed());
    }
    latencies
}

/// `"N writes, p50 …, p99 …, max …"` of request latencies.
#[must_use]
pub fn latency_summary(mut latencies: Vec<std::time::Duration>) -> String {
    let Some(&max) = latencies.iter().max() else {
        return "no writes".into();
    };
    latencies.sort();
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    format!(
        "{} writes, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        latencies.len(),
        ms(latencies[latencies.len() / 2]),
        ms(latencies[(latencies.len() - 1) * 99 / 100]),
        ms(max)
    )
}
