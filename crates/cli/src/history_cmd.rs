//! `log` (of the repository, or of one record with `--record`) and `diff`.

use std::process::ExitCode;

use cid::Cid;
use repo::{Repository, record_uri};
use serde_json::{Value, json};
use store::SlateKv;

use crate::{
    commands::RepoArgs,
    output::{Result, print},
    session::{Session, format_tid_time, known_collection, parse_rev, say},
};

/// `log --record`: the versions of one record, newest first.
pub(crate) async fn record_log(
    s: &Session,
    args: &RepoArgs,
    limit: usize,
    before: Option<String>,
    record: String,
) -> Result<ExitCode> {
    let json_mode = args.json;
    let e = say;
    let before = before.as_deref().map(parse_rev).transpose()?;
    // COLLECTION/RKEY, or an AT URI (which names the repository).
    let (collection, rkey) = if record.starts_with("at://") {
        (record, None)
    } else {
        match record.split_once('/') {
            Some((c, r)) => (c.to_owned(), Some(r.to_owned())),
            None => {
                return Err(format!(
                    "--record {record:?} names no record: give COLLECTION/RKEY or an AT URI"
                )
                .into());
            }
        }
    };
    let (repo, collection, rkey) = s.record_name(args, collection, rkey).await?;
    known_collection(&repo, &collection).await?;
    let history = repo
        .record_history(&collection, &rkey, before, limit.max(1))
        .await
        .map_err(e)?;
    let versions: Vec<Value> = history
        .versions
        .iter()
        .map(|v| v.to_json(repo.id(), &collection, &rkey))
        .collect();
    let mut out = json!({ "versions": versions });
    if let Some(cursor) = history.cursor {
        out["cursor"] = json!(cursor.to_string());
    }
    print(json_mode, &out, || {
        let mut lines: Vec<String> = history
            .versions
            .iter()
            .map(|v| {
                let action = match (v.prev, v.cid) {
                    (None, _) => "created",
                    (Some(_), Some(_)) => "updated",
                    (Some(_), None) => "deleted",
                };
                let cid = v.cid.map_or_else(|| "-".to_owned(), |c| c.to_string());
                format!(
                    "{}  {}  {action:<7}  {cid}",
                    v.commit.commit.rev,
                    format_tid_time(v.commit.commit.rev)
                )
            })
            .collect();
        if lines.is_empty() {
            lines.push(format!(
                "no commit {}changed {collection}/{rkey}",
                if before.is_some() {
                    "before that rev "
                } else {
                    ""
                }
            ));
        }
        if let Some(cursor) = history.cursor {
            lines.push(format!("(older versions: --before {cursor})"));
        }
        lines.join("\n")
    });
    Ok(ExitCode::SUCCESS)
}

/// `log`: the commit log, newest first.
pub(crate) async fn log(
    s: &Session,
    args: &RepoArgs,
    limit: usize,
    before: Option<String>,
) -> Result<ExitCode> {
    let json_mode = args.json;
    let e = say;
    let repo = s.repo(args).await?;
    let before = before.as_deref().map(parse_rev).transpose()?;
    let log = repo.commits(before, limit).await.map_err(e)?;
    let commits: Vec<Value> = log
        .iter()
        .map(|l| {
            json!({"cid": l.cid.to_string(), "rev": l.commit.rev.to_string(),
                   "data": l.commit.data.to_string(),
                   "prev": l.commit.prev.map(|p| p.to_string()),
                   "signed": l.commit.is_signed()})
        })
        .collect();
    print(json_mode, &json!({ "commits": commits }), || {
        log.iter()
            .map(|l| {
                format!(
                    "{}  {}  {}",
                    l.commit.rev,
                    format_tid_time(l.commit.rev),
                    l.cid
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    });
    Ok(ExitCode::SUCCESS)
}

/// `diff`: the records that differ between two commits.
pub(crate) async fn diff(
    s: &Session,
    args: &RepoArgs,
    rev_a: String,
    rev_b: String,
) -> Result<ExitCode> {
    let json_mode = args.json;
    let e = say;
    let repo = s.repo(args).await?;
    let diff = repo
        .diff(parse_rev(&rev_a)?, parse_rev(&rev_b)?)
        .await
        .map_err(e)?;
    let (mut created, mut updated, mut deleted) = (Vec::new(), Vec::new(), Vec::new());
    let mut lines = Vec::new();
    for d in &diff {
        let uri = record_uri(repo.id(), &d.collection, &d.rkey);
        match (d.old, d.new) {
            (None, Some(new)) => {
                lines.push(format!("+ {uri}"));
                created.push(json!({"uri": uri, "cid": new.to_string()}));
            }
            (Some(old), Some(new)) => {
                let fields = changed_fields(&repo, old, new).await.map_err(e)?;
                lines.push(format!("~ {uri}  ({})", fields.join(", ")));
                updated.push(json!({"uri": uri, "old": old.to_string(),
                                    "cid": new.to_string(), "fields": fields}));
            }
            (Some(old), None) => {
                lines.push(format!("- {uri}"));
                deleted.push(json!({"uri": uri, "old": old.to_string()}));
            }
            (None, None) => {}
        }
    }
    print(
        json_mode,
        &json!({"created": created, "updated": updated, "deleted": deleted}),
        || {
            lines.push(format!(
                "{} created, {} updated, {} deleted",
                created.len(),
                updated.len(),
                deleted.len()
            ));
            lines.join("\n")
        },
    );
    Ok(ExitCode::SUCCESS)
}

/// The top-level fields that differ between two versions of a record (by
/// their CIDs), in name order, as the web interface names them.
async fn changed_fields(
    repo: &Repository<SlateKv>,
    old: Cid,
    new: Cid,
) -> std::result::Result<Vec<String>, repo::Error> {
    let value = |cid: Cid| async move {
        let block = repo
            .block(cid)
            .await?
            .ok_or(repo::Error::MissingBlock(cid))?;
        Ok::<_, repo::Error>(repo::Record::from_block(block)?.to_json())
    };
    let (old, new) = (value(old).await?, value(new).await?);
    let empty = serde_json::Map::new();
    let (old, new) = (
        old.as_object().unwrap_or(&empty),
        new.as_object().unwrap_or(&empty),
    );
    let mut keys: Vec<&String> = old.keys().chain(new.keys()).collect();
    keys.sort();
    keys.dedup();
    Ok(keys
        .into_iter()
        .filter(|k| old.get(*k) != new.get(*k))
        .cloned()
        .collect())
}
