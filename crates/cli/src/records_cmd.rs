//! The record commands: `put` (one record, or a batch of writes), `get`,
//! `rm` and `ls`.
//!
//! With `--json`, `put`, `get` and `ls` print exactly the shapes of AT
//! Protocol's createRecord, getRecord and listRecords responses; `put` and
//! `rm` go through the server with `--server`.

use std::process::ExitCode;

use repo::{Repository, Write, record_uri};
use serde_json::{Value, json};
use store::SlateKv;

use crate::{
    client::server_repo,
    commands::{PutArgs, RepoArgs, SwapArgs},
    output::{Result, bar, outln, print},
    session::{
        JsonLineBatches, RecordParts, Session, Target, batch_stopped, known_collection, parse_rev,
        read_json, record_parts, say,
    },
};

/// `put`: one record, or with `--batch` JSON Lines of writes.
pub(crate) async fn put(t: Target<'_>, args: &RepoArgs, put: PutArgs) -> Result<ExitCode> {
    let json_mode = args.json;
    let e = say;
    let PutArgs {
        collection,
        rkey,
        batch,
        commit_every,
        file,
        create,
        swap,
        validate,
    } = put;
    match t {
        Target::Store(s) if batch => {
            let repo = s.repo_for_write(args).await?;
            put_batch(
                &repo,
                json_mode,
                usize::try_from(commit_every).unwrap_or(usize::MAX),
                validate.mode(),
            )
            .await?;
        }
        Target::Store(s) => {
            let collection = collection.ok_or("give the collection (or --batch)")?;
            let (swap_commit, swap_record) = swap.parse()?;
            if create && swap_record.is_some() {
                return Err("--create and --swap-record contradict each other: a record that must not exist has no current CID".into());
            }
            // Check the names before waiting on standard input.
            rkey::validate_nsid(&collection).map_err(|e| e.to_string())?;
            if let Some(rkey) = &rkey {
                rkey::validate_record_key(rkey).map_err(|e| e.to_string())?;
            }
            let value = read_json(file.as_deref())?;
            let repo = s.repo_for_write(args).await?;
            let write = match (rkey, create) {
                (rkey, true) | (rkey @ None, false) => Write::Create {
                    collection,
                    rkey,
                    value,
                },
                (Some(rkey), false) => Write::Update {
                    collection,
                    rkey,
                    value,
                    swap_record,
                },
            };
            let c = repo
                .apply_writes_validated(vec![write], swap_commit, validate.mode())
                .await
                .map_err(e)?;
            let r = &c.results[0];
            let uri = record_uri(repo.id(), &r.collection, &r.rkey);
            let cid = r.cid.map(|c| c.to_string()).unwrap_or_default();
            let status = r
                .validation
                .map_or("unknown", repo::ValidationStatus::as_str);
            print(
                json_mode,
                &json!({"uri": uri, "cid": cid, "commit": {"cid": c.commit.to_string(), "rev": c.rev.to_string()}, "validationStatus": status}),
                || {
                    format!(
                        "{uri}\n  cid {cid}\n  commit {} (rev {})\n  validation {status}",
                        c.commit, c.rev
                    )
                },
            );
        }
        Target::Server(client) if batch => {
            let repo = server_repo(args)?;
            let per = usize::try_from(commit_every).unwrap_or(usize::MAX);
            let (mut committed, mut commits) = (0_u64, 0_u64);
            for batch in JsonLineBatches::stdin(per) {
                let batch = batch.map_err(|(line, why)| batch_stopped(line, committed, &why))?;
                let n = batch.len() as u64;
                let writes: Vec<Value> = batch.into_iter().map(|(_, value)| value).collect();
                let mut body = json!({"repo": repo, "writes": writes});
                if let Some(v) = validate.param() {
                    body["validate"] = v.into();
                }
                let out = client
                    .post("com.atproto.repo.applyWrites", &body)
                    .await
                    .map_err(|e| {
                        format!("{e} ({committed} writes before this commit were committed)")
                    })?;
                committed += n;
                commits += 1;
                if json_mode {
                    outln!(
                        "{}",
                        json!({"commit": out["commit"], "writes": n, "results": out["results"]})
                    );
                }
            }
            if !args.json {
                outln!("{committed} writes in {commits} commits");
            }
        }
        Target::Server(client) => {
            let collection = collection.ok_or("give the collection (or --batch)")?;
            let value = read_json(file.as_deref())?;
            let (swap_commit, swap_record) = swap.parse()?;
            let mut body =
                json!({"repo": server_repo(args)?, "collection": collection, "record": value});
            if let Some(v) = validate.param() {
                body["validate"] = v.into();
            }
            if let Some(c) = swap_commit {
                body["swapCommit"] = c.to_string().into();
            }
            let method = match rkey {
                Some(rkey) if !create => {
                    body["rkey"] = rkey.into();
                    if let Some(r) = swap_record {
                        body["swapRecord"] = r.to_string().into();
                    }
                    "com.atproto.repo.putRecord"
                }
                rkey => {
                    if let Some(rkey) = rkey {
                        body["rkey"] = rkey.into();
                    }
                    "com.atproto.repo.createRecord"
                }
            };
            let out = client.post(method, &body).await?;
            print(
                json_mode,
                &json!({"uri": out["uri"], "cid": out["cid"], "commit": out["commit"], "validationStatus": out["validationStatus"]}),
                || {
                    format!(
                        "{}\n  cid {}\n  commit {} (rev {})\n  validation {}",
                        out["uri"].as_str().unwrap_or_default(),
                        out["cid"].as_str().unwrap_or_default(),
                        out["commit"]["cid"].as_str().unwrap_or_default(),
                        out["commit"]["rev"].as_str().unwrap_or_default(),
                        out["validationStatus"].as_str().unwrap_or("unknown"),
                    )
                },
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `get`: a record, now or as of a rev.
/// `--fields PATHS`, checked.
pub(crate) fn record_fields(list: Option<&str>) -> Result<Option<repo::RecordFields>> {
    list.map(|l| repo::RecordFields::parse(l).map_err(|e| format!("--fields: {e}").into()))
        .transpose()
}

/// Which page of records `ls` shows.
pub(crate) struct Page {
    pub(crate) limit: u64,
    pub(crate) cursor: Option<String>,
    pub(crate) reverse: bool,
    pub(crate) format: Option<crate::record_table::Format>,
}

pub(crate) async fn get(
    s: &Session,
    args: &RepoArgs,
    collection: String,
    rkey: Option<String>,
    at: Option<String>,
    fields: Option<&repo::RecordFields>,
) -> Result<ExitCode> {
    let json_mode = args.json;
    let e = say;
    let (repo, collection, rkey) = s.record_name(args, collection, rkey).await?;
    known_collection(&repo, &collection).await?;
    // A key the collection's key type refuses names the rule.
    repo.check_record_key(&collection, &rkey).await.map_err(e)?;
    let record = match at {
        Some(rev) => repo.record_at(parse_rev(&rev)?, &collection, &rkey).await,
        None => repo.get_record(&collection, &rkey).await,
    }
    .map_err(e)?;
    let uri = record_uri(repo.id(), &collection, &rkey);
    let Some(record) = record else {
        return Err(say(repo::Error::RecordNotFound(uri)));
    };
    let value = record.to_json_fields(fields);
    print(
        json_mode,
        &json!({"uri": uri, "cid": record.cid().to_string(), "value": value}),
        || serde_json::to_string_pretty(&value).unwrap_or_default(),
    );
    Ok(ExitCode::SUCCESS)
}

/// `rm`: deletes a record.
pub(crate) async fn rm(
    t: Target<'_>,
    args: &RepoArgs,
    collection: String,
    rkey: Option<String>,
    swap: SwapArgs,
) -> Result<ExitCode> {
    let json_mode = args.json;
    let e = say;
    match t {
        Target::Store(s) => {
            let (swap_commit, swap_record) = swap.parse()?;
            let (repo, collection, rkey) = s.record_name(args, collection, rkey).await?;
            let c = repo
                .apply_writes(
                    vec![Write::Delete {
                        collection: collection.clone(),
                        rkey: rkey.clone(),
                        swap_record,
                    }],
                    swap_commit,
                )
                .await;
            let c = match c {
                // As deleteRecord: deleting an absent record is no commit.
                Err(repo::Error::RecordNotFound(_)) if swap_record.is_none() => {
                    print(json_mode, &json!({}), || {
                        format!(
                            "no record at {}: nothing to delete",
                            record_uri(repo.id(), &collection, &rkey)
                        )
                    });
                    return Ok(ExitCode::SUCCESS);
                }
                other => other.map_err(e)?,
            };
            print(
                json_mode,
                &json!({"commit": {"cid": c.commit.to_string(), "rev": c.rev.to_string()}}),
                || {
                    format!(
                        "deleted {} (commit {}, rev {})",
                        record_uri(repo.id(), &collection, &rkey),
                        c.commit,
                        c.rev
                    )
                },
            );
        }
        Target::Server(client) => {
            let RecordParts {
                did,
                collection,
                rkey,
            } = record_parts(&collection, rkey)?;
            let repo = match did {
                Some(did) => did,
                None => server_repo(args)?,
            };
            let (swap_commit, swap_record) = swap.parse()?;
            let mut body = json!({"repo": repo, "collection": collection, "rkey": rkey});
            if let Some(c) = swap_commit {
                body["swapCommit"] = c.to_string().into();
            }
            if let Some(r) = swap_record {
                body["swapRecord"] = r.to_string().into();
            }
            let out = client.post("com.atproto.repo.deleteRecord", &body).await?;
            let uri = format!("at://{repo}/{collection}/{rkey}");
            let human = match out["commit"]["cid"].as_str() {
                Some(c) => format!("deleted {uri} (commit {c})"),
                None => format!("no record at {uri}: nothing to delete"),
            };
            print(json_mode, &out, || human);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `ls`: a page of a collection's records.
pub(crate) async fn ls(
    s: &Session,
    args: &RepoArgs,
    collection: String,
    Page {
        limit,
        cursor,
        reverse,
        format,
    }: Page,
    fields: Option<&repo::RecordFields>,
) -> Result<ExitCode> {
    let json_mode = args.json;
    let e = say;
    let repo = s.repo(args).await?;
    known_collection(&repo, &collection).await?;
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    // One more than asked tells whether another page follows.
    let mut page = repo
        .list_records(&collection, cursor.as_deref(), reverse, limit + 1)
        .await
        .map_err(e)?;
    let more = page.len() > limit;
    page.truncate(limit);
    let rows = rows(repo.id(), &collection, &page, fields);
    let next = page.last().filter(|_| more).map(|(k, _)| k.clone());
    crate::record_table::show_page(
        json_mode,
        format,
        &rows,
        fields.map(repo::RecordFields::paths),
        next.as_deref(),
    )
    .map_err(|e| e.to_string())?;
    Ok(ExitCode::SUCCESS)
}

/// A page of records as shown: `fields` of each value, when given.
pub(crate) fn rows(
    repo: &str,
    collection: &str,
    page: &[(String, repo::Record)],
    fields: Option<&repo::RecordFields>,
) -> Vec<crate::record_table::Row> {
    page.iter()
        .map(|(rkey, r)| crate::record_table::Row {
            rkey: rkey.clone(),
            uri: record_uri(repo, collection, rkey),
            cid: r.cid().to_string(),
            value: r.to_json_fields(fields),
        })
        .collect()
}

/// `put --batch`: JSON Lines of applyWrites-shaped writes from stdin, in
/// commits of `per_commit`. Each commit is atomic; a bad line stops the
/// batch before its commit, naming the line, and says what was committed.
async fn put_batch(
    repo: &Repository<SlateKv>,
    json_mode: bool,
    per_commit: usize,
    validation: repo::Validation,
) -> Result<()> {
    let bar = bar("{spinner} {pos} writes committed ({per_sec})");
    let (mut committed, mut commits) = (0_u64, 0_u64);
    for batch in JsonLineBatches::stdin(per_commit) {
        let batch = batch.map_err(|(line, why)| batch_stopped(line, committed, &why))?;
        let writes = batch
            .into_iter()
            .map(|(line, value)| {
                Write::from_apply_writes(value)
                    .map_err(|e| batch_stopped(line, committed, &e).into())
            })
            .collect::<Result<Vec<_>>>()?;
        let n = writes.len() as u64;
        let creates: Vec<bool> = writes
            .iter()
            .map(|w| matches!(w, Write::Create { .. }))
            .collect();
        let c = repo
            .apply_writes_validated(writes, None, validation)
            .await
            .map_err(|e| {
                say(e).and(&format!(
                    " ({committed} writes before this commit were committed)"
                ))
            })?;
        committed += n;
        commits += 1;
        bar.set_position(committed);
        if json_mode {
            // Each write's result as applyWrites answers it.
            let results: Vec<Value> = c
                .results
                .iter()
                .zip(creates)
                .map(|(r, create)| r.apply_writes_json(repo.id(), create))
                .collect();
            outln!(
                "{}",
                json!({"commit": {"cid": c.commit.to_string(), "rev": c.rev.to_string()},
                       "writes": n, "results": results})
            );
        }
    }
    bar.finish_and_clear();
    if !json_mode {
        outln!("{committed} writes in {commits} commits");
    }
    Ok(())
}
