//! `datarepo account …`: accounts in the store (or, with `--server`, made
//! through the server's createAccount).

use std::{io::BufRead as _, process::ExitCode, sync::Arc};

use accounts::{Accounts, account::Account, account::Status, storage::NewAccount};
use serde_json::{Value, json};
use store::{Partitions, SlateKv};

use crate::{
    client::Client,
    commands::{AccountCommand, PasswordArgs, RepoArgs},
    output::{Result, print},
    session::{Session, Target},
    storage::StoreArgs,
};

/// Runs an `account` command: on the store, or through a server's
/// admin API.
pub(crate) async fn run(t: Target<'_>, args: &RepoArgs, cmd: AccountCommand) -> Result<ExitCode> {
    match t {
        Target::Store(s) => run_on_store(s, args.json, cmd).await,
        Target::Server(client) => run_on_server(client, args.json, cmd).await,
    }
}

/// An `account` command on a partitioned store (without `--repo`): `list`
/// spans every partition; a command naming an account runs in the
/// partition holding it (a DID's by its hash, a handle's where an account
/// has it); `create` runs in the partition of the new account's DID once
/// its handle is free in every partition and, on object storage, claimed
/// for it as `serve` claims handles (`docs/server.md`, "Partitions").
pub(crate) async fn run_partitioned(
    store: &StoreArgs,
    partitions: Partitions,
    args: &RepoArgs,
    cmd: AccountCommand,
) -> Result<ExitCode> {
    if let AccountCommand::List = cmd {
        let mut all = Vec::new();
        for p in partitions.all() {
            let session = Session::open(&store.partition(p), false).await?;
            let listed = accounts(&session).list().await.map_err(say);
            session
                .kv
                .close()
                .await
                .map_err(|e| format!("closing partition {p}: {e}"))?;
            all.extend(listed?);
        }
        all.sort_by(|a, b| a.did.cmp(&b.did));
        print_accounts(&all, args.json);
        return Ok(ExitCode::SUCCESS);
    }
    let (partition, claim) = match &cmd {
        AccountCommand::Create { handle, did, .. } => {
            let handle = accounts::account::normalize_handle(handle).map_err(say)?;
            let did = did.clone().unwrap_or_else(|| format!("did:web:{handle}"));
            if holding_partition(store, partitions, &handle)
                .await?
                .is_some()
            {
                return Err(say(accounts::Error::HandleTaken(handle)));
            }
            let claim = claim_handle(store, &handle, &did).await?;
            (partitions.of(&did), claim)
        }
        _ => {
            let name = cmd.account().unwrap_or_default().to_owned();
            let partition = if name.starts_with("did:") {
                partitions.of(&name)
            } else {
                holding_partition(store, partitions, &name)
                    .await?
                    .ok_or_else(|| say(accounts::Error::AccountNotFound(name.clone())))?
            };
            (partition, None)
        }
    };
    let session = Session::open(&store.partition(partition), cmd.writes()).await?;
    let result = run_on_store(&session, args.json, cmd).await;
    let closed = session.kv.close().await;
    if result.is_err()
        && let Some((claims, handle, did)) = &claim
        && let Err(e) = claims.release(handle, did).await
    {
        eprintln!("datarepo: the handle claim on {handle} could not be given back: {e}");
    }
    let code = result?;
    closed.map_err(|e| format!("closing partition {partition}: {e}"))?;
    Ok(code)
}

/// The partition whose accounts include `name` (a handle or DID), if any.
async fn holding_partition(
    store: &StoreArgs,
    partitions: Partitions,
    name: &str,
) -> Result<Option<u32>> {
    for p in partitions.all() {
        let session = Session::open(&store.partition(p), false).await?;
        let found = accounts(&session).find(name).await.map_err(say);
        session
            .kv
            .close()
            .await
            .map_err(|e| format!("closing partition {p}: {e}"))?;
        if found?.is_some() {
            return Ok(Some(p));
        }
    }
    Ok(None)
}

