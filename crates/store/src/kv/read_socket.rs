//! Reads of a local store answered by the process that writes it.
//!
//! A process that opens a SlateDB database, even read-only, replays the WAL
//! its writer has not yet flushed to an L0 SST, and starts with cold caches:
//! a CLI `get` beside a busy server spent most of its time there. The writer
//! has all of it in memory already, so it answers reads on a Unix socket in
//! the store's directory ([`READ_SOCKET`]), and a reader that finds it
//! reads through it instead of opening the database.
//!
//! Only durable writes are answered ([`Kv::get_durable`],
//! [`Kv::scan_durable`]), as SlateDB's own reader sees them, so a command
//! reads the same through the socket as without it. The socket is created
//! owner-only (`0600`): whoever may connect may read the store's files.
//!
//! The protocol, on one connection, after both sides send [`HELLO`]
//! (integers big-endian):
//!
//! ```text
//! request   get:   0x01 | len u32 | key
//!           scan:  0x02 | reverse u8 | limit u64 | len u32 | start
//!                       | has_end u8 | [len u32 | end]
//! answer    get:   0x01 | len u32 | value        (found)
//!                  0x00                          (absent)
//!           scan:  { 0x01 | len u32 | key | len u32 | value } 0x00
//!           error: 0xFF | len u32 | message (UTF-8), instead of either
//! ```
//!
//! Requests on one connection are answered in order; a reader keeps a few
//! connections to send reads in parallel.

use std::{
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    sync::Mutex,
    time::Duration,
};

use bytes::Bytes;
use keycodec::KeyRange;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt, BufStream},
    net::{UnixListener, UnixStream},
    task::JoinSet,
};

use super::interface::Kv;
use crate::error::Error;

/// The socket's file name in a local store's directory.
pub const READ_SOCKET: &str = "datarepo.sock";

/// What each side sends first: the protocol and its version.
const HELLO: &[u8; 16] = b"datarepo-reads/1";

/// How long a reader waits for the writer's [`HELLO`] before reading the
/// database itself.
const HELLO_TIMEOUT: Duration = Duration::from_secs(2);

/// The longest key a request may carry (keys are far shorter).
const MAX_KEY_BYTES: u32 = 1 << 16;

const GET: u8 = 0x01;
const SCAN: u8 = 0x02;
const ENTRY: u8 = 0x01;
const END: u8 = 0x00;
const FAILED: u8 = 0xFF;

/// A writer's socket answering reads of its store; removed when dropped.
pub struct ReadSocket {
    path: PathBuf,
    accepting: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for ReadSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadSocket")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl ReadSocket {
    /// Answers reads of `kv` on [`READ_SOCKET`] in `dir` until dropped. A
    /// socket file already there is replaced: the caller writes the store,
    /// so no other live process answers on it. Must be called inside a
    /// Tokio runtime.
    ///
    /// # Errors
    ///
    /// [`Error::Location`] when the socket cannot be created (for example
    /// a path longer than a socket address allows).
    pub fn serve<K: Kv + Clone + 'static>(kv: K, dir: &Path) -> Result<Self, Error> {
        let path = dir.join(READ_SOCKET);
        let cannot = |e: std::io::Error| Error::Location {
            location: path.display().to_string(),
            reason: format!("cannot answer reads on this socket: {e}"),
        };
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(cannot(e)),
        }
        let listener = UnixListener::bind(&path).map_err(cannot)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).map_err(cannot)?;
        let accepting = tokio::spawn(accept(listener, kv));
        Ok(Self { path, accepting })
    }
}

impl Drop for ReadSocket {
    fn drop(&mut self) {
        // Aborting the accept loop drops its connections' tasks with it.
        self.accepting.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

async fn accept<K: Kv + Clone + 'static>(listener: UnixListener, kv: K) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(answer(BufStream::new(stream), kv.clone()));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "read socket: cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            Some(_) = connections.join_next() => {}
        }
    }
}

