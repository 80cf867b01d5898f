//! The store's repositories: `init`, `repo list` and `stats`.

use std::{path::PathBuf, process::ExitCode};

use rkey::Tid;
use serde_json::json;

use store::Partitions;

use crate::{
    commands::RepoArgs,
    output::{Result, count, print},
    session::{Session, count_records, say},
    storage::StoreArgs,
};

/// `init`: creates the repository, signed or not.
pub(crate) async fn init(
    s: &Session,
    args: &RepoArgs,
    signing_key: Option<PathBuf>,
) -> Result<ExitCode> {
    let json_mode = args.json;
    let e = say;
    let id = repo_id(args)?;
    let repo = match signing_key {
        Some(path) => {
            let (key, file) = crate::key_files::load_key_file(&path)?;
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
    Ok(ExitCode::SUCCESS)
}

/// `init --partitions P`: the store at `store` made a store of `count`
/// partitions, each partition's database created (so that every reader
/// finds one).
pub(crate) async fn init_partitions(store: &StoreArgs, count: u32, args: &RepoArgs) -> Result<()> {
    let location = store.parse()?;
    let partitions = Partitions::new(count).map_err(|e| e.to_string())?;
    partitions
        .create(&location)
        .await
        .map_err(|e| format!("cannot create the store: {e}"))?;
    let bar = indicatif::ProgressBar::new(u64::from(count)).with_style(
        crate::output::progress_style("creating partitions [{bar:40}] {pos}/{len}"),
    );
    if args.json {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    for p in partitions.all() {
        let kv = store.partition(p).open().await?;
        kv.close()
            .await
            .map_err(|e| format!("closing partition {p}: {e}"))?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    if args.repo.is_none() {
        print(
            args.json,
            &json!({"store": location.to_string(), "partitions": count}),
            || format!("created the store at {location}: {count} partitions"),
        );
    }
    Ok(())
}

/// `repo list` of a partitioned store: every partition's repositories, in
/// one list ordered by ID.
pub(crate) async fn list_partitions(
    store: &StoreArgs,
    partitions: Partitions,
    args: &RepoArgs,
) -> Result<ExitCode> {
    let mut all = Vec::new();
    for p in partitions.all() {
        let session = Session::open(&store.partition(p), false).await?;
        all.extend(session.repos.list().await.map_err(say)?);
        session
            .kv
            .close()
            .await
            .map_err(|e| format!("closing partition {p}: {e}"))?;
    }
    all.sort_by(|a, b| a.0.cmp(&b.0));
    print_list(all, args.json)
}

/// `repo list`: every repository in the store.
pub(crate) async fn list(s: &Session, args: &RepoArgs) -> Result<ExitCode> {
    print_list(s.repos.list().await.map_err(say)?, args.json)
}

fn print_list(all: Vec<(String, store::Head)>, json_mode: bool) -> Result<ExitCode> {
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
    Ok(ExitCode::SUCCESS)
}

/// `repo delete ID --yes`.
pub(crate) async fn delete(s: &Session, args: &RepoArgs, id: &str) -> Result<ExitCode> {
    s.repos.delete(id).await.map_err(say)?;
    print(args.json, &json!({"repo": id, "deleted": true}), || {
        format!("deleted the repository {id} (its blocks go at the next gc)")
    });
    Ok(ExitCode::SUCCESS)
}

/// `stats`: the repository's head, records and commits.
pub(crate) async fn stats(s: &Session, args: &RepoArgs) -> Result<ExitCode> {
    let json_mode = args.json;
    let e = say;
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
    Ok(ExitCode::SUCCESS)
}

fn repo_id(args: &RepoArgs) -> Result<&str> {
    args.repo
        .as_deref()
        .ok_or_else(|| "no repository given: pass --repo ID or set DATAREPO_REPO".into())
}