/// On object storage, claims `handle` for `did` as `serve` does (the
/// claims, handle and DID to give back if the creation fails); `None` on a
/// local directory (one machine's, checked above).
async fn claim_handle(
    store: &StoreArgs,
    handle: &str,
    did: &str,
) -> Result<Option<(store::HandleClaims, String, String)>> {
    let location = store.parse()?;
    if !matches!(location, store::Location::S3 { .. }) {
        return Ok(None);
    }
    let claims = store::HandleClaims::at(&location)
        .await
        .map_err(|e| format!("the handle claims at {location}: {e}"))?;
    match claims
        .claim(handle, did)
        .await
        .map_err(|e| format!("claiming the handle {handle}: {e}"))?
    {
        store::Claim::Made => Ok(Some((claims, handle.to_owned(), did.to_owned()))),
        store::Claim::Held(held) if held.did == did => Ok(None),
        store::Claim::Held(held) => Err(format!(
            "handle {handle} is claimed for {} (an account being made, or one whose creation              stopped midway: a server frees it after --handle-claim-secs)",
            held.did
        )
        .into()),
    }
}

/// The account `account` (a handle or DID) on the server.
async fn server_account(client: &Client, account: &str) -> Result<Value> {
    client
        .get("com.atproto.admin.getAccountInfo", &[("did", account)])
        .await
}

async fn run_on_server(client: &Client, json_mode: bool, cmd: AccountCommand) -> Result<ExitCode> {
    let status_change = |account: Value, change: &str, applied: bool| {
        json!({
            "subject": {"$type": "com.atproto.admin.defs#repoRef", "did": account["did"]},
            change: {"applied": applied},
        })
    };
    let shown = match cmd {
        AccountCommand::Create {
            handle,
            did,
            email,
            password,
            signing_key_dir,
        } => {
            if signing_key_dir.is_some() {
                return Err("--signing-key-dir is the server's (serve --signing-key-dir) when creating through it".into());
            }
            let mut body = json!({"handle": handle, "password": read_password(&password)?});
            if let Some(did) = did {
                body["did"] = did.into();
            }
            if let Some(email) = email {
                body["email"] = email.into();
            }
            let out = client
                .post("com.atproto.server.createAccount", &body)
                .await?;
            json!({"did": out["did"], "handle": out["handle"]})
        }
        AccountCommand::SetPassword { account, password } => {
            let found = server_account(client, &account).await?;
            let body = json!({"did": found["did"], "password": read_password(&password)?});
            client
                .post("com.atproto.admin.updateAccountPassword", &body)
                .await?;
            json!({"did": found["did"]})
        }
        AccountCommand::Deactivate { account } => {
            let found = server_account(client, &account).await?;
            let body = status_change(found, "deactivated", true);
            client
                .post("com.atproto.admin.updateSubjectStatus", &body)
                .await?;
            json!({"did": body["subject"]["did"], "status": "deactivated"})
        }
        AccountCommand::Takedown { account } => {
            let found = server_account(client, &account).await?;
            let body = status_change(found, "takedown", true);
            client
                .post("com.atproto.admin.updateSubjectStatus", &body)
                .await?;
            json!({"did": body["subject"]["did"], "status": "takendown"})
        }
        AccountCommand::Activate { account } => {
            let found = server_account(client, &account).await?;
            for change in ["takedown", "deactivated"] {
                let body = status_change(found.clone(), change, false);
                client
                    .post("com.atproto.admin.updateSubjectStatus", &body)
                    .await?;
            }
            json!({"did": found["did"], "status": "active"})
        }
        // list and show read the store (beside a running server too).
        AccountCommand::List | AccountCommand::Show { .. } | AccountCommand::Delete { .. } => {
            return Err(
                "account delete works on the store (without --server), with the server stopped"
                    .into(),
            );
        }
    };
    print(json_mode, &shown, || {
        let did = shown["did"].as_str().unwrap_or_default();
        match shown["status"].as_str() {
            Some(status) => format!("{did} is {status}"),
            None => format!("{} ({did})", shown["handle"].as_str().unwrap_or_default()),
        }
    });
    Ok(ExitCode::SUCCESS)
}

fn accounts(s: &Session) -> Accounts<SlateKv> {
    Accounts::new(Arc::clone(s.repos.store()))
}

