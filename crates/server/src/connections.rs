//! Accepting connections: how many at once, and how long a connection may
//! dawdle. A client that opens connections and sends nothing, or sends
//! headers or a body a byte at a time, holds a file descriptor and a task
//! for as long as the server lets it; these limits bound both.

use std::{
    io,
    pin::{Pin, pin},
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};

use axum::Router;
use hyper_util::{
    rt::{TokioIo, TokioTimer},
    service::TowerToHyperService,
};
use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    net::{TcpListener, TcpStream},
    sync::{Semaphore, watch},
    time::Instant,
};

/// Limits on connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Most connections open at once; past it the server stops accepting
    /// (new connections wait in the kernel's backlog) until one closes.
    pub max_connections: usize,
    /// A connection must deliver a request's complete headers within this
    /// long of being ready for it (just opened, or after its last
    /// response): this closes kept-alive connections left idle, and
    /// connections that send headers slowly.
    pub header_read_timeout: Duration,
    /// Most connections open at once from one IP address; past it a new
    /// one from there is answered `503 TooManyConnections` and closed at
    /// once, so that one client re-opening sockets cannot hold every slot.
    /// (Behind a reverse proxy every client has the proxy's address: raise
    /// it there.)
    pub max_connections_per_ip: usize,
    /// A connection that neither sends nor receives a byte for this long
    /// while a request is under way (a body that stops arriving, a response
    /// nobody reads) is closed. Longer than the request timeout, so a slow
    /// request is answered rather than cut off.
    pub idle_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            max_connections: 512,
            max_connections_per_ip: 128,
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
        }
    }
}

/// Serves `router` on `listener` within `limits` until `shutdown`
/// resolves, then finishes the requests in flight (their commits complete)
/// and returns.
///
/// # Errors
///
/// When the listener fails for a reason other than running out of file
/// descriptors or a connection aborted before it was accepted (those are
/// logged and accepting goes on).
pub async fn serve_with(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let max = limits.max_connections.max(1);
    let slots = Arc::new(Semaphore::new(max));
    let per_ip = PerIp::default();
    // Dropped to tell every connection to finish; each holds a receiver.
    let (stop, stopping) = watch::channel(());
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .keep_alive(true);
    let mut shutdown = pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = Arc::clone(&slots).acquire_owned() => slot.map_err(io::Error::other)?,
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) if is_transient(&e) => {
                    tracing::warn!(error = %e, "cannot accept a connection; retrying in 100 ms");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
                Err(e) => return Err(e),
            },
            () = &mut shutdown => break,
        };
        let Some(from_ip) = per_ip.admit(peer.ip(), limits.max_connections_per_ip) else {
            // Answered without reading the request, from this task: the
            // slot is free again at once.
            tracing::debug!(ip = %peer.ip(), "refusing a connection past --max-connections-per-ip");
            let _ = stream.try_write(TOO_MANY_FROM_IP);
            drop(slot);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let slot = ConnectionSlot {
            _held: Arc::new((slot, from_ip)),
        };
        let activity = Arc::new(Activity::new());
        let io = TokioIo::new(Tracked {
            inner: stream,
            activity: Arc::clone(&activity),
        });
        let service = WithSlot {
            inner: TowerToHyperService::new(router.clone()),
            slot: slot.clone(),
            client: ClientIp(peer.ip()),
        };
        let conn = http.serve_connection(io, service).with_upgrades();
        let mut stopping = stopping.clone();
        let idle = limits.idle_timeout;
        tokio::spawn(async move {
            let mut conn = pin!(conn);
            let mut closing = false;
            loop {
                let quiet_until = activity.last() + idle;
                tokio::select! {
                    result = conn.as_mut() => {
                        if let Err(e) = result {
                            tracing::debug!(error = %e, "connection ended with an error");
                        }
                        break;
                    }
                    _ = stopping.changed(), if !closing => {
                        closing = true;
                        conn.as_mut().graceful_shutdown();
                    }
                    () = tokio::time::sleep_until(quiet_until) => {
                        if activity.last() + idle > Instant::now() {
                            continue;
                        }
                        // Quiet for a whole period while a request is under
                        // way: its body stopped arriving or nobody reads its
                        // response. Commits run in tasks of their own, so
                        // dropping the connection cancels none.
                        tracing::debug!("closing a connection idle for {idle:?}");
                        break;
                    }
                }
            }
            drop(slot);
        });
    }
    drop(stop);
    // Every connection holds a slot until it ends.
    let _all = slots
        .acquire_many(u32::try_from(max).unwrap_or(u32::MAX))
        .await
        .map_err(io::Error::other)?;
    Ok(())
}

