//! `datarepo follow URL [--cursor N] [--json]`: a firehose consumer. Prints
//! one line per commit (with `--json`, one JSON object per commit: seq,
//! repo, rev, commit, since, time, ops) and, when the connection drops or
//! the server says the consumer fell behind, reconnects from the last
//! sequence number it printed.
//!
//! With `--jetstream`, a consumer of the server's Jetstream-compatible
//! stream (`/subscribe`) instead: one line per record operation with the
//! record's value (with `--json`, the event as the server sent it), the
//! collections and repository filtered on the server, resuming from the
//! last event's `time_us`.

use std::{process::ExitCode, time::Duration};

use clap::Args;
use futures_util::StreamExt;
use repo::Frame;
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;

use crate::output::outln;

#[derive(Debug, Args)]
pub(crate) struct FollowArgs {
    /// The server (http://HOST:PORT or ws://HOST:PORT).
    url: String,
    /// Start after this sequence number (0: every event the server keeps;
    /// without it, from now on).
    #[arg(long)]
    cursor: Option<u64>,
    /// Stop after this many commits (default: follow until interrupted).
    #[arg(long)]
    limit: Option<u64>,
    /// Only commits that change this collection's records, with only those
    /// operations (repeatable). With --repo, only that repository's
    /// commits.
    #[arg(long = "collection", value_name = "NSID")]
    collections: Vec<String>,
    /// Read the Jetstream-compatible stream (`/subscribe`: one event per
    /// record operation, with the record's value) instead of the
    /// firehose; --cursor is then a time in unix microseconds and
    /// --collection may be a prefix (`app.bsky.feed.*`).
    #[arg(long)]
    jetstream: bool,
    /// With --jetstream: only records that satisfy this `--where`
    /// expression (the query language; evaluated on each record by the
    /// server, no index needed); deletes always pass.
    #[arg(long = "where", value_name = "EXPR", requires = "jetstream")]
    condition: Option<String>,
    /// With --jetstream: only these record paths of each record
    /// (comma-separated, e.g. text,embed.images.alt).
    #[arg(long, value_name = "PATHS", requires = "jetstream")]
    fields: Option<String>,
}

/// Which commits, and which of their operations, `follow` prints.
struct Filter<'a> {
    repo: Option<&'a str>,
    collections: &'a [String],
}

impl Filter<'_> {
    /// `event` with only the operations wanted, or `None` when it has none
    /// (or is another repository's).
    fn apply(&self, mut event: repo::CommitEvent) -> Option<repo::CommitEvent> {
        if self.repo.is_some_and(|r| r != event.repo) {
            return None;
        }
        if self.collections.is_empty() {
            return Some(event);
        }
        event.ops.retain(|op| {
            let collection = op.path.split('/').next().unwrap_or_default();
            self.collections.iter().any(|c| c == collection)
        });
        (!event.ops.is_empty()).then_some(event)
    }
}

fn stream_url(base: &str, cursor: Option<u64>) -> Result<String, String> {
    let base = base.trim_end_matches('/');
    let ws = if let Some(rest) = base.strip_prefix("http://") {
        format!("ws://{rest}")
    } else if base.starts_with("ws://") {
        base.to_owned()
    } else if base.starts_with("https://") || base.starts_with("wss://") {
        return Err(format!(
            "{base}: TLS is not supported by `datarepo follow`; connect to the server over \
             plain ws:// (e.g. through a local tunnel)"
        ));
    } else {
        format!("ws://{base}")
    };
    let mut url = format!("{ws}/xrpc/com.atproto.sync.subscribeRepos");
    if let Some(c) = cursor {
        url += &format!("?cursor={c}");
    }
    Ok(url)
}

