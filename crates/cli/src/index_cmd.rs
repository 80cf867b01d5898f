//! `index add|list|drop|rebuild` and `query`.

use std::process::ExitCode;

use serde_json::{Value, json};

use crate::{
    client::server_repo,
    commands::{IndexCommand, QueryArgs, RepoArgs},
    output::{Result, bar, count, outln, print},
    session::{Session, Target, known_collection, say},
};

/// Runs an `index` command.
pub(crate) async fn run(t: Target<'_>, args: &RepoArgs, cmd: IndexCommand) -> Result<ExitCode> {
    let client = match t {
        Target::Store(s) => return run_on_store(s, args, cmd).await,
        Target::Server(client) => client,
    };
    let json_mode = args.json;
    match cmd {
        IndexCommand::Add {
            collection,
            path,
            kind,
        } => {
            let out = client
                .post(
                    "dev.datarepo.addIndex",
                    &json!({"repo": server_repo(args)?, "collection": collection, "path": path, "kind": kind}),
                )
                .await?;
            let out = client.finished(out, "indexing").await?;
            let human = format!(
                "indexed {path} of {collection} ({kind}): {}",
                crate::output::count(out["records"].as_u64().unwrap_or(0), "record")
            );
            print(json_mode, &out, || human);
        }
        IndexCommand::Drop { collection, path } => {
            let out = client
                .post(
                    "dev.datarepo.dropIndex",
                    &json!({"repo": server_repo(args)?, "collection": collection, "path": path}),
                )
                .await?;
            print(json_mode, &out, || {
                format!("dropped the index of {path} in {collection}")
            });
        }
        IndexCommand::Rebuild => {
            let out = client
                .post(
                    "dev.datarepo.rebuildIndexes",
                    &json!({"repo": server_repo(args)?}),
                )
                .await?;
            let out = client.finished(out, "rebuilding the indexes").await?;
            let human = format!(
                "rebuilt the field indexes: {}",
                crate::output::count(out["records"].as_u64().unwrap_or(0), "record")
            );
            print(json_mode, &out, || human);
        }
        IndexCommand::List { .. } => {
            t.session()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// An `index` command on the store itself.
async fn run_on_store(s: &Session, args: &RepoArgs, cmd: IndexCommand) -> Result<ExitCode> {
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

/// `query`: records matching a `--where` condition, or their count, top
/// values or stats.
pub(crate) async fn query(s: &Session, args: &RepoArgs, query: QueryArgs) -> Result<ExitCode> {
    let json_mode = args.json;
    let e = say;
    let QueryArgs {
        collection,
        where_,
        limit,
        cursor,
        reverse,
        sort,
        desc,
        count,
        top,
        stats,
        fields,
        format,
        group_by,
        histogram,
        interval,
        from,
        to,
    } = query;
    let fields = crate::records_cmd::record_fields(fields.as_deref())?;
    let fields = fields.as_ref();
    let repo = s.repo(args).await?;
    known_collection(&repo, &collection).await?;
    let where_ = where_.as_deref();
    if let Some(path) = histogram {
        let (kind, buckets) = repo
            .histogram(
                &collection,
                &path,
                where_,
                interval.as_deref().unwrap_or_default(),
                from.as_deref(),
                to.as_deref(),
            )
            .await
            .map_err(e)?;
        let out = repo::buckets_json(kind, &buckets);
        print(json_mode, &out, || {
            out["buckets"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|b| {
                    let start = b["start"]
                        .as_str()
                        .map_or_else(|| b["start"].to_string(), str::to_owned);
                    format!("{start}  {}", b["count"])
                })
                .collect::<Vec<_>>()
                .join("\n")
        });
        return Ok(ExitCode::SUCCESS);
    }
    if !group_by.is_empty() {
        let limit = usize::try_from(limit.unwrap_or(50)).unwrap_or(usize::MAX);
        let groups = repo
            .group_by(&collection, &group_by, where_, stats.as_deref())
            .await
            .map_err(e)?;
        let (page, next) = repo::groups_page(&groups, cursor.as_deref(), limit)
            .map_err(|why| format!("--cursor: {why}"))?;
        if json_mode {
            outln!("{}", repo::groups_json_text(page, next.as_deref()));
        } else {
            for g in page {
                let key: Vec<String> = g.key.iter().map(|k| k.to_json().to_string()).collect();
                let stats = g
                    .stats
                    .as_ref()
                    .and_then(|s| Some((s.min?, s.max?, s.avg()?, s.sum)))
                    .map(|(min, max, avg, sum)| {
                        format!("  sum {sum}, min {min}, max {max}, avg {avg}")
                    })
                    .unwrap_or_default();
                outln!("{}  {}{stats}", g.count, key.join("  "));
            }
            if let Some(next) = &next {
                outln!("(more: --cursor {next})");
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    if cursor.is_some() && stats.is_some() {
        return Err("--cursor pages records or groups, not --stats".into());
    }
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
        if json_mode {
            outln!("{}", st.to_json_text());
        } else {
            match (st.min, st.max, st.avg()) {
                (Some(min), Some(max), Some(avg)) => outln!(
                    "count {}, sum {}, min {min}, max {max}, avg {avg}",
                    st.count,
                    st.sum
                ),
                _ => outln!("count 0, sum 0"),
            }
        }
    } else {
        let limit = usize::try_from(limit.unwrap_or(50)).unwrap_or(usize::MAX);
        let page = match &sort {
            Some(path) => repo
                .query_sorted(&collection, where_, path, desc, cursor.as_deref(), limit)
                .await
                .map_err(e)?,
            None => repo
                .query(&collection, where_, cursor.as_deref(), reverse, limit)
                .await
                .map_err(e)?,
        };
        let rows = crate::records_cmd::rows(repo.id(), &collection, &page.records, fields);
        crate::record_table::show_page(
            json_mode,
            format,
            &rows,
            fields.map(repo::RecordFields::paths),
            page.cursor.as_deref(),
        )
        .map_err(|e| e.to_string())?;
    }
    Ok(ExitCode::SUCCESS)
}
