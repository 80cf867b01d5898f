//! The repository commands: `init`, `collection`, `lexicon`, `put`, `get`,
//! `rm`, `ls`, `log`, `diff`, `export`, `import`, `stats`.
//!
//! With `--json`, `put`, `get` and `ls` print exactly the shapes of AT
//! Protocol's createRecord, getRecord and listRecords responses.

use crate::output::outln;
use std::{path::Path, process::ExitCode};

use cid::Cid;
use indicatif::ProgressStyle;
use repo::{ImportProgress, Repository, Write, record_uri};
use rkey::{KeyType, Tid};
use serde_json::{Value, json};
use store::SlateKv;

use crate::{
    commands::{
        CollectionCommand, IndexCommand, LexiconCommand, RepoArgs, RepoCommand, RepoListCommand,
    },
    output::{Result, bar, count, print, progress_style},
    session::{
        JsonLineBatches, Session, batch_stopped, format_tid_time, parse_rev, preview, read_json,
        say,
    },
};
use crate::{output::CliError, storage::StoreArgs};

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

/// Refuses a collection the repository has never had (a misspelling,
/// most likely): nothing could match, and an empty answer would hide it.
async fn known_collection(repo: &Repository<SlateKv>, collection: &str) -> Result<()> {
    let known: Vec<String> = repo
        .collections()
        .await
        .into_iter()
        .map(|(c, _)| c)
        .collect();
    if known.iter().any(|c| c == collection) {
        return Ok(());
    }
    const SHOWN: usize = 20;
    let listed = if known.is_empty() {
        "it has none".to_owned()
    } else if known.len() > SHOWN {
        format!(
            "it has: {} … and {} more (`datarepo collection list`)",
            known[..SHOWN].join(", "),
            known.len() - SHOWN
        )
    } else {
        format!("it has: {}", known.join(", "))
    };
    Err(CliError {
        name: "CollectionNotFound".to_owned(),
        message: format!(
            "the repository {} has no collection {collection}; {listed}",
            repo.id()
        ),
    })
}

fn repo_id(args: &RepoArgs) -> Result<&str> {
    args.repo
        .as_deref()
        .ok_or_else(|| "no repository given: pass --repo ID or set DATAREPO_REPO".into())
}

/// Runs a repository command.
pub(crate) fn run(store: &StoreArgs, args: &RepoArgs, cmd: RepoCommand) -> Result<ExitCode> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async {
        if let Some(server) = args.server.as_deref().filter(|_| cmd.writes()) {
            crate::remote::run(server, args, cmd).await?;
            return Ok(ExitCode::SUCCESS);
        }
        if !cmd.needs_store() {
            return execute_without_store(args, cmd).await;
        }
        let session = Session::open(store, cmd.writes()).await?;
        let result = execute(&session, args, cmd).await;
        let closed = session.kv.close().await;
        let code = result?;
        closed.map_err(|e| format!("closing the store: {e}"))?;
        Ok(code)
    })
}

/// The commands that need no store: `key generate`, and `verify` /
/// `verify-record` given their keys.
async fn execute_without_store(args: &RepoArgs, cmd: RepoCommand) -> Result<ExitCode> {
    use crate::signing_cmd;
    match cmd {
        RepoCommand::Key(crate::commands::KeyCommand::Generate { curve, out }) => {
            signing_cmd::generate(curve, &out, args.json)?;
        }
        RepoCommand::Verify {
            file,
            keys,
            incremental,
        } => signing_cmd::verify(None, &file, &keys, incremental, args.json).await?,
        RepoCommand::VerifyRecord { file, uri, keys } => {
            signing_cmd::verify_record(None, &file, &uri, &keys, args.json).await?;
        }
        RepoCommand::Lexicon(LexiconCommand::Validate {
            lexicons,
            json_lines,
        }) => {
            let lexicons = crate::lexicon_cmd::load_files(&lexicons)?;
            return crate::lexicon_cmd::validate(&lexicons, json_lines);
        }
        other => return Err(format!("{other:?} needs a store").into()),
    }
    Ok(ExitCode::SUCCESS)
}

