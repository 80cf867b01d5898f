//! The web interface of `datarepo serve` (a process, on SlateDB in a local
//! directory) in headless Chromium, on a collection of `--n` (1,000,000)
//! records with a keyword index:
//!
//! 1. A collection's first page opened afresh in a new browser (nothing
//!    cached): milliseconds from navigation to the records shown, and the
//!    whole page's weight once its count and facets have arrived (bytes over
//!    the wire, every request included).
//! 2. The same page reached by clicking the collection on the repository
//!    page: milliseconds from the click to the records shown.
//! 3. The Pail tree opened at the root: milliseconds to the root's entries.
//!
//! Each is measured `--runs` (7) times; the median and the worst are shown.
//!
//!   cargo build --release --bin datarepo
//!   cargo run --release -p datarepo-bench --bin web-first-page -- [--n 1000000 --runs 7]
//!
//! Needs Debian's chromium and chromium-driver; `DATAREPO_BIN` names another
//! binary. The store is built once under target/bench-web-N and reused.

#![allow(clippy::disallowed_methods, clippy::unwrap_used)] // a benchmark measures wall time

use std::{
    path::Path,
    sync::Arc,
    time::{Duration, Instant},
};

use std::os::unix::process::CommandExt;

use fantoccini::{Client, ClientBuilder};
use repo::{Env, IndexKind, Repos, Write};
use serde_json::{Value, json};
use store::{SlateKv, Store};

const REPO: &str = "did:plc:webbench";
const COLLECTION: &str = "app.bsky.feed.post";
const LANGS: [&str; 6] = ["en", "ja", "de", "pt", "ko", "es"];

struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A process and the process group it leads, killed when dropped.
struct Group(std::process::Child);

impl Drop for Group {
    fn drop(&mut self) {
        let _ = std::process::Command::new("sh")
            .args(["-c", &format!("kill -9 -{}", self.0.id())])
            .status();
        // Should the group not be killed, the leader at least.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_for_port(port: u16) {
    for _ in 0..600 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("nothing listens on {port} after 30 s");
}

/// The repository, written in commits of 10,000 records, then indexed.
async fn build(dir: &Path, n: u64) {
    let kv = SlateKv::open_local(dir).await.unwrap();
    let clock = Arc::new(std::sync::atomic::AtomicU64::new(1_767_225_600_000_000));
    let env = Env::new(
        move || clock.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        1,
    );
    let repos = Repos::new(Arc::new(Store::new(kv.clone())), env);
    let repo = repos.create(REPO).await.unwrap();
    let start = Instant::now();
    let mut i = 0u64;
    while i < n {
        let end = (i + 10_000).min(n);
        let writes = (i..end)
            .map(|j| Write::Create {
                collection: COLLECTION.into(),
                rkey: Some(
                    rkey::Tid::from_parts(1_767_225_600_000_000 + j * 10, 7)
                        .unwrap()
                        .to_string(),
                ),
                value: json!({
                    "$type": COLLECTION,
                    "text": format!("post number {j}, with some words to make it look like a post"),
                    "langs": [LANGS[(j % 6) as usize]],
                    "createdAt": "2026-01-01T00:00:00.000Z",
                }),
            })
            .collect();
        repo.apply_writes(writes, None).await.unwrap();
        i = end;
    }
    repo.add_index(COLLECTION, "langs", IndexKind::Keyword, |_| {})
        .await
        .unwrap();
    kv.close().await.unwrap();
    println!(
        "built {n} records and a keyword index on SlateDB in {:.1} s",
        start.elapsed().as_secs_f64()
    );
}

async fn browser(driver_port: u16) -> Client {
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({"args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--window-size=1280,900"]}),
    );
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{driver_port}"))
        .await
        .unwrap()
}