/// Answers one connection's requests until it closes or breaks the
/// protocol.
async fn answer<K: Kv>(mut stream: BufStream<UnixStream>, kv: K) {
    let mut hello = [0; HELLO.len()];
    if stream.read_exact(&mut hello).await.is_err() || &hello != HELLO {
        return;
    }
    if stream.write_all(HELLO).await.is_err() || stream.flush().await.is_err() {
        return;
    }
    while let Ok(Some(request)) = read_request(&mut stream).await {
        let written = match request {
            Request::Get(key) => match kv.get_durable(&key).await {
                Ok(Some(value)) => write_get(&mut stream, Some(&value)).await,
                Ok(None) => write_get(&mut stream, None).await,
                Err(e) => write_failure(&mut stream, &e).await,
            },
            Request::Scan {
                range,
                reverse,
                limit,
            } => match kv.scan_durable(&range, reverse, limit).await {
                Ok(entries) => write_scan(&mut stream, &entries).await,
                Err(e) => write_failure(&mut stream, &e).await,
            },
        };
        if written.and(stream.flush().await).is_err() {
            return;
        }
    }
}

enum Request {
    Get(Vec<u8>),
    Scan {
        range: KeyRange,
        reverse: bool,
        limit: usize,
    },
}

/// The next request; `None` when the reader closed the connection.
async fn read_request(stream: &mut BufStream<UnixStream>) -> std::io::Result<Option<Request>> {
    let op = match stream.read_u8().await {
        Ok(op) => op,
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    };
    match op {
        GET => Ok(Some(Request::Get(read_key(stream).await?))),
        SCAN => {
            let reverse = stream.read_u8().await? != 0;
            let limit = usize::try_from(stream.read_u64().await?).unwrap_or(usize::MAX);
            let start = read_key(stream).await?;
            let end = match stream.read_u8().await? {
                0 => None,
                _ => Some(read_key(stream).await?),
            };
            Ok(Some(Request::Scan {
                range: KeyRange { start, end },
                reverse,
                limit,
            }))
        }
        _ => Err(invalid("unknown request")),
    }
}

async fn read_key(stream: &mut BufStream<UnixStream>) -> std::io::Result<Vec<u8>> {
    let len = stream.read_u32().await?;
    if len > MAX_KEY_BYTES {
        return Err(invalid("key too long"));
    }
    let mut key = vec![0; len as usize];
    stream.read_exact(&mut key).await?;
    Ok(key)
}

fn invalid(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned())
}

async fn write_bytes(stream: &mut BufStream<UnixStream>, bytes: &[u8]) -> std::io::Result<()> {
    let len = u32::try_from(bytes.len()).map_err(|_| invalid("value too long"))?;
    stream.write_u32(len).await?;
    stream.write_all(bytes).await
}

async fn write_get(
    stream: &mut BufStream<UnixStream>,
    value: Option<&Bytes>,
) -> std::io::Result<()> {
    match value {
        Some(value) => {
            stream.write_u8(ENTRY).await?;
            write_bytes(stream, value).await
        }
        None => stream.write_u8(END).await,
    }
}

async fn write_scan(
    stream: &mut BufStream<UnixStream>,
    entries: &[(Bytes, Bytes)],
) -> std::io::Result<()> {
    for (key, value) in entries {
        stream.write_u8(ENTRY).await?;
        write_bytes(stream, key).await?;
        write_bytes(stream, value).await?;
    }
    stream.write_u8(END).await
}

async fn write_failure(stream: &mut BufStream<UnixStream>, error: &Error) -> std::io::Result<()> {
    // The reader wraps it in its own `Error::Unavailable`.
    let message = match error {
        Error::Unavailable(source) => source.to_string(),
        other => other.to_string(),
    };
    stream.write_u8(FAILED).await?;
    write_bytes(stream, message.as_bytes()).await
}

/// A reader's connections to a writer's [`ReadSocket`].
pub(crate) struct SocketReads {
    path: PathBuf,
    /// Connections not in use, each past the hello.
    idle: Mutex<Vec<BufStream<UnixStream>>>,
}

