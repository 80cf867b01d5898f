//! The firehose of `datarepo serve` as a process, on a local store:
//!
//! 1. Durable `createRecord` throughput (64 writers for `--secs`) with no
//!    consumer, then with `--consumers` (100) connected: the ratio, and the
//!    delay from each acknowledgement to its delivery to every consumer
//!    (p50, p99, max).
//! 2. One consumer replaying from cursor 0 every retained event (topped up
//!    to `--replay` events by more writes first): events/s; then, for
//!    scale, how many frames/s of the same size one WebSocket carries
//!    when nothing but sending them is done.
//!
//!   cargo build --release --bin datarepo
//!   cargo run --release -p datarepo-bench --bin firehose -- [--secs 10 --consumers 100 --replay 1000000]
//!
//! `DATAREPO_BIN` names another binary.

#![allow(clippy::disallowed_methods, clippy::unwrap_used)] // a benchmark measures wall time

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use futures_util::StreamExt;

const TOKEN: &str = "bench";
const WRITERS: usize = 64;

/// Acknowledgement times by commit CID.
type Acks = Arc<Mutex<HashMap<String, Instant>>>;

/// `WRITERS` writers creating records for `secs`; the acknowledged count.
async fn write_load(base: &str, secs: f64, acks: Option<Acks>) -> u64 {
    let body = Arc::new(|w: usize, n: u64| {
        format!(
            r#"{{"repo":"did:plc:firehosebench","collection":"app.bsky.feed.post","record":{{"text":"post {w}/{n}","createdAt":"2026-11-25T00:00:00Z"}}}}"#
        )
    });
    let on_ack = acks.map(|acks| -> datarepo_bench::OnAck {
        Arc::new(move |text, at| {
            let v: serde_json::Value = serde_json::from_str(text).unwrap();
            let cid = v["commit"]["cid"].as_str().unwrap().to_owned();
            acks.lock().unwrap().insert(cid, at);
        })
    });
    datarepo_bench::create_records_for(base, TOKEN, secs, WRITERS, body, on_ack).await
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect(addr: &str, cursor: Option<u64>) -> Socket {
    let mut url = format!("ws://{addr}/xrpc/com.atproto.sync.subscribeRepos");
    if let Some(c) = cursor {
        url += &format!("?cursor={c}");
    }
    tokio_tungstenite::connect_async(url).await.unwrap().0
}

/// Frames/s that one WebSocket carries on loopback when nothing but
/// sending is done: `n` copies of one `size`-byte frame, sent as the
/// server sends (fed, flushed every 64) with tungstenite (the library
/// under axum's WebSocket) and received as the replay receives. The
/// ceiling of any replay of frames this size on this machine.
async fn transport_ceiling(size: usize, n: u64) -> f64 {
    use futures_util::SinkExt;
    use tokio_tungstenite::tungstenite::Message;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let sender = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut socket = tokio_tungstenite::accept_async(tcp).await.unwrap();
        let frame = bytes::Bytes::from(vec![0xa5; size]);
        for i in 1..=n {
            socket.feed(Message::Binary(frame.clone())).await.unwrap();
            if i % 64 == 0 {
                socket.flush().await.unwrap();
            }
        }
        socket.flush().await.unwrap();
        socket.close(None).await.unwrap();
    });
    let mut socket = tokio_tungstenite::connect_async(format!("ws://{addr}/"))
        .await
        .unwrap()
        .0;
    let start = Instant::now();
    let mut received = 0u64;
    while let Some(Ok(message)) = socket.next().await {
        if let tokio_tungstenite::tungstenite::Message::Binary(_) = message {
            received += 1;
            if received == n {
                break;
            }
        }
    }
    let rate = received as f64 / start.elapsed().as_secs_f64();
    sender.await.unwrap();
    rate
}

/// The server's `datarepo_commits_total` (one event per commit).
async fn commits_total(base: &str) -> u64 {
    let text = reqwest::get(format!("{base}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("datarepo_commits_total "))
        .and_then(|n| n.trim().parse().ok())
        .expect("the server's metrics count commits")
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p) as usize]
}

