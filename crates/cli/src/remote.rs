//! Remote mode: with `--server URL` (or `DATAREPO_SERVER`), the writing
//! commands go through a running server's XRPC API with the token in
//! `DATAREPO_TOKEN`, so the CLI works beside a server that holds the store
//! (reading commands open the store read-only and need no server). The
//! commands print what they print locally: the API's response shapes.

use serde_json::{Value, json};

use crate::{
    commands::CollectionCommand, commands::IndexCommand, commands::LexiconCommand,
    commands::RepoArgs, commands::RepoCommand, output::outln, session::JsonLineBatches,
    session::batch_stopped, session::read_json, session::record_uri_parts,
};

type Result<T> = std::result::Result<T, crate::output::CliError>;

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
        let resp = req.send().await.map_err(|e| unreachable(&self.base, &e))?;
        let status = resp.status();
        let body: Value = resp
            .json()
            .await
            .map_err(|e| format!("{method}: the server's answer is not JSON: {e}"))?;
        if status.is_success() {
            return Ok(body);
        }
        let mut message = format!(
            "{method}: {} {}: {}",
            status.as_u16(),
            body["error"].as_str().unwrap_or("error"),
            body["message"].as_str().unwrap_or("")
        );
        if status == reqwest::StatusCode::UNAUTHORIZED {
            message.push_str(if self.token.is_some() {
                " (the token in DATAREPO_TOKEN is not this server's: set it to the token the \
                 server was started with, its --token or DATAREPO_TOKEN)"
            } else {
                " (no token given: set DATAREPO_TOKEN to the token the server was started \
                 with, its --token or DATAREPO_TOKEN)"
            });
        }
        Err(crate::output::CliError {
            name: body["error"].as_str().unwrap_or("Error").to_owned(),
            message,
        })
    }
}

impl Client {
    async fn get(&self, method: &str, query: &[(&str, &str)]) -> Result<Value> {
        // Percent-encodes all but unreserved characters.
        let encode = |s: &str| -> String {
            s.bytes()
                .map(|b| match b {
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                        char::from(b).to_string()
                    }
                    _ => format!("%{b:02X}"),
                })
                .collect()
        };
        let query: Vec<String> = query
            .iter()
            .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
            .collect();
        let mut req = self
            .http
            .get(format!("{}/xrpc/{method}?{}", self.base, query.join("&")));
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        let resp = req.send().await.map_err(|e| unreachable(&self.base, &e))?;
        let status = resp.status();
        let body: Value = resp
            .json()
            .await
            .map_err(|e| format!("{method}: the server's answer is not JSON: {e}"))?;
        if status.is_success() {
            return Ok(body);
        }
        Err(crate::output::CliError {
            name: body["error"].as_str().unwrap_or("Error").to_owned(),
            message: format!(
                "{method}: {} {}: {}",
                status.as_u16(),
                body["error"].as_str().unwrap_or("error"),
                body["message"].as_str().unwrap_or("")
            ),
        })
    }

    /// The result of a request that may have answered with a job still
    /// running (`202 {job}`): followed with `getJob`, with a progress bar on
    /// a terminal, until it ends; its result (as the command prints it
    /// locally: no job id), or its error.
    async fn finished(&self, mut answer: Value, doing: &str) -> Result<Value> {
        let Some(id) = answer["job"]["id"].as_str().map(str::to_owned) else {
            // Printed as the command prints it locally, where there is no job.
            if let Some(fields) = answer.as_object_mut() {
                fields.remove("job");
            }
            return Ok(answer);
        };
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(crate::output::progress_style(&format!(
            "{doing} (job {id}) [{{bar:40}}] {{pos}}/{{len}} records ({{eta}})"
        )));
        let mut job = answer["job"].clone();
        loop {
            if let Some(total) = job["progress"]["total"].as_u64() {
                bar.set_length(total);
            }
            let done = job["progress"]["done"].as_u64().unwrap_or(0);
            bar.set_position(done.min(bar.length().unwrap_or(done)));
            match job["state"].as_str() {
                Some("running") => {}
                Some("succeeded") => {
                    bar.finish_and_clear();
                    return Ok(job["result"].clone());
                }
                _ => {
                    bar.finish_and_clear();
                    return Err(crate::output::CliError {
                        name: job["error"]["error"].as_str().unwrap_or("Error").to_owned(),
                        message: format!(
                            "job {id} failed: {}",
                            job["error"]["message"].as_str().unwrap_or("")
                        ),
                    });
                }
            }
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            job = self.get("dev.datarepo.getJob", &[("id", &id)]).await?;
        }
    }
}

