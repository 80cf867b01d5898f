//! `collection define` and `collection list`.

use std::process::ExitCode;

use rkey::KeyType;
use serde_json::json;

use crate::{
    client::server_repo,
    commands::{CollectionCommand, RepoArgs},
    output::{Result, count, print},
    session::{Target, count_records, say},
};

/// Runs a `collection` command.
pub(crate) async fn run(
    t: Target<'_>,
    args: &RepoArgs,
    cmd: CollectionCommand,
) -> Result<ExitCode> {
    let json_mode = args.json;
    let e = say;
    match (cmd, t) {
        (CollectionCommand::Define { nsid, key }, Target::Store(s)) => {
            let key: KeyType = key.parse().map_err(|e: rkey::Error| e.to_string())?;
            let repo = s.repo(args).await?;
            let info = repo.define_collection(&nsid, key, None).await.map_err(e)?;
            print(
                json_mode,
                &json!({"collection": nsid, "key": info.key.to_string(), "keyType": info.key.to_string()}),
                || format!("{nsid}: record keys are {}", info.key),
            );
        }
        (CollectionCommand::Define { nsid, key }, Target::Server(client)) => {
            let out = client
                .post(
                    "dev.datarepo.defineCollection",
                    &json!({"repo": server_repo(args)?, "collection": nsid, "key": key}),
                )
                .await?;
            let human = format!(
                "{nsid}: record keys are {}",
                out["key"].as_str().unwrap_or_default()
            );
            print(json_mode, &out, || human);
        }
        (CollectionCommand::List, t) => {
            let s = t.session()?;
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
    }
    Ok(ExitCode::SUCCESS)
}