fn main() {
    let secs: f64 = datarepo_bench::arg("--secs", 10.0);
    let consumers: usize = datarepo_bench::arg("--consumers", 100);
    let replay: u64 = datarepo_bench::arg("--replay", 1_000_000);
    let bin = datarepo_bench::datarepo_bin();
    assert!(
        bin.exists(),
        "build the release binary first: cargo build --release --bin datarepo"
    );
    let dir = std::env::temp_dir().join(format!("datarepo-bench-firehose-{}", std::process::id()));
    let server = datarepo_bench::ServeProcess::start(&bin, &dir, TOKEN);
    let (addr, base) = (server.addr.clone(), server.base.clone());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        server.ready().await;
        // Warm up (creates the repository).
        write_load(&base, 1.0, None).await;

        let commits_before = commits_total(&base).await;
        let none = write_load(&base, secs, None).await;
        let rate_none = none as f64 / secs;
        let writes_per_event = none as f64 / (commits_total(&base).await - commits_before).max(1) as f64;

        let acks: Acks = Arc::new(Mutex::new(HashMap::new()));
        let delays = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut readers = Vec::new();
        for consumer in 0..consumers {
            let mut socket = connect(&addr, None).await;
            let (acks, delays, stop) = (Arc::clone(&acks), Arc::clone(&delays), Arc::clone(&stop));
            readers.push(tokio::spawn(async move {
                let mut received = Vec::new();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let Ok(Some(Ok(message))) =
                        tokio::time::timeout(Duration::from_millis(500), socket.next()).await
                    else {
                        continue;
                    };
                    let at = Instant::now();
                    // Every tenth consumer decodes its frames to time them;
                    // the others only receive (the consumers share the
                    // server's 2 cores, unlike real ones).
                    if let tokio_tungstenite::tungstenite::Message::Binary(bytes) = message {
                        if consumer % 10 != 0 {
                            received.push((String::new(), at));
                        } else if let Ok(repo::Frame::Commit(event)) = repo::decode_frame(&bytes) {
                            received.push((event.commit.to_string(), at));
                        }
                    }
                }
                // Matched after the load: acknowledgements may land after
                // their deliveries.
                let acks = acks.lock().unwrap();
                let mut mine: Vec<Duration> = received
                    .iter()
                    .filter_map(|(cid, at)| {
                        acks.get(cid)
                            .map(|ack| at.saturating_duration_since(*ack))
                    })
                    .collect();
                let n = received.len();
                delays.lock().unwrap().append(&mut mine);
                n
            }));
        }
        let with = write_load(&base, secs, Some(Arc::clone(&acks))).await;
        let rate_with = with as f64 / secs;
        tokio::time::sleep(Duration::from_secs(1)).await;
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let mut delivered = 0;
        for r in readers {
            delivered += r.await.unwrap();
        }
        let mut delays = std::mem::take(&mut *delays.lock().unwrap());
        delays.sort();
        if delays.is_empty() {
            delays.push(Duration::ZERO);
        }
        println!(
            "createRecord: {rate_none:.0}/s with no consumer, {rate_with:.0}/s with {consumers} \
             ({:.1}%); {delivered} deliveries; ack -> delivery p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            100.0 * rate_with / rate_none,
            percentile(&delays, 0.5).as_secs_f64() * 1e3,
            percentile(&delays, 0.99).as_secs_f64() * 1e3,
            delays.last().unwrap().as_secs_f64() * 1e3,
        );
        // Frames/s the consumers would receive at 90% of the write rate
        // with none, with as many writes per event (group commit).
        if consumers > 0 {
            let events = 0.9 * rate_none / writes_per_event;
            println!(
                "90% of the rate with none: {events:.0} events/s ({writes_per_event:.2} writes \
                 per event with no consumer), {:.0} frames/s to {consumers} consumers",
                events * consumers as f64
            );
        }

        // Replay: top up to `replay` events (writes, at most: concurrent
        // writes share commits), then read every event from 0, until none
        // comes for a second.
        let mut written = 1 + none + with;
        while written < replay {
            let need = (replay - written) as f64;
            written += write_load(&base, (need / rate_none.max(1.0)).clamp(1.0, 60.0), None).await;
            eprintln!("{written} writes");
        }
        if replay > 0 {
            let mut socket = connect(&addr, Some(0)).await;
            let start = Instant::now();
            let mut last = start;
            let mut n = 0u64;
            let mut bytes = 0usize;
            while let Ok(Some(Ok(message))) =
                tokio::time::timeout(Duration::from_secs(1), socket.next()).await
            {
                if let tokio_tungstenite::tungstenite::Message::Binary(frame) = message {
                    bytes += frame.len();
                    n += 1;
                    last = Instant::now();
                }
            }
            let elapsed = last.duration_since(start).as_secs_f64();
            println!(
                "replay from cursor 0: {n} events ({:.0} MiB of frames, {written} writes) in {elapsed:.2} s = {:.0} events/s",
                bytes as f64 / (1 << 20) as f64,
                n as f64 / elapsed
            );
            let size = bytes / usize::try_from(n.max(1)).unwrap();
            let rate = transport_ceiling(size, n.max(1)).await;
            println!(
                "transport alone (the same number of {size}-byte frames, built once, one WebSocket, this process): {rate:.0} frames/s"
            );
        }
    });
    // The server first: while it runs it writes into the directory.
    server.stop();
    let _ = std::fs::remove_dir_all(&dir);
}
