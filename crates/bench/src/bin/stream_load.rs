//! The Jetstream-compatible stream (`/subscribe`) of `datarepo serve` as a
//! process, on a local store:
//!
//! 1. Durable `createRecord` throughput (64 writers for `--secs`; one write
//!    in 100 to a rare collection) with no consumer, with `--consumers`
//!    (100) reading every event, and with as many asking only for the rare
//!    collection (`wantedCollections`), in rounds ordered none, then all,
//!    filtered, none `--repeats` (3) times (the store's growth and the
//!    machine's noise spread over every kind): each kind's mean rate
//!    against the mean of the rounds with none, each round against the
//!    rounds with none on either side, and the delay from each
//!    acknowledgement to its delivery to the consumers.
//! 2. One consumer replaying from cursor 0 every event the rounds made,
//!    plain and compressed (`compress=true`), each once the server is idle
//!    (not compacting what the rounds wrote): events/s.
//! 3. Bytes per event: the JSON, zstd alone, zstd with the stream's
//!    dictionary (as served), against the firehose's frame of the same
//!    commits (`subscribeRepos` from cursor 0).
//! 4. What storing the events costs writes: `--cost-pairs` (3) pairs of
//!    rounds of one binary on one store, `serve` with events and with
//!    `--stream off`, ordered on/off then off/on alternately (the store's
//!    growth falls on both sides), no consumer.
//!
//!   cargo build --release --bin datarepo
//!   cargo run --release -p datarepo-bench --bin stream-load -- [--secs 10 --consumers 100 --repeats 3 --cost-pairs 3]
//!
//! The consumers run in this process, on the server's cores (real ones
//! would not). `DATAREPO_BIN` names another binary.

#![allow(clippy::disallowed_methods, clippy::unwrap_used)] // a benchmark measures wall time

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use futures_util::StreamExt;
use tokio_tungstenite::tungstenite::Message;

const TOKEN: &str = "bench";
const WRITERS: usize = 64;
const REPO: &str = "did:plc:streambench";
const COMMON: &str = "app.bsky.feed.post";
const RARE: &str = "app.bench.rare";

/// Acknowledgement times by record CID.
type Acks = Arc<Mutex<HashMap<String, Instant>>>;