/// Why the server at `base` could not be reached, with the cause at the
/// bottom of `e`'s chain (a refused connection, a name that does not
/// resolve, a timeout), which reqwest's own message leaves out.
fn unreachable(base: &str, e: &reqwest::Error) -> crate::output::CliError {
    let mut cause: &dyn std::error::Error = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    let hint = if e.is_connect() {
        " (is `datarepo serve` running there? --server or DATAREPO_SERVER names it)"
    } else {
        ""
    };
    crate::output::CliError {
        name: "ServerUnreachable".to_owned(),
        message: format!("cannot reach the server at {base}: {cause}{hint}"),
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
            validate,
            ..
        } => {
            let repo = repo()?;
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
                if args.json {
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
            let value = read_json(file.as_deref())?;
            let (swap_commit, swap_record) = swap.parse()?;
            let mut body = json!({"repo": repo()?, "collection": collection, "record": value});
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
                &json!({"uri": out["uri"], "cid": out["cid"], "commit": out["commit"], "validationStatus": out["validationStatus"]}),
                format!(
                    "{}\n  cid {}\n  commit {} (rev {})\n  validation {}",
                    out["uri"].as_str().unwrap_or_default(),
                    out["cid"].as_str().unwrap_or_default(),
                    out["commit"]["cid"].as_str().unwrap_or_default(),
                    out["commit"]["rev"].as_str().unwrap_or_default(),
                    out["validationStatus"].as_str().unwrap_or("unknown"),
                ),
            );
        }
        RepoCommand::Rm {
            collection,
            rkey,
            swap,
        } => {
            let (repo, collection, rkey) = match record_uri_parts(&collection, rkey.as_deref())? {
                Some((did, coll, rk)) => (did.to_owned(), coll.to_owned(), rk.to_owned()),
                None => (
                    repo()?,
                    collection,
                    rkey.ok_or("give the record key after the collection, or the record's AT URI")?,
                ),
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
            let out = client.finished(out, "indexing").await?;
            let human = format!(
                "indexed {path} of {collection} ({kind}): {}",
                crate::output::count(out["records"].as_u64().unwrap_or(0), "record")
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
        RepoCommand::Index(IndexCommand::Rebuild) => {
            let out = client
                .post("dev.datarepo.rebuildIndexes", &json!({"repo": repo()?}))
                .await?;
            let out = client.finished(out, "rebuilding the indexes").await?;
            let human = format!(
                "rebuilt the field indexes: {}",
                crate::output::count(out["records"].as_u64().unwrap_or(0), "record")
            );
            print(&out, human);
        }
        RepoCommand::Lexicon(LexiconCommand::Add { files }) => {
            let docs = files
                .iter()
                .map(|f| read_json(Some(f)))
                .collect::<Result<Vec<Value>>>()?;
            let out = client
                .post(
                    "dev.datarepo.putLexicons",
                    &json!({"repo": repo()?, "lexicons": docs}),
                )
                .await?;
            let human = crate::lexicon_cmd::describe_added(&out);
            print(&out, human);
        }
        RepoCommand::Lexicon(LexiconCommand::Rm { nsid }) => {
            let out = client
                .post(
                    "dev.datarepo.deleteLexicon",
                    &json!({"repo": repo()?, "nsid": nsid}),
                )
                .await?;
            print(&out, format!("removed Lexicon {nsid}"));
        }
        RepoCommand::Collection(CollectionCommand::Define { nsid, key }) => {
            let out = client
                .post(
                    "dev.datarepo.defineCollection",
                    &json!({"repo": repo()?, "collection": nsid, "key": key}),
                )
                .await?;
            let human = format!(
                "{nsid}: record keys are {}",
                out["key"].as_str().unwrap_or_default()
            );
            print(&out, human);
        }
        _ => {
            return Err(
                "this command needs the store itself, which the server holds: stop the server \
                 to run it, or leave out --server (reading commands work beside it)"
                    .to_owned()
                    .into(),
            );
        }
    }
    Ok(())
}
