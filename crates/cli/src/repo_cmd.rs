//! The repository commands: which family module runs each, and where its
//! writes go (the store, or with `--server` the server that holds it).
//!
//! Each family (`records_cmd`, `collection_cmd`, `index_cmd`,
//! `lexicon_cmd`, `history_cmd`, `archive_cmd`, `repos_cmd`,
//! `signing_cmd`) depends only on the shared `session`, `client`, `output`
//! and `commands` modules, never on another family.

use std::process::ExitCode;

use crate::{
    account_cmd, archive_cmd, blob_cmd,
    client::Client,
    collection_cmd,
    commands::{LexiconCommand, RepoArgs, RepoCommand, RepoListCommand},
    history_cmd, index_cmd, lexicon_cmd,
    output::Result,
    records_cmd, repos_cmd,
    session::{Session, Target},
    signing_cmd,
    storage::StoreArgs,
};

/// Runs a repository command.
pub(crate) fn run(store: &StoreArgs, args: &RepoArgs, cmd: RepoCommand) -> Result<ExitCode> {
    let rt = runtime(&cmd).map_err(|e| e.to_string())?;
    rt.block_on(async {
        if let Some(server) = args.server.as_deref().filter(|_| cmd.writes()) {
            let client = Client::new(server);
            return execute(Target::Server(&client), args, cmd).await;
        }
        // `verify` takes the keys a store knows, where there is one: a
        // file is verified on a machine without a store as with no key.
        let no_local_store = || store.local_dir().is_some_and(|dir| !dir.exists());
        if !cmd.needs_store() || (cmd.store_optional() && no_local_store()) {
            return execute_without_store(args, cmd).await;
        }
        if let RepoCommand::Init {
            partitions: Some(count),
            ..
        } = &cmd
        {
            repos_cmd::init_partitions(store, *count, args).await?;
            if args.repo.is_none() {
                return Ok(ExitCode::SUCCESS);
            }
        }
        let partition;
        let store = match store.partitions().await? {
            None => store,
            Some(partitions) => {
                if matches!(cmd, RepoCommand::Repo(RepoListCommand::List)) {
                    return repos_cmd::list_partitions(store, partitions, args).await;
                }
                if let (RepoCommand::Account(_), None) = (&cmd, &args.repo) {
                    let RepoCommand::Account(account) = cmd else {
                        unreachable!("matched just above")
                    };
                    return account_cmd::run_partitioned(store, partitions, args, account).await;
                }
                if let (RepoCommand::Check { history }, None) = (&cmd, &args.repo) {
                    return archive_cmd::check_partitions(store, partitions, args, *history).await;
                }
                let id = named_repo(args, &cmd).ok_or_else(|| {
                    format!(
                        "this store has {} partitions: name the repository with --repo \
                         (or DATAREPO_REPO) so that its partition is known",
                        partitions.count()
                    )
                })?;
                partition = store.partition(partitions.of(&id));
                &partition
            }
        };
        let session = if cmd.one_pass() {
            Session::open_for_one_pass(store, cmd.writes()).await?
        } else {
            Session::open(store, cmd.writes()).await?
        };
        let result = execute(Target::Store(&session), args, cmd).await;
        let closed = session.kv.close().await;
        let code = result?;
        closed.map_err(|e| format!("closing the store: {e}"))?;
        Ok(code)
    })
}

/// The runtime `cmd` runs on. A command that reads a little (a query, a
/// record, a listing) runs on this thread alone: each of its reads is
/// handed between tasks (SlateDB's block fetches, file reads), and on a
/// pool of worker threads each hand-off woke a parked thread, which
/// doubled a just-opened query's time (`docs/benchmarks.md`, "Measurements
/// behind defaults"). Writes and whole-repository passes use two workers.
fn runtime(cmd: &RepoCommand) -> std::io::Result<tokio::runtime::Runtime> {
    if cmd.reads_little() {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
    }
}

/// The repository a command names: `--repo`, or the repository of the
/// record URI it was given.
fn named_repo(args: &RepoArgs, cmd: &RepoCommand) -> Option<String> {
    if let Some(repo) = &args.repo {
        return Some(repo.clone());
    }
    match cmd {
        RepoCommand::Get { collection, .. } => collection
            .strip_prefix("at://")
            .and_then(|rest| rest.split('/').next())
            .filter(|did| !did.is_empty())
            .map(str::to_owned),
        _ => None,
    }
}