/// `WRITERS` writers creating records for `secs` (every 100th in `RARE`);
/// the acknowledged count.
async fn write_load(base: &str, secs: f64, acks: Option<Acks>) -> u64 {
    let body = Arc::new(|w: usize, n: u64| {
        let collection = if (n * WRITERS as u64 + w as u64).is_multiple_of(100) {
            RARE
        } else {
            COMMON
        };
        format!(
            r#"{{"repo":"{REPO}","collection":"{collection}","record":{{"$type":"{collection}","text":"post {w}/{n}: a sentence of ordinary length about nothing much","langs":["en"],"createdAt":"2026-11-27T00:00:00.000Z"}}}}"#
        )
    });
    let on_ack = acks.map(|acks| -> datarepo_bench::OnAck {
        Arc::new(move |text, at| {
            let v: serde_json::Value = serde_json::from_str(text).unwrap();
            let cid = v["cid"].as_str().unwrap().to_owned();
            acks.lock().unwrap().insert(cid, at);
        })
    });
    datarepo_bench::create_records_for(base, TOKEN, secs, WRITERS, body, on_ack).await
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect(addr: &str, query: &str) -> Socket {
    let url = format!("ws://{addr}/subscribe?{query}");
    tokio_tungstenite::connect_async(url).await.unwrap().0
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    sorted
        .get(((sorted.len().max(1) - 1) as f64 * p) as usize)
        .map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

/// What one round of writes measured.
struct Round {
    /// Acknowledged writes per second.
    rate: f64,
    /// Events the consumers received.
    delivered: u64,
    /// Acknowledgement → delivery delays, sorted.
    delays: Vec<Duration>,
    /// The server's CPU seconds (user + system) per acknowledged write.
    cpu_per_write: f64,
}

/// One round of writes on `server` with `consumers` connected with
/// `query`.
async fn round(
    server: &datarepo_bench::ServeProcess,
    secs: f64,
    consumers: usize,
    query: &str,
) -> Round {
    let (addr, base) = (server.addr.as_str(), server.base.as_str());
    let acks: Acks = Arc::new(Mutex::new(HashMap::new()));
    // The consumers cost this process as little as they can (they share
    // the server's cores): each counts its messages, and every tenth also
    // reads its events' CIDs and times them; they are stopped by aborting
    // them, with no timer per message.
    let delivered = Arc::new(AtomicU64::new(0));
    let mut timed = Vec::new();
    let mut readers = Vec::new();
    for consumer in 0..consumers {
        let mut socket = connect(addr, query).await;
        let delivered = Arc::clone(&delivered);
        let times = (consumer % 10 == 0).then(|| {
            let times: Arc<Mutex<Vec<(String, Instant)>>> = Arc::default();
            timed.push(Arc::clone(&times));
            times
        });
        readers.push(tokio::spawn(async move {
            while let Some(Ok(message)) = socket.next().await {
                if let Message::Text(text) = message {
                    delivered.fetch_add(1, Ordering::Relaxed);
                    if let Some(times) = &times {
                        let at = Instant::now();
                        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
                        let cid = v["commit"]["cid"].as_str().unwrap_or_default().to_owned();
                        times.lock().unwrap().push((cid, at));
                    }
                }
            }
        }));
    }
    datarepo_bench::settle(server.pid()).await;
    let cpu_before = datarepo_bench::cpu_secs(server.pid());
    // Every round records its acknowledgements, so that the writers'
    // client does the same work whether or not consumers are connected.
    let written = write_load(base, secs, Some(Arc::clone(&acks))).await;
    let server_cpu = datarepo_bench::cpu_secs(server.pid()) - cpu_before;
    tokio::time::sleep(Duration::from_secs(1)).await;
    for reader in &readers {
        reader.abort();
    }
    let delivered = delivered.load(Ordering::Relaxed);
    let acks = acks.lock().unwrap();
    let mut delays: Vec<Duration> = timed
        .iter()
        .flat_map(|times| {
            times
                .lock()
                .unwrap()
                .iter()
                .filter_map(|(cid, at)| acks.get(cid).map(|ack| at.saturating_duration_since(*ack)))
                .collect::<Vec<_>>()
        })
        .collect();
    delays.sort();
    Round {
        rate: written as f64 / secs,
        delivered,
        delays,
        cpu_per_write: server_cpu / written.max(1) as f64,
    }
}

/// One consumer reading every event from cursor 0 until none comes for a
/// second: events, bytes of messages, seconds.
async fn replay(addr: &str, query: &str) -> (u64, usize, f64) {
    let mut socket = connect(addr, query).await;
    let start = Instant::now();
    let (mut last, mut n, mut bytes) = (start, 0u64, 0usize);
    while let Ok(Some(Ok(message))) =
        tokio::time::timeout(Duration::from_secs(1), socket.next()).await
    {
        match message {
            Message::Text(text) => bytes += text.len(),
            Message::Binary(frame) => bytes += frame.len(),
            _ => continue,
        }
        n += 1;
        last = Instant::now();
    }
    (n, bytes, last.duration_since(start).as_secs_f64())
}

/// The mean size of the first `n` binary messages at WebSocket `url`
/// (firehose frames, compressed stream events).
async fn mean_binary_bytes(url: &str, n: u64) -> f64 {
    let mut socket = tokio_tungstenite::connect_async(url).await.unwrap().0;
    let (mut frames, mut bytes) = (0u64, 0usize);
    while frames < n {
        match tokio::time::timeout(Duration::from_secs(2), socket.next()).await {
            Ok(Some(Ok(Message::Binary(frame)))) => {
                frames += 1;
                bytes += frame.len();
            }
            Ok(Some(Ok(_))) => {}
            _ => break,
        }
    }
    bytes as f64 / frames.max(1) as f64
}

/// Plain and zstd-alone bytes of the first `n` events (level 3, as the
/// server compresses).
async fn plain_and_zstd_bytes(addr: &str, n: u64) -> (f64, f64) {
    let mut socket = connect(addr, "cursor=0").await;
    let (mut events, mut plain, mut zstd_alone) = (0u64, 0usize, 0usize);
    while events < n {
        match tokio::time::timeout(Duration::from_secs(2), socket.next()).await {
            Ok(Some(Ok(Message::Text(text)))) => {
                events += 1;
                plain += text.len();
                zstd_alone += zstd::bulk::compress(text.as_bytes(), 3).unwrap().len();
            }
            Ok(Some(Ok(_))) => {}
            _ => break,
        }
    }
    let n = events.max(1) as f64;
    (plain as f64 / n, zstd_alone as f64 / n)
}

/// Part 4: write rates with and without stream events, round by round.
fn cost_pairs(bin: &std::path::Path, secs: f64, pairs: usize) {
    let dir = testkit::tempdir("bench-stream-cost");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut ratios = Vec::new();
    for pair in 0..pairs {
        let order: [bool; 2] = if pair % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        };
        let mut rates = [0.0; 2];
        for with_events in order {
            let args: &[&str] = if with_events {
                &[]
            } else {
                &["--stream", "off"]
            };
            let server = datarepo_bench::ServeProcess::start_with(bin, dir.path(), TOKEN, args);
            let rate = rt.block_on(async {
                server.ready().await;
                write_load(&server.base, 1.0, None).await;
                write_load(&server.base, secs, None).await as f64 / secs
            });
            server.stop();
            rates[usize::from(!with_events)] = rate;
        }
        let ratio = rates[0] / rates[1];
        println!(
            "cost pair {}: {:.0} writes/s with stream events, {:.0} with --stream off: {:.1}%",
            pair + 1,
            rates[0],
            rates[1],
            100.0 * ratio
        );
        ratios.push(ratio);
    }
    ratios.sort_by(f64::total_cmp);
    if let Some(median) = ratios.get(ratios.len() / 2) {
        println!(
            "stream events cost createRecord: median {:.1}% of the rate without them (pairs {:.1}-{:.1}%)",
            100.0 * median,
            100.0 * ratios[0],
            100.0 * ratios[ratios.len() - 1]
        );
    }
}

fn main() {
    let secs: f64 = datarepo_bench::arg("--secs", 10.0);
    let consumers: usize = datarepo_bench::arg("--consumers", 100);
    let pairs: usize = datarepo_bench::arg("--cost-pairs", 3);
    let repeats: usize = datarepo_bench::arg("--repeats", 3);
    let bin = datarepo_bench::datarepo_bin();
    assert!(
        bin.exists(),
        "build the release binary first: cargo build --release --bin datarepo"
    );
    let dir = testkit::tempdir("bench-stream-load");
    // Every consumer comes from one loopback address.
    let server = datarepo_bench::ServeProcess::start_with(
        &bin,
        dir.path(),
        TOKEN,
        &["--max-subscribers-per-ip", "100000"],
    );
    let (addr, base) = (server.addr.clone(), server.base.clone());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        server.ready().await;
        write_load(&base, 1.0, None).await;
        // Rounds none, then (all, filtered, none) `--repeats` times: the
        // store's growth and this VM's noise fall on every kind of round.
        let rare = format!("wantedCollections={RARE}");
        let mut none = vec![round(&server, secs, 0, "").await];
        let mut kinds: [(String, Vec<Round>); 2] = [
            (format!("{consumers} consumers, every event"), Vec::new()),
            (format!("{consumers} consumers, {RARE} only (1% of writes)"), Vec::new()),
        ];
        for _ in 0..repeats {
            for (kind, query) in kinds.iter_mut().zip(["", rare.as_str()]) {
                kind.1.push(round(&server, secs, consumers, query).await);
            }
            none.push(round(&server, secs, 0, "").await);
        }
        let mean = |rounds: &[Round], f: fn(&Round) -> f64| {
            rounds.iter().map(f).sum::<f64>() / rounds.len().max(1) as f64
        };
        let rates = |rounds: &[Round]| {
            rounds.iter().map(|r| format!("{:.0}", r.rate)).collect::<Vec<_>>().join(", ")
        };
        let none_rate = mean(&none, |r| r.rate);
        let none_cpu = mean(&none, |r| r.cpu_per_write);
        println!(
            "no consumer: createRecord {none_rate:.0}/s (rounds {}); server CPU {:.0} µs per write",
            rates(&none),
            1e6 * none_cpu
        );
        for (name, rounds) in &kinds {
            let mut delays: Vec<Duration> =
                rounds.iter().flat_map(|r| r.delays.iter().copied()).collect();
            delays.sort();
            let delivered: u64 = rounds.iter().map(|r| r.delivered).sum();
            // Each round against the mean of the rounds with none on either side.
            let ratios: Vec<String> = rounds
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    format!("{:.1}%", 100.0 * r.rate / f64::midpoint(none[i].rate, none[i + 1].rate))
                })
                .collect();
            let (rate, cpu) = (mean(rounds, |r| r.rate), mean(rounds, |r| r.cpu_per_write));
            println!(
                "{name}: createRecord {rate:.0}/s ({:.1}% of {none_rate:.0}/s with none; rounds {}: {}); \
                 server CPU {:.0} µs per write (+{:.1}%); {delivered} deliveries; \
                 ack -> delivery p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} timed)",
                100.0 * rate / none_rate,
                rates(rounds),
                ratios.join(", "),
                1e6 * cpu,
                100.0 * (cpu / none_cpu - 1.0),
                percentile(&delays, 0.5),
                percentile(&delays, 0.99),
                percentile(&delays, 1.0),
                delays.len()
            );
        }

        for (name, query) in [("plain", "cursor=0"), ("compressed", "cursor=0&compress=true")] {
            // As each round: not while the server compacts what the rounds
            // wrote.
            datarepo_bench::settle(server.pid()).await;
            let (n, bytes, elapsed) = replay(&addr, query).await;
            println!(
                "replay from cursor 0, {name}: {n} events ({:.1} MiB) in {elapsed:.2} s = {:.0} events/s",
                bytes as f64 / f64::from(1 << 20),
                n as f64 / elapsed
            );
        }
        let sample = 20_000;
        let (plain, zstd_alone) = plain_and_zstd_bytes(&addr, sample).await;
        let with_dictionary =
            mean_binary_bytes(&format!("ws://{addr}/subscribe?cursor=0&compress=true"), sample)
                .await;
        let firehose = mean_binary_bytes(
            &format!("ws://{addr}/xrpc/com.atproto.sync.subscribeRepos?cursor=0"),
            sample,
        )
        .await;
        println!(
            "bytes per event (first {sample}): {plain:.0} JSON, {zstd_alone:.0} zstd alone, \
             {with_dictionary:.0} zstd with the dictionary; the firehose's frame of the same commits: \
             {firehose:.0} ({:.1}x the JSON, {:.1}x the dictionary frame)",
            firehose / plain,
            firehose / with_dictionary
        );
    });
    server.stop();
    cost_pairs(&bin, secs, pairs);
}