/// A connection's place under `max_connections`, in every request's
/// extensions: a handler that takes the connection over (a WebSocket
/// upgrade) keeps it until the socket closes, so that upgraded
/// connections count too.
#[derive(Debug, Clone)]
pub(crate) struct ConnectionSlot {
    _held: Arc<(tokio::sync::OwnedSemaphorePermit, FromIp)>,
}

/// The response to a connection past the per-IP limit.
const TOO_MANY_FROM_IP: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
content-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: 136\r\n\r\n\
{\"error\":\"TooManyConnections\",\"message\":\"this address has as many connections open as the server allows one (--max-connections-per-ip)\"}";

/// Connections open per IP address.
#[derive(Debug, Default, Clone)]
struct PerIp(Arc<std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, usize>>>);

impl PerIp {
    fn counts(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<std::net::IpAddr, usize>> {
        // Plain counts, whole after every operation.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// One more connection from `ip`, unless it has `max` open.
    fn admit(&self, ip: std::net::IpAddr, max: usize) -> Option<FromIp> {
        let mut counts = self.counts();
        let open = counts.entry(ip).or_default();
        if *open >= max.max(1) {
            return None;
        }
        *open += 1;
        Some(FromIp {
            ip,
            counts: self.clone(),
        })
    }
}

/// One connection counted against its address until dropped.
#[derive(Debug)]
struct FromIp {
    ip: std::net::IpAddr,
    counts: PerIp,
}

impl Drop for FromIp {
    fn drop(&mut self) {
        let mut counts = self.counts.counts();
        if let Some(open) = counts.get_mut(&self.ip) {
            *open -= 1;
            if *open == 0 {
                counts.remove(&self.ip);
            }
        }
    }
}

/// A service that gives each request its connection's slot.
struct WithSlot<S> {
    inner: S,
    slot: ConnectionSlot,
    client: ClientIp,
}

/// The address a request's connection comes from, in every request's
/// extensions (limits on failed logins count per address).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClientIp(pub(crate) std::net::IpAddr);

impl<S, B> hyper::service::Service<hyper::Request<B>> for WithSlot<S>
where
    S: hyper::service::Service<hyper::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn call(&self, mut request: hyper::Request<B>) -> Self::Future {
        request.extensions_mut().insert(self.slot.clone());
        request.extensions_mut().insert(self.client);
        self.inner.call(request)
    }
}

/// Accept errors that say nothing about the listener: out of descriptors
/// or memory for now, or a peer that gave up.
fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
    ) || matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

/// When a connection last moved a byte.
#[derive(Debug)]
struct Activity {
    start: Instant,
    /// Milliseconds since `start`.
    last_ms: AtomicU64,
}

impl Activity {
    fn new() -> Self {
        Self {
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
        }
    }

    fn touch(&self) {
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    fn last(&self) -> Instant {
        self.start + Duration::from_millis(self.last_ms.load(Ordering::Relaxed))
    }
}

/// A TCP stream that notes when it last read or wrote a byte.
struct Tracked {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Tracked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        polled
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::TOO_MANY_FROM_IP;

    /// The canned response is well-formed: its content-length is its
    /// body's, and the body is the JSON error every endpoint answers.
    #[test]
    fn the_per_ip_refusal_is_a_whole_response() {
        let text = std::str::from_utf8(TOO_MANY_FROM_IP).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(length, body.len());
        let json: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(json["error"], "TooManyConnections");
    }
}