/// The stream events announcing `changes` to the account `did`, made now.
fn announce(s: &Session, did: &str, changes: Vec<repo::AccountChange>) -> store::StreamEvents {
    repo::account_stream_events(did, changes, s.repos.now_micros())
}

fn say(e: accounts::Error) -> crate::output::CliError {
    let name = match &e {
        accounts::Error::HandleTaken(_) => "HandleNotAvailable",
        accounts::Error::AccountNotFound(_) => "AccountNotFound",
        accounts::Error::InvalidHandle { .. } => "InvalidHandle",
        _ => "InvalidRequest",
    };
    crate::output::CliError {
        name: name.to_owned(),
        message: e.to_string(),
    }
}

/// The first line of the password's file or of standard input, or one
/// typed at a prompt (not echoed) when neither is given.
fn read_password(from: &PasswordArgs) -> Result<String> {
    use std::io::IsTerminal as _;
    if from.password_file.is_none() && !from.password_stdin {
        if !std::io::stdin().is_terminal() {
            return Err(
                "no password: give --password-file FILE or --password-stdin, or run this at a terminal to be asked"
                    .into(),
            );
        }
        let line = rpassword::prompt_password("password: ")
            .map_err(|e| format!("reading the password: {e}"))?;
        if line.is_empty() {
            return Err("the password is empty".into());
        }
        return Ok(line);
    }
    let line = match &from.password_file {
        Some(file) => std::fs::read_to_string(file)
            .map_err(|e| format!("--password-file {}: {e}", file.display()))?
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned(),
        None => {
            let mut line = String::new();
            std::io::stdin()
                .lock()
                .read_line(&mut line)
                .map_err(|e| format!("reading the password from standard input: {e}"))?;
            line.trim_end_matches(['\r', '\n']).to_owned()
        }
    };
    if line.is_empty() {
        return Err("the password is empty".into());
    }
    Ok(line)
}

async fn find(a: &Accounts<SlateKv>, name: &str) -> Result<Account> {
    a.find(name)
        .await
        .map_err(say)?
        .ok_or_else(|| say(accounts::Error::AccountNotFound(name.to_owned())))
}

/// Now, as RFC 3339 (the binary is where the clock is read).
fn print_accounts(all: &[Account], json_mode: bool) {
    let rows: Vec<Value> = all.iter().map(Account::to_json).collect();
    print(json_mode, &json!({ "accounts": rows }), || {
        if all.is_empty() {
            return "no accounts".to_owned();
        }
        all.iter()
            .map(|x| format!("{}  {}  {}", x.did, x.handle, x.status.as_str()))
            .collect::<Vec<_>>()
            .join("\n")
    });
}

#[allow(clippy::disallowed_methods)]
fn now() -> String {
    jiff::Timestamp::now().to_string()
}

