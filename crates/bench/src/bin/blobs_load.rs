//! Blobs through `datarepo serve` as a process (a local store):
//!
//! 1. `uploadBlob` of 1 MiB and 50 MiB bodies, one at a time, against
//!    SHA-256 alone over the same bytes in this process (`sha2`, as the
//!    server hashes) and against the disk doing what an upload must (the
//!    bytes written, `fdatasync`ed and renamed, the directory synced), with
//!    the server's resident memory before and at its
//!    peak during the 50 MiB uploads (`/proc/PID/status`, `VmHWM` reset
//!    through `clear_refs`);
//! 2. `getBlob` of a 1 MiB blob with N connections, against the loopback
//!    transport's ceiling measured in the same run (N connections each
//!    reading 1 MiB buffers from an in-process TCP server that only
//!    writes);
//! 3. posts with an image (an `uploadBlob` of a small image, then a
//!    `createRecord` referring to it) against plain posts
//!    (`createRecord` only), both with sessions, N connections each writing
//!    its own account's repository, in rounds ordered plain, image, image,
//!    plain.
//!
//! ```sh
//! cargo build --release --bin datarepo
//! cargo run --release -p datarepo-bench --bin blobs-load -- [--secs 5] [--rounds 3] [--connections 64]
//! ```
//!
//! `--only posts` runs the third part alone (`--only images`: image posts
//! alone, for as long as `--secs`, e.g. under a profiler; `--only uploads`:
//! the uploads one at a time alone).

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use datarepo_bench::{ServeProcess, arg, datarepo_bin};
use serde_json::{Value, json};
use sha2::Digest;

const TOKEN: &str = "blobs-load-admin";
const COLLECTION: &str = "app.bsky.feed.post";
const MIB: usize = 1 << 20;

fn body(len: usize, seed: u64) -> bytes::Bytes {
    let mut rng = testkit::Rng(seed);
    (0..len)
        .map(|_| rng.below(256) as u8)
        .collect::<Vec<u8>>()
        .into()
}

