//! One `subscribeRepos` stream over every partition of a partitioned
//! store: the merged firehose log (`crate::merged_log`) read from
//! partition 0 (as writer or replica), each entry's event read from its
//! partition and framed under the merged sequence number, the same
//! whichever process serves the stream.

use std::sync::Arc;

use axum::{
    extract::ws::{Message, WebSocket, WebSocketUpgrade},
    http::request::Parts,
    response::Response,
};
use futures_util::SinkExt;
use store::{Kv, MergedLog};

use crate::{Server, XrpcError};

use crate::merged_live::{MergedLive, SharedLog, next_for};

/// `subscribeRepos` over the merged log, answered by the front.
pub(crate) async fn subscribe<K: Kv + 'static>(
    servers: Vec<Server<K>>,
    shared: Arc<MergedLive>,
    mut parts: Parts,
) -> Result<Response, XrpcError> {
    use axum::extract::FromRequestParts as _;
    let head = Arc::clone(&servers[0].app);
    head.authorize_read(&parts.headers).await?;
    let cursor = crate::firehose::parse_cursor(
        form_urlencoded::parse(parts.uri.query().unwrap_or_default().as_bytes())
            .find(|(k, _)| k == "cursor")
            .map(|(_, v)| v)
            .as_deref(),
    )?;
    let ws = WebSocketUpgrade::from_request_parts(&mut parts, &())
        .await
        .map_err(crate::firehose::not_a_websocket)?;
    let admitted = head.firehose.admit_request(&parts.extensions)?;
    // "From now on" is fixed before the handshake answers.
    let now = newest(&servers)
        .await
        .map_err(|e| XrpcError::from(repo::Error::from(e)))?;
    Ok(
        crate::frames::stream_socket(ws).on_upgrade(move |socket| async move {
            let _admitted = admitted;
            crate::merged_live::start(&shared, MergedLog::Firehose, &servers);
            if let Err(e) = stream(servers, &shared.firehose, socket, cursor, now).await {
                tracing::debug!(error = %e, "merged firehose connection ended");
            }
        }),
    )
}

/// The merged log's newest durable entry (0: none yet).
async fn newest<K: Kv>(servers: &[Server<K>]) -> Result<u64, store::Error> {
    Ok(servers[0]
        .app
        .repos
        .store()
        .newest_merged_event(MergedLog::Firehose)
        .await?
        .unwrap_or(0))
}

async fn stream<K: Kv + 'static>(
    servers: Vec<Server<K>>,
    shared: &SharedLog,
    mut socket: WebSocket,
    cursor: Option<u64>,
    now: u64,
) -> Result<(), axum::Error> {
    let head = Arc::clone(servers[0].app.repos.store());
    let failed = axum::Error::new;
    let mut last = match cursor {
        None => now,
        Some(cursor) => {
            let newest = newest(&servers).await.map_err(failed)?;
            if cursor > newest {
                let message = format!("cursor {cursor} is ahead of the newest event ({newest})");
                socket
                    .send(Message::Binary(
                        repo::error_frame("FutureCursor", &message).into(),
                    ))
                    .await?;
                return socket.send(Message::Close(None)).await;
            }
            if let Some(oldest) = head
                .merged_events(MergedLog::Firehose, 0, 1)
                .await
                .map_err(failed)?
                .first()
                && cursor + 1 < oldest.seq
            {
                let message = format!(
                    "events before {} are no longer kept; replaying from {}",
                    oldest.seq, oldest.seq
                );
                socket
                    .send(Message::Binary(
                        repo::info_frame("OutdatedCursor", &message).into(),
                    ))
                    .await?;
            }
            cursor
        }
    };
    let anchors: Vec<_> = servers
        .iter()
        .map(|_| store::AnchorMemo::default())
        .collect();
    let stores: Vec<&store::Store<K>> = servers
        .iter()
        .map(|s| s.app.repos.store().as_ref())
        .collect();
    let mut closing = servers[0].app.closing.subscribe();
    let mut newest = shared.live.newest.subscribe();
    loop {
        let next = next_for(shared, MergedLog::Firehose, &stores, &anchors, last)
            .await
            .map_err(axum::Error::new)?;
        for (_, frame) in &next.entries {
            socket.feed(Message::Binary(frame.clone())).await?;
        }
        if !next.entries.is_empty() {
            socket.flush().await?;
        }
        last = next.through;
        if next.again {
            continue;
        }
        tokio::select! {
            () = shared.wait(&mut newest, next.in_memory) => {}
            _ = async { closing.wait_for(|closing| *closing).await.is_ok() } => {
                return socket.send(crate::jetstream::going_away()).await;
            },
            incoming = socket.recv() => match incoming {
                Some(Ok(Message::Close(_)) | Err(_)) | None => return Ok(()),
                Some(Ok(_)) => {}
            },
        }
    }
}
