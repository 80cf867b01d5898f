//! The store's repositories: `init`, `repo list` and `stats`.

use std::{path::PathBuf, process::ExitCode};

use rkey::Tid;
use serde_json::json;

use crate::{
    commands::RepoArgs,
    output::{Result, count, print},
    session::{Session, count_records, say},
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

/// `repo list`: every repository in the store.
pub(crate) async fn list(s: &Session, args: &RepoArgs) -> Result<ExitCode> {
    let json_mode = args.json;
    let e = say;
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