async fn run_on_store(s: &Session, json_mode: bool, cmd: AccountCommand) -> Result<ExitCode> {
    let a = accounts(s);
    match cmd {
        AccountCommand::Create {
            handle,
            did,
            email,
            password,
            signing_key_dir,
        } => {
            let handle = accounts::account::normalize_handle(&handle).map_err(say)?;
            let did = did.unwrap_or_else(|| format!("did:web:{handle}"));
            let hash = accounts::password::hash(
                &read_password(&password)?,
                accounts::password::salt(crate::key_files::os_random),
            )
            .map_err(say)?;
            let account = a
                .create(NewAccount {
                    did: &did,
                    handle: &handle,
                    email: email.as_deref(),
                    password_hash: hash,
                    created_at: &now(),
                    invite_code: None,
                    announce: Some(announce(
                        s,
                        &did,
                        vec![
                            repo::AccountChange::Identity {
                                handle: Some(handle.clone()),
                            },
                            repo::AccountChange::status("active"),
                        ],
                    )),
                })
                .await
                .map_err(say)?;
            if let Err(e) = account_repository(s, &account.did, signing_key_dir).await {
                // No account without its repository.
                let gone = announce(
                    s,
                    &account.did,
                    vec![repo::AccountChange::status("deleted")],
                );
                let _ = a.delete(&account.did, Some(gone)).await;
                return Err(e);
            }
            print(json_mode, &account.to_json(), || {
                format!("created {} ({})", account.handle, account.did)
            });
        }
        AccountCommand::List => {
            print_accounts(&a.list().await.map_err(say)?, json_mode);
        }
        AccountCommand::Show { account } => {
            let x = find(&a, &account).await?;
            print(json_mode, &x.to_json(), || {
                format!(
                    "{}\n  handle   {}\n  status   {}\n  created  {}{}",
                    x.did,
                    x.handle,
                    x.status.as_str(),
                    x.created_at,
                    x.email
                        .as_deref()
                        .map(|e| format!("\n  email    {e}"))
                        .unwrap_or_default()
                )
            });
        }
        AccountCommand::SetPassword { account, password } => {
            let x = find(&a, &account).await?;
            let hash = accounts::password::hash(
                &read_password(&password)?,
                accounts::password::salt(crate::key_files::os_random),
            )
            .map_err(say)?;
            a.set_password_hash(&x.did, hash).await.map_err(say)?;
            print(json_mode, &json!({"did": x.did}), || {
                format!("set the password of {}", x.handle)
            });
        }
        AccountCommand::Deactivate { account } => {
            set_status(s, &a, &account, Status::Deactivated, json_mode).await?;
        }
        AccountCommand::Activate { account } => {
            set_status(s, &a, &account, Status::Active, json_mode).await?;
        }
        AccountCommand::Takedown { account } => {
            set_status(s, &a, &account, Status::Takendown, json_mode).await?;
        }
        AccountCommand::Delete {
            account,
            delete_repository,
            ..
        } => {
            let x = find(&a, &account).await?;
            let gone = announce(s, &x.did, vec![repo::AccountChange::status("deleted")]);
            a.delete(&x.did, Some(gone)).await.map_err(say)?;
            let repository = if delete_repository {
                match s.repos.delete(&x.did).await {
                    Ok(()) => "deleted",
                    Err(repo::Error::RepoNotFound(_)) => "absent",
                    Err(e) => {
                        return Err(format!(
                            "deleted the account {}, but not its repository: {}; run `datarepo repo delete {} --yes` to finish",
                            x.handle,
                            crate::session::say(e).message,
                            x.did
                        )
                        .into());
                    }
                }
            } else {
                "kept"
            };
            print(
                json_mode,
                &json!({"did": x.did, "deleted": true, "repository": repository}),
                || {
                    format!(
                        "deleted the account {} ({}); its repository is {repository}",
                        x.handle, x.did
                    )
                },
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The new account's repository, signed with a key of its own: made now,
/// or an existing one attached (which starts signing if it did not).
async fn account_repository(
    s: &Session,
    did: &str,
    key_dir: Option<std::path::PathBuf>,
) -> Result<()> {
    let key_dir = key_dir
        .or_else(|| s.local_dir.as_ref().map(|d| d.join("signing-keys")))
        .ok_or("a store on S3 needs --signing-key-dir for the account's signing key")?;
    let dir = crate::key_files::signing_key_dir(key_dir, repo::Curve::K256)?;
    let (key, file) = dir
        .key_for(did)
        .map_err(|e| format!("the account's signing key: {e}"))?;
    match s.repos.open(did).await {
        Ok(existing) => {
            if existing
                .signing_keys()
                .await
                .map_err(crate::session::say)?
                .current
                .is_none()
            {
                existing
                    .set_signing_key(key, file)
                    .await
                    .map_err(crate::session::say)?;
            }
        }
        Err(repo::Error::RepoNotFound(_)) => {
            s.repos
                .create_signed(did, key, file)
                .await
                .map_err(crate::session::say)?;
        }
        Err(e) => return Err(crate::session::say(e)),
    }
    Ok(())
}

async fn set_status(
    s: &Session,
    a: &Accounts<SlateKv>,
    name: &str,
    status: Status,
    json_mode: bool,
) -> Result<()> {
    let x = find(a, name).await?;
    let change = announce(
        s,
        &x.did,
        vec![repo::AccountChange::status(status.as_str())],
    );
    a.set_status(&x.did, status, Some(change))
        .await
        .map_err(say)?;
    print(
        json_mode,
        &json!({"did": x.did, "status": status.as_str()}),
        || format!("{} is {}", x.handle, status.as_str()),
    );
    Ok(())
}
