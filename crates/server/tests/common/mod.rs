//! A datarepo server on 127.0.0.1 for the tests, stopped when dropped.
#![allow(dead_code, unreachable_pub)]

pub mod sessions;

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use repo::{Env, Repos};
use serde_json::Value;
use server::Config;
use store::{Kv, MemoryKv, SlateKv, Store};

pub const TOKEN: &str = "test-token";
pub const DID: &str = "did:web:server.example";

pub fn env() -> Env {
    let t = Arc::new(AtomicU64::new(1_767_225_600_000_000));
    Env::new(move || t.fetch_add(1000, Ordering::Relaxed), 5)
}

pub fn config() -> Config {
    Config {
        token: Some(TOKEN.into()),
        ..Config::default()
    }
}

pub struct TestServer {
    pub url: String,
    pub client: reqwest::Client,
    stop: std::sync::Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
    task: tokio::sync::Mutex<Option<tokio::task::JoinHandle<std::io::Result<()>>>>,
}

impl TestServer {
    pub async fn start<K: Kv + 'static>(kv: K, config: Config) -> Self {
        let repos = Arc::new(Repos::new(Arc::new(Store::new(kv)), env()));
        Self::start_repos(repos, config).await
    }

    pub async fn start_repos<K: Kv + 'static>(repos: Arc<Repos<K>>, config: Config) -> Self {
        Self::start_router(server::router(repos, config)).await
    }

    pub async fn start_router(router: axum::Router) -> Self {
        Self::start_router_with(router, server::ConnectionLimits::default()).await
    }

    pub async fn start_router_with(router: axum::Router, limits: server::ConnectionLimits) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(server::serve_with(listener, router, limits, async move {
            let _ = stopped.await;
        }));
        Self {
            url,
            // A fresh connection per request: a server may close a
            // connection after refusing a body it did not read (413, 401),
            // and a pooled client could write its next request into it.
            client: reqwest::Client::builder()
                .pool_max_idle_per_host(0)
                .build()
                .unwrap(),
            stop: std::sync::Mutex::new(Some(stop)),
            task: tokio::sync::Mutex::new(Some(task)),
        }
    }

    pub async fn memory() -> Self {
        Self::start(MemoryKv::new(), config()).await
    }

    /// Stops accepting, waits for requests in flight, and returns.
    pub async fn stop(&self) {
        if let Some(stop) = self.stop.lock().unwrap().take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.lock().await.take() {
            task.await.unwrap().unwrap();
        }
    }

    /// The `/metrics` exposition.
    pub async fn scrape(&self) -> String {
        let response = self
            .client
            .get(format!("{}/metrics", self.url))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        response.text().await.unwrap()
    }

    /// The server's `host:port`.
    pub fn addr(&self) -> &str {
        self.url.trim_start_matches("http://")
    }

    pub fn xrpc(&self, method: &str) -> String {
        format!("{}/xrpc/{method}", self.url)
    }

    /// POSTs JSON with the test token; returns (status, body).
    pub async fn post(&self, method: &str, body: &Value) -> (u16, Value) {
        self.post_raw(method, body.to_string().into_bytes(), Some(TOKEN))
            .await
    }

    pub async fn post_raw(&self, method: &str, body: Vec<u8>, token: Option<&str>) -> (u16, Value) {
        let mut req = self
            .client
            .post(self.xrpc(method))
            .header("content-type", "application/json")
            .body(body);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let bytes = resp.bytes().await.unwrap();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    /// GETs with query parameters; returns (status, body).
    pub async fn get(&self, method: &str, query: &[(&str, &str)]) -> (u16, Value) {
        let (status, bytes) = self.get_bytes(method, query).await;
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    /// `GET path` (with its query string) answered as an XRPC error: the
    /// status and the body.
    pub async fn get_path(&self, path: &str) -> (u16, Value) {
        let resp = self
            .client
            .get(format!("{}{path}", self.url))
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    pub async fn get_bytes(&self, method: &str, query: &[(&str, &str)]) -> (u16, Vec<u8>) {
        let resp = self
            .client
            .get(self.xrpc(method))
            .query(query)
            .send()
            .await
            .unwrap();
        (resp.status().as_u16(), resp.bytes().await.unwrap().to_vec())
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.get_mut().ok().and_then(Option::take) {
            let _ = stop.send(());
        }
    }
}

pub async fn slate(dir: &std::path::Path) -> SlateKv {
    SlateKv::open_local(dir).await.unwrap()
}

/// The value of the one sample named `name` with labels `labels` (the
/// text between the braces, e.g. `` or `op="get"`) in a metrics exposition.
pub fn sample(text: &str, name: &str, labels: &str) -> Option<f64> {
    let braced = format!("{name}{{{labels}}} ");
    let bare = format!("{name} ");
    text.lines()
        .find_map(|line| {
            line.strip_prefix(&braced).or_else(|| {
                labels
                    .is_empty()
                    .then(|| line.strip_prefix(&bare))
                    .flatten()
            })
        })
        .map(|value| value.parse().unwrap())
}

/// A firehose connection.
pub type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Connects to the firehose of the server at `addr` (host:port), after
/// `cursor` when given.
pub async fn subscribe(addr: &str, cursor: Option<u64>) -> Socket {
    let mut url = format!("ws://{addr}/xrpc/com.atproto.sync.subscribeRepos");
    if let Some(c) = cursor {
        url += &format!("?cursor={c}");
    }
    tokio_tungstenite::connect_async(url).await.unwrap().0
}

/// The next frame (failing after 60 s: a guard against a hang, long
/// enough for a debug build replaying thousands of events while the rest
/// of the suite runs beside it), or `None` when the stream ended.
pub async fn next_frame(socket: &mut Socket) -> Option<repo::Frame> {
    use futures_util::StreamExt;
    loop {
        let message = tokio::time::timeout(std::time::Duration::from_secs(60), socket.next())
            .await
            .expect("a frame within 60 s")?
            .ok()?;
        if let tokio_tungstenite::tungstenite::Message::Binary(bytes) = message {
            return Some(repo::decode_frame(&bytes).unwrap());
        }
    }
}

/// The in-memory store, with reads that take `delay` once `slow` is set
/// (gets too when `gets`): work that reads the store then runs for a while,
/// so that a deadline or a wait can pass during it.
#[derive(Clone, Default)]
pub struct SlowKv {
    pub inner: MemoryKv,
    pub slow: Arc<std::sync::atomic::AtomicBool>,
    pub delay: std::time::Duration,
    pub gets: bool,
}

impl SlowKv {
    pub fn new(delay: std::time::Duration, gets: bool) -> Self {
        Self {
            delay,
            gets,
            ..Self::default()
        }
    }

    async fn pause(&self) {
        if self.slow.load(Ordering::Relaxed) {
            tokio::time::sleep(self.delay).await;
        }
    }
}

impl Kv for SlowKv {
    fn blobs(&self) -> store::Blobs {
        self.inner.blobs()
    }

    async fn get(&self, key: &[u8]) -> Result<Option<bytes::Bytes>, store::Error> {
        if self.gets {
            self.pause().await;
        }
        self.inner.get(key).await
    }

    async fn apply(&self, ops: Vec<store::WriteOp>) -> Result<store::Durability, store::Error> {
        self.inner.apply(ops).await
    }

    async fn scan(
        &self,
        range: &keycodec::KeyRange,
        reverse: bool,
        limit: usize,
    ) -> Result<Vec<(bytes::Bytes, bytes::Bytes)>, store::Error> {
        self.pause().await;
        self.inner.scan(range, reverse, limit).await
    }
}