async fn execute(s: &Session, args: &RepoArgs, cmd: RepoCommand) -> Result<ExitCode> {
    let json_mode = args.json;
    let e = say;
    match cmd {
        RepoCommand::Init { signing_key } => {
            let id = repo_id(args)?;
            let repo = match signing_key {
                Some(path) => {
                    let (key, file) = crate::signing_cmd::load_key_file(&path)?;
                    s.repos.create_signed(id, key, file).await.map_err(e)?
                }
                None => s.repos.create(id).await.map_err(e)?,
            };
            let head = repo.head().await.map_err(e)?;
            let keys = repo.signing_keys().await.map_err(e)?;
            let signing_key = keys.current.as_ref().map(|c| c.key.did_key());
            print(
                json_mode,
                &json!({"repo": repo.id(), "commit": {"cid": head.commit.to_string(), "rev": head.rev.to_string()},
                        "signingKey": signing_key}),
                || match &signing_key {
                    Some(did) => {
                        format!("created {} (rev {}), signed by {did}", repo.id(), head.rev)
                    }
                    None => format!("created {} (rev {})", repo.id(), head.rev),
                },
            );
        }
        RepoCommand::Key(cmd) => crate::signing_cmd::run_key(s, args, cmd).await?,
        RepoCommand::Verify {
            file,
            keys,
            incremental,
        } => crate::signing_cmd::verify(Some(s), &file, &keys, incremental, json_mode).await?,
        RepoCommand::VerifyRecord { file, uri, keys } => {
            crate::signing_cmd::verify_record(Some(s), &file, &uri, &keys, json_mode).await?;
        }
        RepoCommand::Collection(CollectionCommand::Define { nsid, key }) => {
            let key: KeyType = key.parse().map_err(|e: rkey::Error| e.to_string())?;
            let repo = s.repo(args).await?;
            let info = repo.define_collection(&nsid, key, None).await.map_err(e)?;
            print(
                json_mode,
                &json!({"collection": nsid, "key": info.key.to_string(), "keyType": info.key.to_string()}),
                || format!("{nsid}: record keys are {}", info.key),
            );
        }
        RepoCommand::Collection(CollectionCommand::List) => {
            let repo = s.repo(args).await?;
            let mut rows = Vec::new();
            for (name, info) in repo.collections().await {
                let count = count_records(&repo, &name).await?;
                rows.push(json!({"collection": name, "key": info.key.to_string(), "keyType": info.key.to_string(),
                                 "declared": info.declared, "records": count}));
            }
            print(json_mode, &json!({ "collections": rows }), || {
                if rows.is_empty() {
                    return "no collections".to_owned();
                }
                rows.iter()
                    .map(|r| {
                        format!(
                            "{}  key={}{}  {}",
                            r["collection"].as_str().unwrap_or_default(),
                            r["key"].as_str().unwrap_or_default(),
                            if r["declared"] == json!(true) {
                                ""
                            } else {
                                " (undeclared)"
                            },
                            count(r["records"].as_u64().unwrap_or(0), "record")
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            });
        }
        RepoCommand::Lexicon(command) => return crate::lexicon_cmd::run(s, args, command).await,
        RepoCommand::Put {
            batch: true,
            commit_every,
            validate,
            ..
        } => {
            let repo = s.repo_for_write(args).await?;
            put_batch(
                &repo,
                json_mode,
                usize::try_from(commit_every).unwrap_or(usize::MAX),
                validate.mode(),
            )
            .await?;
        }
        RepoCommand::Put {
            collection,
            rkey,
            file,
            create,
            swap,
            validate,
            ..
        } => {
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
        RepoCommand::Get {
            collection,
            rkey,
            at,
        } => {
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
            let value = record.to_json();
            print(
                json_mode,
                &json!({"uri": uri, "cid": record.cid().to_string(), "value": value}),
                || serde_json::to_string_pretty(&value).unwrap_or_default(),
            );
        }
        RepoCommand::Rm {
            collection,
            rkey,
            swap,
        } => {
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
        RepoCommand::Ls {
            collection,
            limit,
            cursor,
            reverse,
        } => {
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
            let records: Vec<Value> = page
                .iter()
                .map(|(rkey, r)| {
                    json!({"uri": record_uri(repo.id(), &collection, rkey),
                           "cid": r.cid().to_string(), "value": r.to_json()})
                })
                .collect();
            let mut out = json!({ "records": records });
            let next = page.last().filter(|_| more).map(|(k, _)| k.clone());
            if let Some(next) = &next {
                out["cursor"] = json!(next);
            }
            print(json_mode, &out, || {
                let mut lines: Vec<String> = page
                    .iter()
                    .map(|(rkey, r)| format!("{rkey}  {}", preview(&r.to_json())))
                    .collect();
                if let Some(next) = &next {
                    lines.push(format!("(more: --cursor {next})"));
                }
                lines.join("\n")
            });
        }
        RepoCommand::Index(cmd) => return index_command(s, args, cmd).await,
        RepoCommand::Query {
            collection,
            where_,
            limit,
            cursor,
            reverse,
            count,
            top,
            stats,
        } => {
            let repo = s.repo(args).await?;
            known_collection(&repo, &collection).await?;
            let where_ = where_.as_deref();
            if count {
                let n = repo.count(&collection, where_).await.map_err(e)?;
                print(json_mode, &json!({ "count": n }), || n.to_string());
            } else if let Some(path) = top {
                let k = usize::try_from(limit.unwrap_or(10)).unwrap_or(usize::MAX);
                let top = repo
                    .top_values(&collection, &path, where_, k)
                    .await
                    .map_err(e)?;
                let rows: Vec<Value> = top
                    .iter()
                    .map(|t| json!({"value": t.value.to_json(), "count": t.count}))
                    .collect();
                print(json_mode, &json!({ "top": rows }), || {
                    top.iter()
                        .map(|t| format!("{}  {}", t.count, t.value.to_json()))
                        .collect::<Vec<_>>()
                        .join("\n")
                });
            } else if let Some(path) = stats {
                let st = repo.stats(&collection, &path, where_).await.map_err(e)?;
                // Written by hand: the sum may pass 64 bits, which JSON
                // numbers allow and serde_json's values do not.
                let mut text = format!("{{\"count\":{},\"sum\":{}", st.count, st.sum);
                if let (Some(min), Some(max)) = (st.min, st.max) {
                    text.push_str(&format!(",\"min\":{min},\"max\":{max}"));
                }
                text.push('}');
                if json_mode {
                    outln!("{text}");
                } else {
                    match (st.min, st.max) {
                        (Some(min), Some(max)) => {
                            outln!("count {}, sum {}, min {min}, max {max}", st.count, st.sum)
                        }
                        _ => outln!("count 0, sum 0"),
                    }
                }
            } else {
                let limit = usize::try_from(limit.unwrap_or(50)).unwrap_or(usize::MAX);
                let page = repo
                    .query(&collection, where_, cursor.as_deref(), reverse, limit)
                    .await
                    .map_err(e)?;
                let records: Vec<Value> = page
                    .records
                    .iter()
                    .map(|(rkey, r)| {
                        json!({"uri": record_uri(repo.id(), &collection, rkey),
                               "cid": r.cid().to_string(), "value": r.to_json()})
                    })
                    .collect();
                let mut out = json!({ "records": records });
                if let Some(next) = &page.cursor {
                    out["cursor"] = json!(next);
                }
                print(json_mode, &out, || {
                    let mut lines: Vec<String> = page
                        .records
                        .iter()
                        .map(|(rkey, r)| format!("{rkey}  {}", preview(&r.to_json())))
                        .collect();
                    if let Some(next) = &page.cursor {
                        lines.push(format!("(more: --cursor {next})"));
                    }
                    lines.join("\n")
                });
            }
        }
        RepoCommand::Log {
            limit,
            before,
            record: Some(record),
        } => {
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
        }
        RepoCommand::Log {
            limit,
            before,
            record: None,
        } => {
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
        }
        RepoCommand::Diff { rev_a, rev_b } => {
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
        }
        RepoCommand::Export {
            file,
            since,
            history,
            force,
        } => {
            let repo = s.repo(args).await?;
            let scope = match since.as_deref().map(parse_rev).transpose()? {
                _ if history => ExportScope::History,
                since => ExportScope::Head(since),
            };
            if file.as_os_str() != "-" && !force && file.exists() {
                return Err(
                    format!("{} exists: pass --force to replace it", file.display()).into(),
                );
            }
            let bar = bar("{spinner} exporting: {pos} blocks written ({per_sec})");
            let progress = |n| bar.set_position(n);
            let report = if file.as_os_str() == "-" {
                let out = tokio::io::BufWriter::new(tokio::io::stdout());
                let (mut out, report) = match scope.export(&repo, out, progress).await {
                    Err(repo::Error::Io(err)) if err.kind() == std::io::ErrorKind::BrokenPipe => {
                        crate::output::stdout_failed(&err)
                    }
                    other => other.map_err(e)?,
                };
                if let Err(err) = tokio::io::AsyncWriteExt::flush(&mut out).await {
                    crate::output::stdout_failed(&err);
                }
                report
            } else {
                export_file(&repo, &file, scope, progress).await?
            };
            bar.finish_and_clear();
            let out = json!({"commit": report.commit.to_string(), "rev": report.rev.to_string(),
                             "blocks": report.blocks, "bytes": report.bytes});
            if file.as_os_str() == "-" {
                eprintln!("exported {} blocks", report.blocks);
            } else {
                print(json_mode, &out, || {
                    format!(
                        "exported {} blocks ({} bytes of block data) to {}; root {} (rev {})",
                        report.blocks,
                        report.bytes,
                        file.display(),
                        report.commit,
                        report.rev
                    )
                });
            }
        }
        RepoCommand::Import {
            file,
            keys,
            trust_new_key,
            signing_key,
        } => {
            let options = repo::ImportOptions {
                repo: args.repo.clone(),
                keys: crate::signing_cmd::parse_keys(&keys)?,
                trust_new_key,
                signing_key: signing_key
                    .as_deref()
                    .map(crate::signing_cmd::load_key_file)
                    .transpose()?,
            };
            let f = tokio::fs::File::open(&file)
                .await
                .map_err(|err| format!("cannot open {}: {err}", file.display()))?;
            let len = f.metadata().await.map(|m| m.len()).unwrap_or(0);
            let bar = bar("importing [{bar:40}] {bytes}/{total_bytes} ({eta})");
            bar.set_length(len);
            let reader = bar.wrap_async_read(tokio::io::BufReader::with_capacity(1 << 20, f));
            let writing = progress_style("writing blocks [{bar:40}] {pos}/{len} ({eta})");
            let waiting = ProgressStyle::with_template("{spinner} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner());
            let report = s
                .repos
                .import_car_with_progress(reader, &options, |step| match step {
                    ImportProgress::Checking => {
                        bar.set_style(waiting.clone());
                        bar.set_message("checking the commit, its tree and its records");
                        bar.enable_steady_tick(std::time::Duration::from_millis(100));
                    }
                    ImportProgress::Writing { written, total } => {
                        if bar.length() != Some(total as u64) {
                            bar.disable_steady_tick();
                            bar.reset();
                            bar.set_length(total as u64);
                            bar.set_style(writing.clone());
                        }
                        bar.set_position(written as u64);
                    }
                    ImportProgress::Committing => {
                        bar.set_style(waiting.clone());
                        bar.set_message("committing the repository's head and record index");
                        bar.enable_steady_tick(std::time::Duration::from_millis(100));
                    }
                    ImportProgress::Indexing { records } => {
                        bar.set_style(waiting.clone());
                        bar.set_message(format!(
                            "rebuilding field indexes: {}",
                            count(records, "record")
                        ));
                    }
                })
                .await
                .map_err(|err| {
                    format!("{}: {} (nothing was imported)", file.display(), say(err))
                })?;
            bar.finish_and_clear();
            if report.signed && report.verified == 0 && !trust_new_key && !json_mode {
                eprintln!(
                    "note: the file's commits are signed, but this store knew no key for {} and none \
                     was given (--key), so they were not verified; `datarepo verify FILE --key DID_KEY` \
                     checks them",
                    report.repo
                );
            }
            if report.signing_key_missing && !json_mode {
                eprintln!(
                    "note: {} is signed, and this store has no private key for its next commit: writes \
                     are refused until `datarepo key rotate --signing-key FILE` gives one",
                    report.repo
                );
            }
            print(
                json_mode,
                &json!({"repo": report.repo, "commit": {"cid": report.commit.to_string(), "rev": report.rev.to_string()},
                        "records": report.records, "blocks": report.blocks, "unreachable": report.unreachable,
                        "commits": report.commits, "declarations": report.declarations,
                        "verified": report.verified, "signed": report.signed,
                        "signingKeyMissing": report.signing_key_missing}),
                || {
                    format!(
                        "imported {}: {}, {}, {}{}; head {} (rev {})",
                        report.repo,
                        count(report.records, "record"),
                        count(report.blocks, "block"),
                        count(report.commits, "commit"),
                        if report.declarations {
                            ", declarations"
                        } else {
                            ""
                        },
                        report.commit,
                        report.rev
                    )
                },
            );
        }
        RepoCommand::Repo(RepoListCommand::List) => {
            let all = s.repos.list().await.map_err(e)?;
            let mut repos = Vec::with_capacity(all.len());
            let mut lines = Vec::with_capacity(all.len());
            for (id, head) in all {
                let rev = Tid::from_u64(head.rev);
                lines.push(format!("{id}  rev {rev}  {}", head.commit));
                repos.push(
                    // `active` as listRepos answers it: datarepo has no
                    // account status, so every repository is active.
                    json!({"did": id, "head": head.commit.to_string(), "rev": rev.to_string(),
                           "active": true}),
                );
            }
            print(json_mode, &json!({"repos": repos}), || {
                if lines.is_empty() {
                    "no repositories in this store".to_owned()
                } else {
                    lines.join("\n")
                }
            });
        }
        RepoCommand::Stats => {
            let repo = s.repo(args).await?;
            let head = repo.head().await.map_err(e)?;
            let mut collections = Vec::new();
            let mut total = 0;
            for (name, info) in repo.collections().await {
                let count = count_records(&repo, &name).await?;
                total += count;
                collections.push(
                    json!({"collection": name, "key": info.key.to_string(), "keyType": info.key.to_string(), "records": count}),
                );
            }
            let commits = repo.log(usize::MAX).await.map_err(e)?.len();
            print(
                json_mode,
                &json!({"repo": repo.id(), "head": {"cid": head.commit.to_string(), "rev": head.rev.to_string()},
                        "records": total, "commits": commits, "collections": collections}),
                || {
                    let mut lines = vec![
                        format!("repository {}", repo.id()),
                        format!("head       {} (rev {})", head.commit, head.rev),
                        format!("records    {total}"),
                        format!("commits    {commits}"),
                    ];
                    for c in &collections {
                        lines.push(format!(
                            "  {}  {}",
                            c["collection"].as_str().unwrap_or_default(),
                            count(c["records"].as_u64().unwrap_or(0), "record")
                        ));
                    }
                    lines.join("\n")
                },
            );
        }
        RepoCommand::Check { history } => return check(s, args, history).await,
    }
    Ok(ExitCode::SUCCESS)
}

/// `datarepo check`: the repository given, or every one.
async fn check(s: &Session, args: &RepoArgs, history: bool) -> Result<ExitCode> {
    let ids = match &args.repo {
        Some(id) => vec![id.clone()],
        None => {
            let all = s.repos.list().await.map_err(|e| e.to_string())?;
            all.into_iter().map(|(id, _)| id).collect()
        }
    };
    if ids.is_empty() && !args.json {
        outln!("no repositories in this store: nothing to check");
    }
    let mut reports = Vec::new();
    let mut intact = true;
    for id in ids {
        let bar = bar("{spinner} {msg}");
        bar.enable_steady_tick(std::time::Duration::from_millis(100));
        bar.set_message(format!("{id}: reading the commit log and the tree"));
        let checking = progress_style("{msg} [{bar:40}] {pos}/{len} ({eta})");
        let options = repo::CheckOptions { history };
        // Each phase counts against its own total, set with every step:
        // a bar never shows more done than there is.
        let mut phase = "";
        let mut counted = |name: &'static str, message: String, done: u64, total: u64| {
            if phase != name {
                phase = name;
                bar.disable_steady_tick();
                bar.set_style(checking.clone());
                bar.set_message(message);
            }
            bar.set_length(total);
            bar.set_position(done.min(total));
        };
        let report = s
            .repos
            .check_with(&id, options, |step| match step {
                repo::CheckProgress::Tree { records } => {
                    bar.set_message(format!(
                        "{id}: reading the tree: {}",
                        count(records, "record")
                    ));
                }
                repo::CheckProgress::Index { done, total } => {
                    counted("records", format!("{id}: checking records"), done, total);
                }
                repo::CheckProgress::History { done, total } => {
                    counted(
                        "history",
                        format!("{id}: checking older commits"),
                        done,
                        total,
                    );
                }
            })
            .await
            .map_err(|e| format!("checking {id}: {e}"))?;
        bar.finish_and_clear();
        intact &= report.is_intact();
        if !args.json {
            outln!("{}", describe_check(&id, &report));
        }
        reports.push(json!({
            "repo": id, "commit": report.commit.to_string(), "records": report.records,
            "shards": report.shards, "commits": report.commits, "signedCommits": report.signed,
            "intact": report.is_intact(),
            "problemCount": report.problem_count, "problems": report.problems,
            "headMoved": report.head_moved,
            "olderShards": report.older_shards, "olderRecords": report.older_records,
            "invalidRecords": report.invalid_records, "warnings": report.warnings,
        }));
    }
    if args.json {
        outln!("{}", json!({"intact": intact, "repos": reports}));
    }
    Ok(if intact {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// A check's result for a person.
fn describe_check(id: &str, report: &repo::CheckReport) -> String {
    let signed = match report.signed {
        0 => String::new(),
        n if n == report.commits => " (all signed)".to_owned(),
        n => format!(" ({n} signed)"),
    };
    let mut counts = format!(
        "{}, {}, {}{signed}; head {}",
        count(report.records, "record"),
        count(report.shards, "shard"),
        count(report.commits, "commit"),
        report.commit
    );
    if report.older_shards > 0 || report.older_records > 0 {
        counts += &format!(
            "; older commits: {} more, {} more",
            count(report.older_shards, "shard"),
            count(report.older_records, "record")
        );
    }
    let warnings = || {
        let mut lines: Vec<String> = report
            .warnings
            .iter()
            .map(|w| format!("  warning: {w}"))
            .collect();
        if report.invalid_records > 0 {
            lines.push(format!(
                "  warning: {} record(s) do not validate against their collection's Lexicon",
                report.invalid_records
            ));
        }
        lines
    };
    if report.is_intact() {
        let mut lines = vec![format!("{id}: intact ({counts})")];
        lines.extend(warnings());
        return lines.join("\n");
    }
    let mut lines = vec![format!(
        "{id}: {} problem(s) ({counts})",
        report.problem_count
    )];
    lines.extend(warnings());
    lines.extend(report.problems.iter().map(|p| format!("  {p}")));
    let unlisted = report.problem_count - report.problems.len() as u64;
    if unlisted > 0 {
        lines.push(format!("  ... and {unlisted} more"));
    }
    if report.head_moved {
        lines.push(
            "  the repository changed while it was checked (a server is writing): differences \
             between the tree and the record index may be that write; run the check again when \
             writes pause"
                .to_owned(),
        );
    }
    lines.join("\n")
}

async fn count_records(repo: &Repository<SlateKv>, collection: &str) -> Result<u64> {
    repo.record_count(collection).await.map_err(say)
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

/// What an export writes.
#[derive(Clone, Copy)]
enum ExportScope {
    /// The head (and, with a rev, only what changed since).
    Head(Option<Tid>),
    /// Every retained commit and the declarations.
    History,
}

impl ExportScope {
    async fn export<W: tokio::io::AsyncWrite + Unpin + Send>(
        self,
        repo: &Repository<SlateKv>,
        out: W,
        progress: impl FnMut(u64) + Send,
    ) -> std::result::Result<(W, repo::ExportReport), repo::Error> {
        match self {
            Self::Head(None) => repo.export_car(out, None, progress).await,
            Self::Head(Some(since)) => repo.export_increment_car(out, since, progress).await,
            Self::History => repo.export_history_car(out, progress).await,
        }
    }
}

async fn export_file(
    repo: &Repository<SlateKv>,
    file: &Path,
    scope: ExportScope,
    progress: impl FnMut(u64) + Send,
) -> Result<repo::ExportReport> {
    let tmp = file.with_extension("car.partial");
    let f = tokio::fs::File::create(&tmp)
        .await
        .map_err(|err| format!("cannot write {}: {err}", tmp.display()))?;
    let out = tokio::io::BufWriter::with_capacity(1 << 20, f);
    let written = async {
        let (mut out, report) = scope
            .export(repo, out, progress)
            .await
            .map_err(|e| e.to_string())?;
        tokio::io::AsyncWriteExt::flush(&mut out)
            .await
            .map_err(|e| e.to_string())?;
        out.into_inner()
            .sync_all()
            .await
            .map_err(|e| e.to_string())?;
        tokio::fs::rename(&tmp, file)
            .await
            .map_err(|e| e.to_string())?;
        Ok::<_, String>(report)
    }
    .await;
    if written.is_err() {
        let _ = tokio::fs::remove_file(&tmp).await;
    }
    written.map_err(|err| CliError::from(format!("export to {} failed: {err}", file.display())))
}

async fn index_command(s: &Session, args: &RepoArgs, cmd: IndexCommand) -> Result<ExitCode> {
    let json_mode = args.json;
    let e = say;
    let repo = s.repo(args).await?;
    match cmd {
        IndexCommand::Add {
            collection,
            path,
            kind,
        } => {
            let kind: repo::IndexKind = kind.parse()?;
            let bar = bar("indexing [{bar:40}] {pos}/{len} records ({eta}) {msg}");
            let records = repo
                .add_index(&collection, &path, kind, |p| {
                    bar.set_length(p.total);
                    bar.set_position(p.records);
                    if p.behind > 0 {
                        bar.set_message(format!(
                            "catching up with {} made meanwhile",
                            count(p.behind, "change")
                        ));
                    }
                })
                .await
                .map_err(e)?;
            bar.finish_and_clear();
            print(
                json_mode,
                &json!({"collection": collection, "path": path, "kind": kind.name(), "records": records}),
                || {
                    format!(
                        "indexed {path} of {collection} ({kind}): {}",
                        count(records, "record")
                    )
                },
            );
        }
        IndexCommand::List { collection } => {
            let list = repo.indexes(collection.as_deref()).await.map_err(e)?;
            let rows: Vec<Value> = list
                .iter()
                .map(|d| json!({"collection": d.collection, "path": d.path, "kind": d.kind.name()}))
                .collect();
            print(json_mode, &json!({ "indexes": rows }), || {
                if list.is_empty() {
                    return "no indexes".to_owned();
                }
                list.iter()
                    .map(|d| format!("{}  {}  {}", d.collection, d.path, d.kind))
                    .collect::<Vec<_>>()
                    .join("\n")
            });
        }
        IndexCommand::Drop { collection, path } => {
            repo.drop_index(&collection, &path).await.map_err(e)?;
            print(
                json_mode,
                &json!({"collection": collection, "path": path, "dropped": true}),
                || format!("dropped the index on {path} of {collection}"),
            );
        }
        IndexCommand::Rebuild => {
            let bar = bar("rebuilding the indexes: {pos} records");
            let records = repo
                .rebuild_indexes(|p| bar.set_position(p.records))
                .await
                .map_err(e)?;
            bar.finish_and_clear();
            print(
                json_mode,
                &json!({"rebuilt": true, "records": records}),
                || format!("rebuilt the field indexes: {}", count(records, "record")),
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
