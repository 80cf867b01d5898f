//! Remote mode: with `--server URL` (or `DATAREPO_SERVER`), the writing
//! commands go through a running server's XRPC API with the token in
//! `DATAREPO_TOKEN`, so the CLI works beside a server that holds the store
//! (reading commands open the store read-only and need no server). The
//! commands print what they print locally: the API's response shapes.

use serde_json::{Value, json};

use crate::{
    output::outln,
    repo_cmd::{IndexCommand, RepoArgs, RepoCommand, read_json},
};

type Result<T> = std::result::Result<T, String>;

struct Client {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
}

impl Client {
    async fn post(&self, method: &str, body: &Value) -> Result<Value> {
        let mut req = self
            .http
            .post(format!("{}/xrpc/{method}", self.base))
            .json(body);
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        let resp = req
            .send()
            .await
            .map_err(|e| format!("{}: {e}", self.base))?;
        let status = resp.status();
        let body: Value = resp
            .json()
            .await
            .map_err(|e| format!("{method}: the server's answer is not JSON: {e}"))?;
        if status.is_success() {
            Ok(body)
        } else {
            Err(format!(
                "{method}: {} {}: {}",
                status.as_u16(),
                body["error"].as_str().unwrap_or("error"),
                body["message"].as_str().unwrap_or("")
            ))
        }
    }
}

/// Runs a writing command through the server at `server`.
pub(crate) async fn run(server: &str, args: &RepoArgs, cmd: RepoCommand) -> Result<()> {
    let client = Client {
        http: reqwest::Client::new(),
        base: server.trim_end_matches('/').to_owned(),
        token: std::env::var("DATAREPO_TOKEN")
            .ok()
            .filter(|t| !t.is_empty()),
    };
    let repo = || {
        args.repo
            .clone()
            .ok_or("with --server, pass --repo ID (or set DATAREPO_REPO)")
    };
    let print = |value: &Value, human: String| {
        if args.json {
            outln!("{value}");
        } else {
            outln!("{human}");
        }
    };
    match cmd {
        RepoCommand::Put {
            batch: true,
            commit_every,
            ..
        } => {
            use std::io::BufRead as _;
            let repo = repo()?;
            let per = usize::try_from(commit_every).unwrap_or(usize::MAX);
            let (mut committed, mut commits) = (0_u64, 0_u64);
            let mut pending: Vec<Value> = Vec::new();
            let mut lines = std::io::stdin().lock().lines().enumerate().peekable();
            while let Some((i, line)) = lines.next() {
                let line = line.map_err(|e| format!("cannot read standard input: {e}"))?;
                if !line.trim().is_empty() {
                    pending.push(serde_json::from_str(&line).map_err(|e| {
                        format!(
                            "line {}: not JSON: {e} ({committed} writes before it were committed)",
                            i + 1
                        )
                    })?);
                }
                if pending.len() == per || (lines.peek().is_none() && !pending.is_empty()) {
                    let n = pending.len() as u64;
                    let out = client
                        .post(
                            "com.atproto.repo.applyWrites",
                            &json!({"repo": repo, "writes": std::mem::take(&mut pending)}),
                        )
                        .await
                        .map_err(|e| {
                            format!("{e} ({committed} writes before this commit were committed)")
                        })?;
                    committed += n;
                    commits += 1;
                    if args.json {
                        outln!("{}", json!({"commit": out["commit"], "writes": n}));
                    }
                }
            }
            if !args.json {
                outln!("{committed} writes in {commits} commits");
            }
        }
        RepoCommand::Put {
            collection,
            rkey,
            file,
            create,
            swap,
            ..
        } => {
            let collection = collection.ok_or("give the collection (or --batch)")?;
            let value = read_json(file.as_deref())?;
            let (swap_commit, swap_record) = swap.parse()?;
            let mut body = json!({"repo": repo()?, "collection": collection, "record": value});
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
                &json!({"uri": out["uri"], "cid": out["cid"], "commit": out["commit"]}),
                format!(
                    "{}\n  cid {}\n  commit {} (rev {})",
                    out["uri"].as_str().unwrap_or_default(),
                    out["cid"].as_str().unwrap_or_default(),
                    out["commit"]["cid"].as_str().unwrap_or_default(),
                    out["commit"]["rev"].as_str().unwrap_or_default()
                ),
            );
        }
        RepoCommand::Rm {
            collection,
            rkey,
            swap,
        } => {
            let (repo, collection, rkey) = match (collection.strip_prefix("at://"), rkey) {
                (Some(path), None) => {
                    let mut parts = path.splitn(3, '/');
                    match (parts.next(), parts.next(), parts.next()) {
                        (Some(d), Some(c), Some(r)) => (d.to_owned(), c.to_owned(), r.to_owned()),
                        _ => return Err(format!("{collection:?} is not a record's AT URI")),
                    }
                }
                (None, Some(rkey)) => (repo()?, collection, rkey),
                _ => return Err("give COLLECTION RKEY, or the record's AT URI alone".to_owned()),
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
            print(&out, human);
        }
        RepoCommand::Index(IndexCommand::Add {
            collection,
            path,
            kind,
        }) => {
            let out = client
                .post(
                    "dev.datarepo.addIndex",
                    &json!({"repo": repo()?, "collection": collection, "path": path, "kind": kind}),
                )
                .await?;
            let human = format!(
                "indexed {path} of {collection} ({kind}): {} records",
                out["records"]
            );
            print(&out, human);
        }
        RepoCommand::Index(IndexCommand::Drop { collection, path }) => {
            let out = client
                .post(
                    "dev.datarepo.dropIndex",
                    &json!({"repo": repo()?, "collection": collection, "path": path}),
                )
                .await?;
            print(&out, format!("dropped the index of {path} in {collection}"));
        }
        _ => {
            return Err(
                "this command needs the store itself, which the server holds: stop the server \
                 to run it, or leave out --server (reading commands work beside it)"
                    .to_owned(),
            );
        }
    }
    Ok(())
}