impl SocketReads {
    /// The writer answering on [`READ_SOCKET`] in `dir`, if one does: no
    /// socket file, a refused connection (a writer that has stopped) or no
    /// hello in time all mean `None`, and the caller reads the database
    /// itself.
    pub(crate) async fn connect(dir: &Path) -> Option<Self> {
        let path = dir.join(READ_SOCKET);
        if !path.exists() {
            return None;
        }
        let stream = match tokio::time::timeout(HELLO_TIMEOUT, hello(&path)).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => {
                tracing::debug!(socket = %path.display(), error = %e, "no writer answering reads");
                return None;
            }
            Err(_) => {
                tracing::debug!(socket = %path.display(), "the writer did not answer in time");
                return None;
            }
        };
        tracing::debug!(socket = %path.display(), "reading through the store's writer");
        Some(Self {
            path,
            idle: Mutex::new(vec![stream]),
        })
    }

    /// The socket's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) async fn get(&self, key: &[u8]) -> Result<Option<Bytes>, Error> {
        let mut stream = self.stream().await?;
        let answer = async {
            stream.write_u8(GET).await?;
            write_bytes(&mut stream, key).await?;
            stream.flush().await?;
            match stream.read_u8().await? {
                ENTRY => Ok(Ok(Some(read_value(&mut stream).await?))),
                END => Ok(Ok(None)),
                FAILED => Ok(Err(read_failure(&mut stream).await?)),
                _ => Err(invalid("unknown answer")),
            }
        }
        .await;
        self.settle(stream, answer)
    }

    pub(crate) async fn scan(
        &self,
        range: &KeyRange,
        reverse: bool,
        limit: usize,
    ) -> Result<Vec<(Bytes, Bytes)>, Error> {
        let mut stream = self.stream().await?;
        let answer = async {
            stream.write_u8(SCAN).await?;
            stream.write_u8(u8::from(reverse)).await?;
            stream
                .write_u64(u64::try_from(limit).unwrap_or(u64::MAX))
                .await?;
            write_bytes(&mut stream, &range.start).await?;
            match &range.end {
                Some(end) => {
                    stream.write_u8(1).await?;
                    write_bytes(&mut stream, end).await?;
                }
                None => stream.write_u8(0).await?,
            }
            stream.flush().await?;
            let mut entries = Vec::new();
            loop {
                match stream.read_u8().await? {
                    ENTRY => {
                        let key = read_value(&mut stream).await?;
                        let value = read_value(&mut stream).await?;
                        entries.push((key, value));
                    }
                    END => return Ok(Ok(entries)),
                    FAILED => return Ok(Err(read_failure(&mut stream).await?)),
                    _ => return Err(invalid("unknown answer")),
                }
            }
        }
        .await;
        self.settle(stream, answer)
    }

    /// An idle connection, or a new one.
    async fn stream(&self) -> Result<BufStream<UnixStream>, Error> {
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        match idle {
            Some(stream) => Ok(stream),
            None => hello(&self.path).await.map_err(|e| self.gone(e)),
        }
    }

    /// The answer; the connection goes back to the idle ones unless it
    /// broke.
    fn settle<T>(
        &self,
        stream: BufStream<UnixStream>,
        answer: std::io::Result<Result<T, String>>,
    ) -> Result<T, Error> {
        match answer {
            Ok(answer) => {
                self.idle
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(stream);
                answer.map_err(|message| Error::Unavailable(message.into()))
            }
            Err(e) => Err(self.gone(e)),
        }
    }

    fn gone(&self, e: std::io::Error) -> Error {
        Error::Unavailable(
            format!(
                "the process writing the store stopped answering reads on {}: {e}; run the command again",
                self.path.display()
            )
            .into(),
        )
    }
}

async fn hello(path: &Path) -> std::io::Result<BufStream<UnixStream>> {
    let mut stream = BufStream::new(UnixStream::connect(path).await?);
    stream.write_all(HELLO).await?;
    stream.flush().await?;
    let mut answer = [0; HELLO.len()];
    stream.read_exact(&mut answer).await?;
    if &answer != HELLO {
        return Err(invalid("not a datarepo read socket"));
    }
    Ok(stream)
}

async fn read_value(stream: &mut BufStream<UnixStream>) -> std::io::Result<Bytes> {
    let len = stream.read_u32().await?;
    let mut value = vec![0; len as usize];
    stream.read_exact(&mut value).await?;
    Ok(Bytes::from(value))
}

async fn read_failure(stream: &mut BufStream<UnixStream>) -> std::io::Result<String> {
    let message = read_value(stream).await?;
    Ok(String::from_utf8_lossy(&message).into_owned())
}
