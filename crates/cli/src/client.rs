//! A running server's XRPC API, for the writing commands given `--server
//! URL` (or `DATAREPO_SERVER`): the CLI then works beside the server that
//! holds the store (reading commands open the store read-only and need no
//! server). Commands print what they print locally: the API's shapes.

use serde_json::Value;

use crate::commands::RepoArgs;

type Result<T> = std::result::Result<T, crate::output::CliError>;

/// A running server's XRPC API, with the token in `DATAREPO_TOKEN`.
pub(crate) struct Client {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
}

impl Client {
    /// The server at `server` (a base URL).
    pub(crate) fn new(server: &str) -> Self {
        Self {
            http: reqwest::Client::new(),
            base: server.trim_end_matches('/').to_owned(),
            token: std::env::var("DATAREPO_TOKEN")
                .ok()
                .filter(|t| !t.is_empty()),
        }
    }
}

impl Client {
    /// Calls procedure `method` with `body`; the answer, or the server's
    /// error naming the method.
    pub(crate) async fn post(&self, method: &str, body: &Value) -> Result<Value> {
        let mut req = self
            .http
            .post(format!("{}/xrpc/{method}", self.base))
            .json(body);
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        self.answer(method, req).await
    }

    /// Sends `req`: the answer, or the server's error naming `method` (and,
    /// when refused, what to do about the token).
    async fn answer(&self, method: &str, req: reqwest::RequestBuilder) -> Result<Value> {
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
    /// Uploads `bytes` as a blob of `repo` (`uploadBlob?repo=`): the
    /// answer, `{blob}`.
    pub(crate) async fn upload_blob(
        &self,
        repo: &str,
        bytes: Vec<u8>,
        mime: Option<&str>,
    ) -> Result<Value> {
        let mut req = self
            .http
            .post(format!(
                "{}/xrpc/com.atproto.repo.uploadBlob?repo={}",
                self.base,
                encode(repo)
            ))
            .header(
                reqwest::header::CONTENT_TYPE,
                mime.unwrap_or("application/octet-stream"),
            )
            .body(bytes);
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        self.answer("com.atproto.repo.uploadBlob", req).await
    }

    /// Calls query `method` with `query`; the answer, or the server's error
    /// naming the method.
    pub(crate) async fn get(&self, method: &str, query: &[(&str, &str)]) -> Result<Value> {
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
        self.answer(method, req).await
    }

    /// The result of a request that may have answered with a job still
    /// running (`202 {job}`): followed with `getJob`, with a progress bar on
    /// a terminal, until it ends; its result (as the command prints it
    /// locally: no job id), or its error.
    pub(crate) async fn finished(&self, mut answer: Value, doing: &str) -> Result<Value> {
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

/// The repository a command sent to a server names (`--repo`).
pub(crate) fn server_repo(args: &RepoArgs) -> Result<String> {
    args.repo
        .clone()
        .ok_or_else(|| "with --server, pass --repo ID (or set DATAREPO_REPO)".into())
}

/// Percent-encodes all but unreserved characters (a query value).
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