async fn wait_for(c: &Client, expr: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let v = c
            .execute(
                &format!("try {{ return Boolean({expr}); }} catch (e) {{ return false; }}"),
                vec![],
            )
            .await
            .unwrap();
        if v == Value::Bool(true) {
            return;
        }
        assert!(Instant::now() < deadline, "waited 60 s for {expr}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn eval(c: &Client, script: &str) -> Value {
    c.execute(script, vec![]).await.unwrap()
}

fn summary(what: &str, mut v: Vec<f64>, unit: &str) {
    v.sort_by(f64::total_cmp);
    println!(
        "{what}: median {:.0} {unit}, worst {:.0} {unit} ({} runs)",
        v[v.len() / 2],
        v[v.len() - 1],
        v.len()
    );
}

fn main() {
    let n: u64 = datarepo_bench::arg("--n", 1_000_000);
    let runs: usize = datarepo_bench::arg("--runs", 7);
    let bin = datarepo_bench::datarepo_bin();
    assert!(
        bin.exists(),
        "build the release binary first: cargo build --release --bin datarepo"
    );
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../target/bench-web-{n}"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    if !dir.join(".built").exists() {
        let _ = std::fs::remove_dir_all(&dir);
        rt.block_on(build(&dir, n));
        std::fs::write(dir.join(".built"), b"").unwrap();
    }

    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let _server = Child(
        std::process::Command::new(&bin)
            .arg("--store")
            .arg(&dir)
            .args(["serve", "--addr", &addr])
            .env("RUST_LOG", "warn")
            .spawn()
            .unwrap(),
    );
    wait_for_port(port);
    let driver_port = free_port();
    // Chromium's temporary files (its profile, `scoped_dir`s a closed
    // session leaves) go in a directory removed at the end.
    let driver_tmp = testkit::tempdir("chromium");
    // In a process group of its own, which its browsers join: killed
    // together at the end (before `driver_tmp` is removed).
    let _driver = Group(
        std::process::Command::new("chromedriver")
            .arg(format!("--port={driver_port}"))
            .env("TMPDIR", driver_tmp.path())
            .process_group(0)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("chromedriver (Debian: apt-get install chromium chromium-driver)"),
    );
    wait_for_port(driver_port);
    let base = format!("http://{addr}");
    let collection = format!("{base}/repo/{REPO}/{COLLECTION}");

    rt.block_on(async {
        // A first load outside the measurements warms the server's caches,
        // as any running server's are.
        let c = browser(driver_port).await;
        c.goto(&collection).await.unwrap();
        wait_for(&c, "document.querySelector('.view[data-ready=records]')").await;
        c.close().await.unwrap();

        let (mut cold, mut weight, mut click, mut tree) = (vec![], vec![], vec![], vec![]);
        for _ in 0..runs {
            let c = browser(driver_port).await;
            c.goto(&collection).await.unwrap();
            wait_for(&c, "document.querySelector('.view[data-ready=records]')").await;
            cold.push(eval(&c, "return performance.getEntriesByName('records-shown')[0].startTime").await.as_f64().unwrap());
            wait_for(&c, "document.querySelector('.count').dataset.count && document.querySelector('[data-facet=langs] li a')").await;
            weight.push(
                eval(&c, "const nav = performance.getEntriesByType('navigation')[0]; return nav.transferSize + performance.getEntriesByType('resource').reduce((n, r) => n + r.transferSize, 0)")
                    .await
                    .as_f64()
                    .unwrap(),
            );

            c.goto(&format!("{base}/repo/{REPO}")).await.unwrap();
            wait_for(&c, &format!("document.querySelector('tr[data-collection=\"{COLLECTION}\"] a')")).await;
            eval(&c, &format!("window.__clicked = performance.now(); document.querySelector('tr[data-collection=\"{COLLECTION}\"] a').click(); return null")).await;
            wait_for(&c, "document.querySelector('.view[data-ready=records]')").await;
            click.push(
                eval(&c, "return performance.getEntriesByName('records-shown').at(-1).startTime - window.__clicked")
                    .await
                    .as_f64()
                    .unwrap(),
            );

            c.goto(&format!("{base}/repo/{REPO}/pail")).await.unwrap();
            wait_for(&c, "document.querySelector('.view[data-ready=tree]')").await;
            tree.push(eval(&c, "return performance.getEntriesByName('tree-shown')[0].startTime").await.as_f64().unwrap());
            c.close().await.unwrap();
        }
        summary(&format!("collection of {n}: first page shown after navigation (new browser)"), cold, "ms");
        summary("  whole page weight (records, count, facets, files)", weight.iter().map(|b| b / 1024.0).collect(), "KiB");
        summary("  first page shown after clicking the collection", click, "ms");
        summary("Pail tree: root's entries shown after navigation (new browser)", tree, "ms");
    });
}