/// The commands that need no store: `key generate`, and `verify` /
/// `verify-record` given their keys.
async fn execute_without_store(args: &RepoArgs, cmd: RepoCommand) -> Result<ExitCode> {
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
            let lexicons = lexicon_cmd::load_files(&lexicons)?;
            return lexicon_cmd::validate(&lexicons, json_lines);
        }
        other => return Err(format!("{other:?} needs a store").into()),
    }
    Ok(ExitCode::SUCCESS)
}

async fn execute(t: Target<'_>, args: &RepoArgs, cmd: RepoCommand) -> Result<ExitCode> {
    // The writing commands take the target (the store or a server); the
    // others need the store.
    match cmd {
        RepoCommand::Put(put) => records_cmd::put(t, args, put).await,
        RepoCommand::Rm {
            collection,
            rkey,
            swap,
        } => records_cmd::rm(t, args, collection, rkey, swap).await,
        RepoCommand::Collection(cmd) => collection_cmd::run(t, args, cmd).await,
        RepoCommand::Index(cmd) => index_cmd::run(t, args, cmd).await,
        RepoCommand::Lexicon(cmd) => lexicon_cmd::run(t, args, cmd).await,
        RepoCommand::Account(cmd) => account_cmd::run(t, args, cmd).await,
        RepoCommand::Blob(cmd) => blob_cmd::run(t, args, cmd).await,
        RepoCommand::Init { signing_key, .. } => {
            repos_cmd::init(t.session()?, args, signing_key).await
        }
        RepoCommand::Repo(RepoListCommand::List) => repos_cmd::list(t.session()?, args).await,
        RepoCommand::Repo(RepoListCommand::Delete { id, .. }) => {
            repos_cmd::delete(t.session()?, args, &id).await
        }
        RepoCommand::Stats => repos_cmd::stats(t.session()?, args).await,
        RepoCommand::Get {
            collection,
            rkey,
            at,
            fields,
        } => {
            let fields = records_cmd::record_fields(fields.as_deref())?;
            records_cmd::get(t.session()?, args, collection, rkey, at, fields.as_ref()).await
        }
        RepoCommand::Ls {
            collection,
            limit,
            cursor,
            reverse,
            fields,
            format,
        } => {
            let fields = records_cmd::record_fields(fields.as_deref())?;
            let page = records_cmd::Page {
                limit,
                cursor,
                reverse,
                format,
            };
            records_cmd::ls(t.session()?, args, collection, page, fields.as_ref()).await
        }
        RepoCommand::Query(query) => index_cmd::query(t.session()?, args, query).await,
        RepoCommand::Log {
            limit,
            before,
            record: Some(record),
        } => history_cmd::record_log(t.session()?, args, limit, before, record).await,
        RepoCommand::Log {
            limit,
            before,
            record: None,
        } => history_cmd::log(t.session()?, args, limit, before).await,
        RepoCommand::Diff { rev_a, rev_b } => {
            history_cmd::diff(t.session()?, args, rev_a, rev_b).await
        }
        RepoCommand::Export {
            file,
            since,
            history,
            blobs,
            force,
        } => {
            let blobs = archive_cmd::blob_dir(&file, blobs)?;
            archive_cmd::export(t.session()?, args, file, since, history, blobs, force).await
        }
        RepoCommand::Import {
            file,
            keys,
            trust_new_key,
            signing_key,
            blobs,
        } => {
            let options = archive_cmd::ImportFrom {
                keys,
                trust_new_key,
                signing_key,
                blobs: archive_cmd::blob_dir(&file, blobs)?,
            };
            archive_cmd::import(t.session()?, args, file, options).await
        }
        RepoCommand::Check { history } => archive_cmd::check(t.session()?, args, history).await,
        RepoCommand::Key(cmd) => {
            signing_cmd::run_key(t.session()?, args, cmd).await?;
            Ok(ExitCode::SUCCESS)
        }
        RepoCommand::Verify {
            file,
            keys,
            incremental,
        } => {
            signing_cmd::verify(Some(t.session()?), &file, &keys, incremental, args.json).await?;
            Ok(ExitCode::SUCCESS)
        }
        RepoCommand::VerifyRecord { file, uri, keys } => {
            signing_cmd::verify_record(Some(t.session()?), &file, &uri, &keys, args.json).await?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
