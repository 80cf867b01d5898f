//! Writes with sessions against writes with the admin token, on
//! `datarepo serve` as a process (a local store, durable writes): N
//! connections, each writing its own account's repository, in rounds of
//! the two modes ordered admin, sessions, sessions, admin (the same
//! binary, the same repositories, the store's growth cancelled out); then
//! what logging in costs (`createSession`, Argon2id by design), one at a
//! time and N at once, and whether N concurrent logins starve the writes
//! going on meanwhile.
//!
//! ```sh
//! cargo build --release --bin datarepo
//! cargo run --release -p datarepo-bench --bin sessions-load -- [--secs 5] [--rounds 3] [--connections 64]
//! ```
//!
//! `DATAREPO_LOAD_MODE=sessions scripts/load-test` runs it too.

use std::{
    sync::{Arc, atomic::AtomicBool},
    time::{Duration, Instant},
};

use datarepo_bench::{ServeProcess, arg, create_records_until, datarepo_bin, latency_summary};
use serde_json::{Value, json};

const TOKEN: &str = "sessions-load-admin";
const COLLECTION: &str = "app.bsky.feed.post";

fn record(i: usize) -> Value {
    json!({"text": format!("post {i} from the sessions benchmark"), "createdAt": "2026-11-27T00:00:00Z"})
}

async fn post(client: &reqwest::Client, url: String, bearer: Option<&str>, body: &Value) -> Value {
    let mut req = client.post(url).json(body);
    if let Some(t) = bearer {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.expect("the server answers");
    let status = resp.status();
    let out: Value = resp.json().await.expect("a JSON answer");
    assert!(status.is_success(), "{status}: {out}");
    out
}

/// Each connection writes its own repository with its own token for
/// `secs`: writes per second, and every write's latency.
async fn write_round(base: &str, tokens: &[(String, String)], secs: u64) -> (f64, Vec<Duration>) {
    let stop = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = tokens
        .iter()
        .map(|(did, token)| {
            let (base, did, token, stop) = (
                base.to_owned(),
                did.clone(),
                token.clone(),
                Arc::clone(&stop),
            );
            tokio::spawn(async move {
                create_records_until(base, &token, &did, COLLECTION, stop, record).await
            })
        })
        .collect();
    #[allow(clippy::disallowed_methods)] // a benchmark measures wall time
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut latencies = Vec::new();
    for t in tasks {
        latencies.extend(t.await.expect("a writer task"));
    }
    let rate = latencies.len() as f64 / start.elapsed().as_secs_f64();
    (rate, latencies)
}

/// Logs every account in at once: each login's latency, and the wall time.
#[allow(clippy::disallowed_methods)] // a benchmark measures wall time
async fn concurrent_logins(base: &str, handles: &[String]) -> (Vec<Duration>, Duration) {
    let start = Instant::now();
    let tasks: Vec<_> = handles
        .iter()
        .map(|h| {
            let (base, h) = (base.to_owned(), h.clone());
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                let t = Instant::now();
                post(
                    &client,
                    format!("{base}/xrpc/com.atproto.server.createSession"),
                    None,
                    &json!({"identifier": h, "password": "benchmark password"}),
                )
                .await;
                t.elapsed()
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for t in tasks {
        latencies.push(t.await.expect("a login task"));
    }
    (latencies, start.elapsed())
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
    let bin = datarepo_bin();
    let dir = testkit::tempdir("sessions-load");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let server = ServeProcess::start(&bin, &dir.path().join("data"), TOKEN);
        server.ready().await;
        let base = server.base.clone();
        let client = reqwest::Client::new();
        let handles: Vec<String> = (0..connections).map(|i| format!("u{i}.bench.test")).collect();
        let mut created = Vec::new();
        for h in &handles {
            let t = Instant::now();
            let out = post(
                &client,
                format!("{base}/xrpc/com.atproto.server.createAccount"),
                Some(TOKEN),
                &json!({"handle": h, "password": "benchmark password"}),
            )
            .await;
            created.push(t.elapsed());
            drop(out);
        }
        // Logins one at a time: what one costs.
        let mut sequential = Vec::new();
        let mut sessions = Vec::new();
        for h in &handles {
            let t = Instant::now();
            let out = post(
                &client,
                format!("{base}/xrpc/com.atproto.server.createSession"),
                None,
                &json!({"identifier": h, "password": "benchmark password"}),
            )
            .await;
            sequential.push(t.elapsed());
            sessions.push((
                out["did"].as_str().expect("a DID").to_owned(),
                out["accessJwt"].as_str().expect("a token").to_owned(),
            ));
        }
        let admin: Vec<(String, String)> = sessions
            .iter()
            .map(|(did, _)| (did.clone(), TOKEN.to_owned()))
            .collect();

        println!(
            "datarepo serve ({}), local store, {connections} connections, each writing its own account's repository; {rounds} rounds of {secs} s per mode (admin, sessions, sessions, admin: half each)\n",
            bin.display()
        );
        println!("| round | admin token, writes/s | sessions, writes/s | sessions / admin |");
        println!("| --- | --- | --- | --- |");
        let mut ratios = Vec::new();
        let mut last = (Vec::new(), Vec::new());
        for round in 0..rounds {
            // Admin, sessions, sessions, admin (half a round each): the
            // store grows as it goes, and this order cancels that drift.
            let half = secs.div_ceil(2);
            let a1 = write_round(&base, &admin, half).await;
            let s1 = write_round(&base, &sessions, half).await;
            let s2 = write_round(&base, &sessions, half).await;
            let a2 = write_round(&base, &admin, half).await;
            let (a, s) = ((a1.0 + a2.0) / 2.0, (s1.0 + s2.0) / 2.0);
            ratios.push(s / a);
            println!(
                "| {} | {a:.0} | {s:.0} | {:.1}% |",
                round + 1,
                100.0 * s / a
            );
            last = (
                a1.1.into_iter().chain(a2.1).collect(),
                s1.1.into_iter().chain(s2.1).collect(),
            );
        }
        println!("\nmedian sessions / admin: {:.1}%", 100.0 * median(ratios));
        println!("last round, admin: {}", latency_summary(last.0));
        println!("last round, sessions: {}", latency_summary(last.1));

        println!("\ncreateAccount, one at a time: {}", latency_summary(created).replace("writes", "accounts"));
        println!("createSession, one at a time: {}", latency_summary(sequential).replace("writes", "logins"));
        let (alone, wall) = concurrent_logins(&base, &handles).await;
        println!(
            "createSession, {connections} at once: {} (all done in {:.0} ms)",
            latency_summary(alone).replace("writes", "logins"),
            wall.as_secs_f64() * 1e3
        );

        // Writes while every account logs in at once, against writes alone.
        let quiet = write_round(&base, &sessions, secs).await;
        let (during, logins) = {
            let writing = {
                let (base, sessions) = (base.clone(), sessions.clone());
                tokio::spawn(async move { write_round(&base, &sessions, secs).await })
            };
            tokio::time::sleep(Duration::from_secs(secs / 3)).await;
            let logins = concurrent_logins(&base, &handles).await;
            (writing.await.expect("the writers"), logins)
        };
        println!(
            "\nwrites alone: {:.0}/s ({}); while {connections} logins ran (done in {:.0} ms): {:.0}/s ({}) = {:.1}%",
            quiet.0,
            latency_summary(quiet.1),
            logins.1.as_secs_f64() * 1e3,
            during.0,
            latency_summary(during.1),
            100.0 * during.0 / quiet.0
        );
        server.stop();
    });
}