/// A process's resident memory field (`VmRSS:`, `VmHWM:`) in MiB.
fn mib_of(pid: u32, field: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// SHA-256 alone over `bytes`, `rounds` times: bytes per second.
#[allow(clippy::disallowed_methods)] // a benchmark measures wall time
fn sha256_rate(bytes: &[u8], rounds: usize) -> f64 {
    let start = Instant::now();
    for _ in 0..rounds {
        std::hint::black_box(sha2::Sha256::digest(std::hint::black_box(bytes)));
    }
    (bytes.len() * rounds) as f64 / start.elapsed().as_secs_f64()
}

/// The disk's ceiling for what an upload does: `bytes` written to a new
/// file in `dir`, `fdatasync`ed, renamed and its directory synced, `rounds`
/// times: bytes per second.
#[allow(clippy::disallowed_methods)] // a benchmark measures wall time
fn durable_write_rate(dir: &std::path::Path, bytes: &[u8], rounds: usize) -> f64 {
    use std::io::Write as _;
    std::fs::create_dir_all(dir).expect("a directory for the disk's ceiling");
    let start = Instant::now();
    for round in 0..rounds {
        let temp = dir.join(format!("tmp-{round}"));
        let mut file = std::fs::File::create(&temp).expect("a file");
        file.write_all(bytes).expect("written");
        file.sync_data().expect("synced");
        std::fs::rename(&temp, dir.join(format!("done-{round}"))).expect("renamed");
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .expect("the directory synced");
    }
    let rate = (bytes.len() * rounds) as f64 / start.elapsed().as_secs_f64();
    let _ = std::fs::remove_dir_all(dir);
    rate
}

async fn upload(client: &reqwest::Client, base: &str, did: &str, bytes: bytes::Bytes) -> Value {
    let resp = client
        .post(format!(
            "{base}/xrpc/com.atproto.repo.uploadBlob?repo={did}"
        ))
        .bearer_auth(TOKEN)
        .header("content-type", "application/octet-stream")
        .body(bytes)
        .send()
        .await
        .expect("uploadBlob is answered");
    let status = resp.status();
    let out: Value = resp.json().await.expect("a JSON answer");
    assert!(status.is_success(), "uploadBlob: {status}: {out}");
    out
}

/// Uploads `bytes` `rounds` times (each a new blob: its first bytes
/// differ), one at a time: bytes per second.
#[allow(clippy::disallowed_methods)] // a benchmark measures wall time
async fn upload_rate(base: &str, did: &str, bytes: &bytes::Bytes, rounds: usize) -> f64 {
    let client = reqwest::Client::new();
    let mut total = Duration::ZERO;
    for round in 0..rounds {
        let mut each = bytes.to_vec();
        each[..8].copy_from_slice(&(round as u64 ^ 0x5eed).to_be_bytes());
        let each = bytes::Bytes::from(each);
        let start = Instant::now();
        upload(&client, base, did, each).await;
        total += start.elapsed();
    }
    (bytes.len() * rounds) as f64 / total.as_secs_f64()
}

/// `connections` clients each reading `url` over and over for `secs`:
/// bytes per second in all.
#[allow(clippy::disallowed_methods)] // a benchmark measures wall time
async fn get_rate(url: String, connections: usize, secs: u64) -> f64 {
    let stop = Arc::new(AtomicBool::new(false));
    let bytes = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = (0..connections)
        .map(|_| {
            let (url, stop, bytes) = (url.clone(), Arc::clone(&stop), Arc::clone(&bytes));
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                while !stop.load(Ordering::Relaxed) {
                    let resp = client.get(&url).send().await.expect("getBlob is answered");
                    assert!(resp.status().is_success(), "getBlob: {}", resp.status());
                    let got = resp.bytes().await.expect("the blob's bytes");
                    bytes.fetch_add(got.len() as u64, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    stop.store(true, Ordering::Relaxed);
    let elapsed = start.elapsed().as_secs_f64();
    for t in tasks {
        t.await.expect("a reader task");
    }
    bytes.load(Ordering::Relaxed) as f64 / elapsed
}

/// The loopback transport's ceiling: `connections` TCP connections to an
/// in-process server that writes 1 MiB buffers as fast as it can, each
/// read in 1 MiB requests (one byte asks for the next MiB), for `secs`.
#[allow(clippy::disallowed_methods)] // a benchmark measures wall time
async fn transport_ceiling(connections: usize, secs: u64) -> f64 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let addr = listener.local_addr().expect("its address");
    let payload = Arc::new(vec![7u8; MIB]);
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let payload = Arc::clone(&payload);
            tokio::spawn(async move {
                let mut ask = [0u8; 1];
                while socket.read_exact(&mut ask).await.is_ok() {
                    if socket.write_all(&payload).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    let stop = Arc::new(AtomicBool::new(false));
    let bytes = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = (0..connections)
        .map(|_| {
            let (stop, bytes) = (Arc::clone(&stop), Arc::clone(&bytes));
            tokio::spawn(async move {
                let mut socket = tokio::net::TcpStream::connect(addr)
                    .await
                    .expect("a loopback connection");
                let mut buf = vec![0u8; MIB];
                while !stop.load(Ordering::Relaxed) {
                    socket.write_all(&[1]).await.expect("asked");
                    socket.read_exact(&mut buf).await.expect("read");
                    bytes.fetch_add(MIB as u64, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    stop.store(true, Ordering::Relaxed);
    let elapsed = start.elapsed().as_secs_f64();
    for t in tasks {
        t.await.expect("a reader task");
    }
    bytes.load(Ordering::Relaxed) as f64 / elapsed
}

async fn post_json(client: &reqwest::Client, url: &str, bearer: &str, body: &Value) -> Value {
    let resp = client
        .post(url)
        .bearer_auth(bearer)
        .json(body)
        .send()
        .await
        .expect("the server answers");
    let status = resp.status();
    let out: Value = resp.json().await.expect("a JSON answer");
    assert!(status.is_success(), "{url}: {status}: {out}");
    out
}

/// Each session writes posts to its own repository for `secs`, with an
/// image (`image` bytes, uploaded first) or without: posts per second.
#[allow(clippy::disallowed_methods)] // a benchmark measures wall time
async fn post_round(
    base: &str,
    sessions: &[(String, String)],
    image: Option<bytes::Bytes>,
    secs: u64,
) -> f64 {
    let stop = Arc::new(AtomicBool::new(false));
    let posts = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = sessions
        .iter()
        .enumerate()
        .map(|(n, (did, jwt))| {
            let (base, did, jwt) = (base.to_owned(), did.clone(), jwt.clone());
            let (stop, posts, image) = (Arc::clone(&stop), Arc::clone(&posts), image.clone());
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                let create = format!("{base}/xrpc/com.atproto.repo.createRecord");
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    let mut record =
                        json!({"text": format!("post {i}"), "createdAt": "2026-11-27T00:00:00Z"});
                    if let Some(image) = &image {
                        // Each post's own image: its last bytes differ.
                        let mut bytes = image.to_vec();
                        let at = bytes.len() - 16;
                        bytes[at..at + 8].copy_from_slice(&(n as u64).to_be_bytes());
                        bytes[at + 8..].copy_from_slice(&i.to_be_bytes());
                        let resp = client
                            .post(format!("{base}/xrpc/com.atproto.repo.uploadBlob"))
                            .bearer_auth(&jwt)
                            .header("content-type", "image/png")
                            .body(bytes)
                            .send()
                            .await
                            .expect("uploadBlob is answered");
                        assert!(resp.status().is_success(), "uploadBlob: {}", resp.status());
                        let blob: Value = resp.json().await.expect("the blob");
                        record["embed"] = json!({"$type": "app.bsky.embed.images",
                            "images": [{"alt": "", "image": blob["blob"]}]});
                    }
                    post_json(
                        &client,
                        &create,
                        &jwt,
                        &json!({"repo": did, "collection": COLLECTION, "record": record}),
                    )
                    .await;
                    posts.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.expect("a writer task");
    }
    posts.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[allow(clippy::disallowed_methods)] // a benchmark measures wall time
fn main() {
    let secs: u64 = arg("--secs", 5);
    let rounds: usize = arg("--rounds", 3);
    let connections: usize = arg("--connections", 64);
    let image_bytes: usize = arg("--image-bytes", 100_000);
    let only: String = arg("--only", String::new());
    let bin = datarepo_bin();
    let dir = testkit::tempdir("blobs-load");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let server = ServeProcess::start(&bin, &dir.path().join("data"), TOKEN);
        server.ready().await;
        let pid = server.pid();
        let base = server.base.clone();
        let client = reqwest::Client::new();
        let mut sessions = Vec::new();
        for i in 0..connections {
            let out = post_json(
                &client,
                &format!("{base}/xrpc/com.atproto.server.createAccount"),
                TOKEN,
                &json!({"handle": format!("u{i}.blobs.test"), "password": "benchmark password"}),
            )
            .await;
            sessions.push((
                out["did"].as_str().expect("a DID").to_owned(),
                out["accessJwt"].as_str().expect("a token").to_owned(),
            ));
        }
        let did = sessions[0].0.clone();
        println!(
            "datarepo serve ({}), local store; {} cores\n",
            bin.display(),
            std::thread::available_parallelism().map_or(1, usize::from)
        );

        if only.is_empty() || only == "uploads" {
        println!("| upload | uploadBlob, one at a time | SHA-256 alone, same bytes | ratio | the disk: write, fdatasync, rename (same bytes) | ratio | server RSS before → peak |");
        println!("| --- | --- | --- | --- | --- | --- | --- |");
        for (size, count) in [(MIB, 50), (50 * MIB, 5)] {
            let bytes = body(size, size as u64);
            let hash = sha256_rate(&bytes, count);
            let disk = durable_write_rate(&dir.path().join("disk-ceiling"), &bytes, count);
            let before = mib_of(pid, "VmRSS:");
            let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
            let rate = upload_rate(&base, &did, &bytes, count).await;
            let peak = mib_of(pid, "VmHWM:");
            println!(
                "| {} MiB × {count} | {:.0} MB/s | {:.0} MB/s | {:.1}% | {:.0} MB/s | {:.1}% | {before:.0} → {peak:.0} MiB (+{:.0}) |",
                size / MIB,
                rate / 1e6,
                hash / 1e6,
                100.0 * rate / hash,
                disk / 1e6,
                100.0 * rate / disk,
                (peak - before).max(0.0)
            );
        }

        if only == "uploads" {
            server.stop();
            return;
        }

        // A 1 MiB blob a record refers to, read by every connection.
        let blob = upload(&client, &base, &did, body(MIB, 1)).await;
        post_json(
            &client,
            &format!("{base}/xrpc/com.atproto.repo.createRecord"),
            TOKEN,
            &json!({"repo": did, "collection": COLLECTION, "record": {"text": "a file",
                    "createdAt": "2026-11-27T00:00:00Z", "file": blob["blob"]}}),
        )
        .await;
        let cid = blob["blob"]["ref"]["$link"].as_str().expect("a CID");
        let url = format!("{base}/xrpc/com.atproto.sync.getBlob?did={did}&cid={cid}");
        let ceiling = transport_ceiling(connections, secs).await;
        let got = get_rate(url, connections, secs).await;
        println!(
            "\ngetBlob of 1 MiB, {connections} connections, {secs} s: {:.2} GB/s; loopback TCP ceiling (1 MiB reads, {connections} connections, same run): {:.2} GB/s; ratio {:.1}%",
            got / 1e9,
            ceiling / 1e9,
            100.0 * got / ceiling
        );
        }

        let image = body(image_bytes, 7);
        let mut image = image.to_vec();
        image[..8].copy_from_slice(b"\x89PNG\r\n\x1a\n");
        let image = bytes::Bytes::from(image);
        if only == "images" {
            let rate = post_round(&base, &sessions, Some(image), secs).await;
            println!("posts with a {image_bytes}-byte image: {rate:.0}/s");
            server.stop();
            return;
        }
        println!(
            "\nposts with a {image_bytes}-byte image (uploadBlob, then createRecord) vs plain posts (createRecord), sessions, {connections} connections, {rounds} rounds of {secs} s per mode\n"
        );
        println!("| round | plain posts/s | posts with an image/s | ratio |");
        println!("| --- | --- | --- | --- |");
        let mut ratios = Vec::new();
        for round in 0..rounds {
            let half = secs.div_ceil(2);
            let p1 = post_round(&base, &sessions, None, half).await;
            let i1 = post_round(&base, &sessions, Some(image.clone()), half).await;
            let i2 = post_round(&base, &sessions, Some(image.clone()), half).await;
            let p2 = post_round(&base, &sessions, None, half).await;
            let (p, i) = ((p1 + p2) / 2.0, (i1 + i2) / 2.0);
            ratios.push(i / p);
            println!("| {} | {p:.0} | {i:.0} | {:.1}% |", round + 1, 100.0 * i / p);
        }
        println!("\nmedian image / plain: {:.1}%", 100.0 * median(ratios));
        server.stop();
    });
}
