//! The Jetstream-compatible stream (`/subscribe`) of `datarepo serve` as a
//! process, on a local store:
//!
//! 1. Durable `createRecord` throughput (64 writers for `--secs`; one write
//!    in 100 to a rare collection) with no consumer, with `--consumers`
//!    (100) reading every event, and with as many asking only for the rare
//!    collection (`wantedCollections`), in rounds ordered none, all,
//!    filtered, none (the store's growth spread over both sides): each
//!    rate against the mean of the rounds with none, and the delay from
//!    each acknowledgement to its delivery to the consumers.
//! 2. One consumer replaying from cursor 0 every event the rounds made,
//!    plain and compressed (`compress=true`): events/s.
//! 3. Bytes per event: the JSON, zstd alone, zstd with the stream's
//!    dictionary (as served), against the firehose's frame of the same
//!    commits (`subscribeRepos` from cursor 0).
//! 4. What storing the events costs writes: `--cost-pairs` (3) pairs of
//!    rounds of one binary on one store, `serve` with events and with
//!    `--stream off`, ordered on/off then off/on alternately (the store's
//!    growth falls on both sides), no consumer.
//!
//!   cargo build --release --bin datarepo
//!   cargo run --release -p datarepo-bench --bin stream-load -- [--secs 10 --consumers 100 --cost-pairs 3]
//!
//! The consumers run in this process, on the server's cores (real ones
//! would not). `DATAREPO_BIN` names another binary.

#![allow(clippy::disallowed_methods, clippy::unwrap_used)] // a benchmark measures wall time

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
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

/// One round of writes with `consumers` connected with `query`: the write
/// rate, deliveries, and acknowledgement → delivery delays (sorted).
async fn round(
    addr: &str,
    base: &str,
    secs: f64,
    consumers: usize,
    query: &str,
) -> (f64, u64, Vec<Duration>) {
    let acks: Acks = Arc::new(Mutex::new(HashMap::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let mut readers = Vec::new();
    for consumer in 0..consumers {
        let mut socket = connect(addr, query).await;
        let (acks, stop) = (Arc::clone(&acks), Arc::clone(&stop));
        readers.push(tokio::spawn(async move {
            let mut received = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let Ok(Some(Ok(message))) =
                    tokio::time::timeout(Duration::from_millis(500), socket.next()).await
                else {
                    continue;
                };
                let at = Instant::now();
                // Every tenth consumer reads its events' CIDs to time them;
                // the others only receive.
                if let Message::Text(text) = message {
                    if consumer % 10 == 0 {
                        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
                        let cid = v["commit"]["cid"].as_str().unwrap_or_default().to_owned();
                        received.push((cid, at));
                    } else {
                        received.push((String::new(), at));
                    }
                }
            }
            let acks = acks.lock().unwrap();
            let delays: Vec<Duration> = received
                .iter()
                .filter_map(|(cid, at)| acks.get(cid).map(|ack| at.saturating_duration_since(*ack)))
                .collect();
            (received.len() as u64, delays)
        }));
    }
    let written = write_load(base, secs, (consumers > 0).then(|| Arc::clone(&acks))).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop.store(true, Ordering::Relaxed);
    let (mut delivered, mut delays) = (0, Vec::new());
    for r in readers {
        let (n, mut d) = r.await.unwrap();
        delivered += n;
        delays.append(&mut d);
    }
    delays.sort();
    (written as f64 / secs, delivered, delays)
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
        let (none_a, _, _) = round(&addr, &base, secs, 0, "").await;
        let (all, all_delivered, all_delays) = round(&addr, &base, secs, consumers, "").await;
        let rare = format!("wantedCollections={RARE}");
        let (filtered, filtered_delivered, filtered_delays) =
            round(&addr, &base, secs, consumers, &rare).await;
        let (none_b, _, _) = round(&addr, &base, secs, 0, "").await;
        let none = f64::midpoint(none_a, none_b);
        let line = |name: &str, rate: f64, delivered: u64, delays: &[Duration]| {
            println!(
                "{name}: createRecord {rate:.0}/s ({:.1}% of {none:.0}/s with none: {none_a:.0} before, {none_b:.0} after); \
                 {delivered} deliveries; ack -> delivery p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} timed)",
                100.0 * rate / none,
                percentile(delays, 0.5),
                percentile(delays, 0.99),
                percentile(delays, 1.0),
                delays.len()
            );
        };
        line(
            &format!("{consumers} consumers, every event"),
            all,
            all_delivered,
            &all_delays,
        );
        line(
            &format!("{consumers} consumers, {RARE} only (1% of writes)"),
            filtered,
            filtered_delivered,
            &filtered_delays,
        );

        for (name, query) in [("plain", "cursor=0"), ("compressed", "cursor=0&compress=true")] {
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