fn print_commit(event: &repo::CommitEvent, json_mode: bool) {
    if json_mode {
        let ops: Vec<_> = event
            .ops
            .iter()
            .map(|o| {
                json!({"action": o.action, "path": o.path,
                       "cid": o.cid.map(|c| c.to_string()), "prev": o.prev.map(|c| c.to_string())})
            })
            .collect();
        outln!(
            "{}",
            json!({"seq": event.seq, "repo": event.repo, "rev": event.rev,
                   "commit": event.commit.to_string(), "since": event.since,
                   "time": event.time, "ops": ops})
        );
    } else {
        let ops: Vec<(&str, &str)> = event
            .ops
            .iter()
            .map(|o| (o.action.as_str(), o.path.as_str()))
            .collect();
        outln!(
            "{}  {}  rev {}  {}",
            event.seq,
            event.repo,
            event.rev,
            summarize_ops(&ops)
        );
    }
}

/// A commit's operations for one line: all of them when there are at most
/// [`OPS_SHOWN`] + 1, else the first [`OPS_SHOWN`] and a count of the rest
/// by action (an import or a batch commits thousands).
fn summarize_ops(ops: &[(&str, &str)]) -> String {
    let shown = |ops: &[(&str, &str)]| {
        ops.iter()
            .map(|(action, path)| format!("{action} {path}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if ops.is_empty() {
        return "(no records changed)".to_owned();
    }
    if ops.len() <= OPS_SHOWN + 1 {
        return shown(ops);
    }
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for (action, _) in ops {
        match counts.iter_mut().find(|(a, _)| a == action) {
            Some((_, n)) => *n += 1,
            None => counts.push((action, 1)),
        }
    }
    let counts: Vec<String> = counts
        .iter()
        .map(|(a, n)| format!("{n} {a}{}", if *n == 1 { "" } else { "s" }))
        .collect();
    format!(
        "{} and {} more ({} ops: {})",
        shown(&ops[..OPS_SHOWN]),
        ops.len() - OPS_SHOWN,
        ops.len(),
        counts.join(", ")
    )
}

/// How many operations a commit's line names before it counts the rest.
const OPS_SHOWN: usize = 3;

pub(crate) fn run(
    args: &FollowArgs,
    repo: Option<&str>,
    json_mode: bool,
) -> Result<ExitCode, String> {
    for c in &args.collections {
        let nsid = match c.strip_suffix(".*") {
            Some(prefix) if args.jetstream => format!("{prefix}.x"),
            _ => c.clone(),
        };
        rkey::validate_nsid(&nsid).map_err(|e| format!("--collection {c}: {e}"))?;
    }
    if let Some(condition) = &args.condition {
        repo::RecordCondition::parse(condition).map_err(|e| format!("--where: {e}"))?;
    }
    if args.jetstream {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        return rt.block_on(follow_jetstream(args, repo, json_mode));
    }
    let filter = Filter {
        repo,
        collections: &args.collections,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(follow(args, &filter, json_mode))
}

async fn follow(
    args: &FollowArgs,
    filter: &Filter<'_>,
    json_mode: bool,
) -> Result<ExitCode, String> {
    let mut cursor = args.cursor;
    let mut printed = 0u64;
    let mut connected_once = false;
    loop {
        let url = stream_url(&args.url, cursor)?;
        let mut socket = match tokio_tungstenite::connect_async(&url).await {
            Ok((socket, _)) => socket,
            Err(e) if connected_once => {
                eprintln!("datarepo: {url}: {e}; reconnecting in 1 s");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
            Err(e) => return Err(format!("{url}: {e}")),
        };
        connected_once = true;
        while let Some(message) = socket.next().await {
            let bytes = match message {
                Ok(Message::Binary(bytes)) => bytes,
                Ok(Message::Close(_)) | Err(_) => break,
                Ok(_) => continue,
            };
            match repo::decode_frame(&bytes).map_err(|e| e.to_string())? {
                Frame::Commit(event) => {
                    // Resumed after every commit seen, printed or not.
                    cursor = Some(event.seq);
                    let Some(event) = filter.apply(*event) else {
                        continue;
                    };
                    print_commit(&event, json_mode);
                    printed += 1;
                    if args.limit.is_some_and(|l| printed >= l) {
                        return Ok(ExitCode::SUCCESS);
                    }
                }
                Frame::Info { name, message } => {
                    eprintln!("datarepo: {name}: {}", message.unwrap_or_default());
                }
                Frame::Error { error, message } if error == "ConsumerTooSlow" => {
                    eprintln!(
                        "datarepo: {error}: {}; resuming from {}",
                        message.unwrap_or_default(),
                        cursor.unwrap_or(0)
                    );
                    break;
                }
                Frame::Error { error, message } => {
                    return Err(format!("{error}: {}", message.unwrap_or_default()));
                }
                Frame::Unknown(_) => {}
            }
        }
        // The connection ended: resume after the last commit printed.
        eprintln!(
            "datarepo: the stream closed; reconnecting from {}",
            cursor.map_or_else(|| "now".to_owned(), |c| c.to_string())
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `follow --jetstream`: the `/subscribe` stream's events, one line each.
async fn follow_jetstream(
    args: &FollowArgs,
    repo: Option<&str>,
    json_mode: bool,
) -> Result<ExitCode, String> {
    let base = stream_url(&args.url, None)?;
    let base = base.trim_end_matches("/xrpc/com.atproto.sync.subscribeRepos");
    let mut cursor = args.cursor;
    let mut printed = 0u64;
    let mut connected_once = false;
    loop {
        let mut query = form_urlencoded::Serializer::new(String::new());
        for c in &args.collections {
            query.append_pair("wantedCollections", c);
        }
        if let Some(r) = repo {
            query.append_pair("wantedDids", r);
        }
        if let Some(c) = cursor {
            query.append_pair("cursor", &c.to_string());
        }
        if let Some(condition) = &args.condition {
            query.append_pair("where", condition);
        }
        if let Some(fields) = &args.fields {
            query.append_pair("fields", fields);
        }
        let url = format!("{base}/subscribe?{}", query.finish());
        let mut socket = match tokio_tungstenite::connect_async(&url).await {
            Ok((socket, _)) => socket,
            Err(e) if connected_once => {
                eprintln!("datarepo: {url}: {e}; reconnecting in 1 s");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
            Err(e) => return Err(format!("{url}: {e}")),
        };
        connected_once = true;
        while let Some(message) = socket.next().await {
            let text = match message {
                Ok(Message::Text(text)) => text,
                Ok(Message::Close(frame)) => {
                    if let Some(frame) = frame.filter(|f| !f.reason.is_empty()) {
                        eprintln!("datarepo: the server closed the stream: {}", frame.reason);
                    }
                    break;
                }
                Err(_) => break,
                Ok(_) => continue,
            };
            let event: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| format!("an event that is not JSON: {e}"))?;
            if let Some(t) = event["time_us"].as_u64() {
                cursor = Some(t);
            }
            if json_mode {
                outln!("{text}");
            } else {
                let c = &event["commit"];
                let str_of = |v: &serde_json::Value| v.as_str().unwrap_or("?").to_owned();
                let record = c.get("record").map(|r| format!(" {r}")).unwrap_or_default();
                outln!(
                    "{} {} {} {}/{}{record}",
                    event["time_us"],
                    str_of(&event["did"]),
                    str_of(&c["operation"]),
                    str_of(&c["collection"]),
                    str_of(&c["rkey"])
                );
            }
            printed += 1;
            if args.limit.is_some_and(|l| printed >= l) {
                return Ok(ExitCode::SUCCESS);
            }
        }
        eprintln!(
            "datarepo: the stream closed; reconnecting from {}",
            cursor.map_or_else(|| "now".to_owned(), |c| c.to_string())
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::summarize_ops;

    #[test]
    fn a_large_commit_is_one_short_line() {
        let paths: Vec<String> = (0..1000).map(|i| format!("c.x/{i}")).collect();
        let mut ops: Vec<(&str, &str)> = paths.iter().map(|p| ("create", p.as_str())).collect();
        ops[998].0 = "delete";
        ops[999].0 = "update";
        assert_eq!(
            summarize_ops(&ops),
            "create c.x/0, create c.x/1, create c.x/2 and 997 more \
             (1000 ops: 998 creates, 1 delete, 1 update)"
        );
        assert_eq!(
            summarize_ops(&ops[..4]),
            "create c.x/0, create c.x/1, create c.x/2, create c.x/3"
        );
        assert_eq!(summarize_ops(&[]), "(no records changed)");
    }
}
