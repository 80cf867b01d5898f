//! One `/subscribe` stream over every partition of a partitioned store:
//! the merged stream log (`crate::merged_log`) read from partition 0 (as
//! writer or replica), each entry's event read from its partition and
//! sent as `/subscribe` sends it (filters, `where`, `fields`,
//! compression, options updates).
//!
//! The cursor is the merged log's time: an entry's is its event's own
//! `time_us`, or one microsecond after the entry before it when that is
//! later, so it is never before the `time_us` a consumer saw. A consumer
//! resuming from the last `time_us` it received is sent every entry after
//! it: none is skipped, and an entry whose merged time was pushed past its
//! own (two partitions' events in the same microsecond, or a partition's
//! clock behind another's) may come again, as Jetstream's own clients
//! expect of a cursor.

use std::sync::Arc;

use axum::{extract::ws::WebSocketUpgrade, http::request::Parts, response::Response};
use futures_util::SinkExt;
use store::{Kv, MergedLog};

use crate::jetstream::{
    Filters, Incoming, Params, Sink, await_hello, close_with, connection_options, going_away,
    incoming, not_a_websocket, stream_events_kept,
};
use crate::merged_live::{MergedLive, SharedLog, next_for};
use crate::{Server, XrpcError};

/// `/subscribe` over the merged stream log, answered by the front.
pub(crate) async fn subscribe<K: Kv + 'static>(
    servers: Vec<Server<K>>,
    shared: Arc<MergedLive>,
    mut parts: Parts,
) -> Result<Response, XrpcError> {
    use axum::extract::FromRequestParts as _;
    let head = Arc::clone(&servers[0].app);
    head.authorize_read(&parts.headers).await?;
    stream_events_kept(&head)?;
    let (params, filters, compress) = connection_options(&parts.headers, parts.uri.query())?;
    let ws = WebSocketUpgrade::from_request_parts(&mut parts, &())
        .await
        .map_err(not_a_websocket)?;
    let admitted = head.firehose.admit_request(&parts.extensions)?;
    // "Live" is fixed before the handshake answers.
    let now = head
        .repos
        .store()
        .newest_merged_event(MergedLog::Stream)
        .await
        .map_err(|e| XrpcError::from(repo::Error::from(e)))?
        .unwrap_or(0);
    Ok(
        crate::frames::stream_socket(ws).on_upgrade(move |socket| async move {
            let _admitted = admitted;
            let sink = Sink { socket, compress };
            crate::merged_live::start(&shared, MergedLog::Stream, &servers);
            if let Err(e) = stream(servers, &shared.stream, sink, params, filters, now).await {
                tracing::debug!(error = %e, "merged stream connection ended");
            }
        }),
    )
}

async fn stream<K: Kv + 'static>(
    servers: Vec<Server<K>>,
    shared: &SharedLog,
    mut sink: Sink,
    params: Params,
    mut filters: Filters,
    now: u64,
) -> Result<(), axum::Error> {
    if let Some(end) = await_hello(&mut sink, &params, &mut filters).await {
        return end;
    }
    // No cursor, or one in the future: from the newest entry when the
    // request came. One older than what is kept: from the oldest kept.
    let mut last = match params.cursor {
        Some(cursor) if cursor <= now => cursor,
        _ => now,
    };
    let stores: Vec<&store::Store<K>> = servers
        .iter()
        .map(|s| s.app.repos.store().as_ref())
        .collect();
    let mut closing = servers[0].app.closing.subscribe();
    let mut newest = shared.live.newest.subscribe();
    loop {
        let next = next_for(shared, MergedLog::Stream, &stores, &[], last)
            .await
            .map_err(axum::Error::new)?;
        for (_, stored) in &next.entries {
            sink.feed(&filters, stored).await?;
        }
        if !next.entries.is_empty() {
            sink.socket.flush().await?;
        }
        last = next.through;
        if next.again {
            continue;
        }
        tokio::select! {
            () = shared.wait(&mut newest, next.in_memory) => {}
            _ = async { closing.wait_for(|closing| *closing).await.is_ok() } => {
                return sink.socket.send(going_away()).await;
            }
            message = sink.socket.recv() => match incoming(message) {
                Incoming::Filters(f) => filters = f,
                Incoming::Invalid(why) => return close_with(&mut sink.socket, &why).await,
                Incoming::Closed => return Ok(()),
                Incoming::Nothing => {}
            },
        }
    }
}
