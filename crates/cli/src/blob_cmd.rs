//! `datarepo blob …`: a repository's blobs (the files its records refer
//! to): store one, read one back, list them.

use std::{path::PathBuf, process::ExitCode};

use serde_json::{Value, json};

use crate::{
    client::server_repo,
    commands::{BlobCommand, RepoArgs},
    output::{Result, print},
    session::{Session, Target, say},
};

/// Runs a `blob` subcommand.
pub(crate) async fn run(t: Target<'_>, args: &RepoArgs, cmd: BlobCommand) -> Result<ExitCode> {
    let client = match t {
        Target::Store(s) => return run_on_store(s, args, cmd).await,
        Target::Server(client) => client,
    };
    let BlobCommand::Put { file, mime } = cmd else {
        t.session()?;
        return Ok(ExitCode::SUCCESS);
    };
    let bytes = tokio::fs::read(&file)
        .await
        .map_err(|e| format!("{}: {e}", file.display()))?;
    let out = client
        .upload_blob(&server_repo(args)?, bytes, mime.as_deref())
        .await?;
    print_ref(args.json, &out["blob"]);
    Ok(ExitCode::SUCCESS)
}

/// The blob reference a record holds, printed to be pasted into one.
fn print_ref(json_mode: bool, blob: &Value) {
    print(json_mode, &json!({ "blob": blob }), || {
        serde_json::to_string_pretty(blob).unwrap_or_default()
    });
}

async fn run_on_store(s: &Session, args: &RepoArgs, cmd: BlobCommand) -> Result<ExitCode> {
    match cmd {
        BlobCommand::Put { file, mime } => {
            let repo = s.repo_for_write(args).await?;
            let f = tokio::fs::File::open(&file)
                .await
                .map_err(|e| format!("{}: {e}", file.display()))?;
            let stream = tokio_util::io::ReaderStream::with_capacity(f, 1 << 20);
            let name = format!("cli-{}", std::process::id());
            let (cid, info) = repo
                .store_blob(stream, u64::MAX, mime.as_deref(), &name)
                .await
                .map_err(say)?;
            print_ref(
                args.json,
                &json!({"$type": "blob", "ref": {"$link": cid.to_string()},
                        "mimeType": info.mime_type, "size": info.size}),
            );
        }
        BlobCommand::Get { cid, out } => get(s, args, &cid, out).await?,
        BlobCommand::Ls => {
            let repo = s.repo(args).await?;
            let mut rows = Vec::new();
            let mut after: Option<String> = None;
            loop {
                let page = repo.list_blobs(after.as_deref(), 1000).await.map_err(say)?;
                let full = page.len() == 1000;
                after = page.last().map(|(c, _)| c.clone());
                rows.extend(page);
                if !full {
                    break;
                }
            }
            let shown: Vec<Value> = rows
                .iter()
                .map(|(cid, b)| {
                    json!({"cid": cid, "mimeType": b.mime_type, "size": b.size, "refs": b.refs,
                           "state": if b.refs > 0 { "referenced" } else if b.permanent { "released" } else { "temporary" }})
                })
                .collect();
            print(args.json, &json!({ "blobs": shown }), || {
                if shown.is_empty() {
                    return "no blobs".to_owned();
                }
                shown
                    .iter()
                    .map(|b| {
                        format!(
                            "{}  {}  {} bytes  {}",
                            b["cid"].as_str().unwrap_or_default(),
                            b["mimeType"].as_str().unwrap_or_default(),
                            b["size"],
                            b["state"].as_str().unwrap_or_default()
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            });
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `blob get CID [-o FILE]`: the bytes, to the file or standard output.
async fn get(s: &Session, args: &RepoArgs, cid: &str, out: Option<PathBuf>) -> Result<()> {
    use futures_util::StreamExt as _;
    use tokio::io::AsyncWriteExt as _;
    let repo = s.repo(args).await?;
    let parsed = cid::Cid::try_from(cid).map_err(|e| format!("{cid:?} is not a CID: {e}"))?;
    if repo.blob(&parsed).await.map_err(say)?.is_none() {
        return Err(crate::output::CliError {
            name: "BlobNotFound".to_owned(),
            message: format!("{} holds no blob {cid}", repo.id()),
        });
    }
    let mut bytes = store::Kv::blobs(&s.kv)
        .get(&parsed, None)
        .await
        .map_err(|e| say(e.into()))?
        .stream;
    let mut sink: Box<dyn tokio::io::AsyncWrite + Unpin + Send> = match &out {
        Some(path) => Box::new(
            tokio::fs::File::create(path)
                .await
                .map_err(|e| format!("{}: {e}", path.display()))?,
        ),
        None => Box::new(tokio::io::stdout()),
    };
    while let Some(chunk) = bytes.next().await {
        let chunk = chunk.map_err(|e| say(e.into()))?;
        sink.write_all(&chunk)
            .await
            .map_err(|e| format!("writing the blob: {e}"))?;
    }
    sink.flush()
        .await
        .map_err(|e| format!("writing the blob: {e}"))?;
    Ok(())
}
