//! What the repository commands share: an open store, its repository,
//! error wording, and reading records and batches from input.

use std::{io::Read, path::Path, sync::Arc};

use repo::{Repos, Repository};
use rkey::Tid;
use serde_json::Value;
use store::{SlateKv, Store};

use crate::{client::Client, commands::RepoArgs, output::Result};
use crate::{output::CliError, storage::StoreArgs};

pub(crate) fn parse_rev(s: &str) -> Result<Tid> {
    Tid::parse(s).map_err(|e| {
        CliError::from(format!(
            "{s:?} is not a rev: {e} (revs are TIDs; see `datarepo log`)"
        ))
    })
}

/// Where a writing command's writes go: the store itself, or, with
/// `--server`, the server that holds it. Each writing command handles both
/// side by side, so it is written once.
pub(crate) enum Target<'a> {
    /// The store, opened by this process.
    Store(&'a Session),
    /// A running server's XRPC API.
    Server(&'a Client),
}

impl<'a> Target<'a> {
    /// The store, for a command that has no way through the server.
    pub(crate) fn session(&self) -> Result<&'a Session> {
        match self {
            Self::Store(s) => Ok(s),
            Self::Server(_) => Err(
                "this command needs the store itself, which the server holds: \
                 stop the server to run it, or leave out --server (reading commands work beside it)"
                    .to_owned()
                    .into(),
            ),
        }
    }
}

/// SlateDB's block cache for a one-pass command: enough for the blocks
/// read together, not the whole store.
pub(crate) const ONE_PASS_BLOCK_CACHE_BYTES: u64 = 16 << 20;

/// SlateDB's cache of SST indexes and filters for a one-pass command: they
/// are read again for every block, so they stay whole (a million-record
/// store's are a few MB).
pub(crate) const ONE_PASS_META_CACHE_BYTES: u64 = 64 << 20;

/// The decoded-shard cache of a one-pass command: a walk holds the path it
/// is on itself, and reads no shard twice.
pub(crate) const ONE_PASS_SHARD_CACHE_BYTES: usize = 4 << 20;

pub(crate) struct Session {
    pub(crate) kv: SlateKv,
    pub(crate) repos: Repos<SlateKv>,
    /// Where the store is, when it is on local disk.
    pub(crate) local_dir: Option<std::path::PathBuf>,
}

impl Session {
    /// Opens the store as its writer for commands that write, read-only
    /// otherwise (so that reading never fences a running server).
    pub(crate) async fn open(store: &StoreArgs, writes: bool) -> Result<Self> {
        let kv = if writes {
            store.open().await?
        } else {
            store.open_reader().await?
        };
        let repos = Repos::new(Arc::new(Store::new(kv.clone())), crate::storage::env()?);
        Ok(Self {
            kv,
            repos,
            local_dir: store.local_dir(),
        })
    }

    /// Opens the store for a command that reads or writes each block once
    /// (`export`; `check`, which reads records in CID order; `import`):
    /// read-only unless it `writes`, with caches of
    /// [`ONE_PASS_BLOCK_CACHE_BYTES`], [`ONE_PASS_META_CACHE_BYTES`] and
    /// [`ONE_PASS_SHARD_CACHE_BYTES`] rather than the defaults a server's
    /// repeated reads want, which such a command would only fill (an
    /// export of a million records kept ~180 MB of blocks and shards it
    /// never read again; an import, ~370 MB of the blocks its flushes
    /// wrote).
    pub(crate) async fn open_for_one_pass(store: &StoreArgs, writes: bool) -> Result<Self> {
        let mut options = store.options();
        options.shared_cache = Some(store::SharedCache::new(
            ONE_PASS_BLOCK_CACHE_BYTES,
            ONE_PASS_META_CACHE_BYTES,
        ));
        let kv = if writes {
            store.open_with(&options).await?
        } else {
            store.open_reader_with_options(&options).await?
        };
        let repos = Repos::new(
            Arc::new(Store::with_cache_bytes(
                kv.clone(),
                ONE_PASS_SHARD_CACHE_BYTES,
            )),
            crate::storage::env()?,
        );
        Ok(Self {
            kv,
            repos,
            local_dir: store.local_dir(),
        })
    }

    pub(crate) async fn repo(&self, args: &RepoArgs) -> Result<Arc<Repository<SlateKv>>> {
        let id = self.repo_id(args).await?;
        self.repos.open(&id).await.map_err(say)
    }

    /// A record named `COLLECTION RKEY`, `COLLECTION/RKEY` (in `--repo`'s
    /// repository) or by its AT URI ([`record_parts`]): the repository,
    /// the collection and the record key.
    pub(crate) async fn record_name(
        &self,
        args: &RepoArgs,
        collection: String,
        rkey: Option<String>,
    ) -> Result<(Arc<Repository<SlateKv>>, String, String)> {
        let RecordParts {
            did,
            collection,
            rkey,
        } = record_parts(&collection, rkey)?;
        let Some(did) = did else {
            return Ok((self.repo(args).await?, collection, rkey));
        };
        if let Some(given) = &args.repo
            && *given != did
        {
            return Err(format!("the AT URI names repository {did}, but --repo is {given}").into());
        }
        let repo = self.repos.open(&did).await.map_err(say)?;
        Ok((repo, collection, rkey))
    }

    /// `--repo`, or else the store's only repository.
    async fn repo_id(&self, args: &RepoArgs) -> Result<String> {
        if let Some(id) = &args.repo {
            return Ok(id.clone());
        }
        let all = self.repos.list().await.map_err(say)?;
        match all.as_slice() {
            [(id, _)] => Ok(id.clone()),
            [] => Err("no repository given and the store has none: pass --repo ID (or set DATAREPO_REPO) to create one".to_owned().into()),
            many => Err(format!(
                "no repository given and the store has {}: pass --repo ID or set DATAREPO_REPO (`datarepo repo list` lists them)",
                many.len()
            ).into()),
        }
    }

    /// The repository, created by the first write to it, as the server's
    /// first write creates it (`init` creates one explicitly).
    pub(crate) async fn repo_for_write(&self, args: &RepoArgs) -> Result<Arc<Repository<SlateKv>>> {
        let id = self.repo_id(args).await?;
        match self.repos.open(&id).await {
            Err(repo::Error::RepoNotFound(_)) => {
                let repo = self.repos.create(&id).await.map_err(say)?;
                if !args.json {
                    eprintln!("created repository {id}");
                }
                Ok(repo)
            }
            other => other.map_err(say),
        }
    }
}

/// A library error as the CLI says it: with the command that helps, where
/// one does (the library's messages name no commands; the server's neither).
pub(crate) fn say(e: repo::Error) -> CliError {
    let hint = match &e {
        repo::Error::RepoNotFound(_) => " (create it with `datarepo init`)",
        repo::Error::SigningKey { .. } => {
            " (nothing was written; give it a key file with `datarepo key rotate --signing-key FILE`, or `import --signing-key FILE`)"
        }
        repo::Error::Untrusted { .. } => {
            " (if the repository's key changed, give the new one with --key did:key:…, or import anyway with --trust-new-key)"
        }
        repo::Error::RevNotFound { .. } => " (see `datarepo log`)",
        repo::Error::RecordExists(_) => " (`datarepo put` replaces it)",
        _ => "",
    };
    CliError::repo(&e, hint)
}

/// A record as the commands that take `COLLECTION [RKEY]` name it.
pub(crate) struct RecordParts {
    /// The repository, when an AT URI named it.
    pub(crate) did: Option<String>,
    pub(crate) collection: String,
    pub(crate) rkey: String,
}

/// The record `COLLECTION RKEY` names, also given as one `COLLECTION/RKEY`
/// path (as `log --record` takes it; an NSID has no `/`) or as an AT URI.
pub(crate) fn record_parts(collection: &str, rkey: Option<String>) -> Result<RecordParts> {
    if let Some((did, coll, rk)) = record_uri_parts(collection, rkey.as_deref())? {
        return Ok(RecordParts {
            did: Some(did.to_owned()),
            collection: coll.to_owned(),
            rkey: rk.to_owned(),
        });
    }
    match (collection.split_once('/'), rkey) {
        (None, Some(rkey)) => Ok(RecordParts {
            did: None,
            collection: collection.to_owned(),
            rkey,
        }),
        (Some((coll, rk)), None) => Ok(RecordParts {
            did: None,
            collection: coll.to_owned(),
            rkey: rk.to_owned(),
        }),
        (Some(_), Some(_)) => Err(format!(
            "{collection:?} names the record by itself (COLLECTION/RKEY): give no record key after it"
        )
        .into()),
        (None, None) => Err(
            "give the record key after the collection (COLLECTION RKEY or COLLECTION/RKEY), or the record's AT URI"
                .into(),
        ),
    }
}

/// The repository, collection and record key an AT URI given in place of
/// `COLLECTION RKEY` names; `None` when `collection` is not an AT URI.
pub(crate) fn record_uri_parts<'a>(
    collection: &'a str,
    rkey: Option<&str>,
) -> Result<Option<(&'a str, &'a str, &'a str)>> {
    let Some(path) = collection.strip_prefix("at://") else {
        return Ok(None);
    };
    if rkey.is_some() {
        return Err("an AT URI names the record by itself: give no record key after it".into());
    }
    let mut parts = path.splitn(3, '/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(did), Some(coll), Some(rk)) => Ok(Some((did, coll, rk))),
        _ => Err(
            format!("{collection:?} is not a record's AT URI (at://DID/COLLECTION/RKEY)").into(),
        ),
    }
}

/// Standard input's JSON Lines in batches of at most `per` values, each
/// with its line number (blank lines skipped). A line that cannot be read
/// or parsed ends the batches with an error naming it.
pub(crate) struct JsonLineBatches {
    lines: std::iter::Enumerate<std::io::Lines<std::io::StdinLock<'static>>>,
    per: usize,
}

impl JsonLineBatches {
    pub(crate) fn stdin(per: usize) -> Self {
        use std::io::BufRead as _;
        Self {
            lines: std::io::stdin().lock().lines().enumerate(),
            per: per.max(1),
        }
    }
}

impl Iterator for JsonLineBatches {
    /// A batch, or (line number, why) for the line that stopped them.
    type Item = std::result::Result<Vec<(usize, Value)>, (usize, String)>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut batch = Vec::with_capacity(self.per);
        while batch.len() < self.per {
            let Some((i, line)) = self.lines.next() else {
                break;
            };
            let n = i + 1;
            let line = match line {
                Ok(line) => line,
                Err(e) => return Some(Err((n, format!("cannot read standard input: {e}")))),
            };
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str(&line) {
                Ok(value) => batch.push((n, value)),
                Err(e) => return Some(Err((n, format!("not JSON: {e}")))),
            }
        }
        (!batch.is_empty()).then_some(Ok(batch))
    }
}

/// The error that stops a batch at `line`, after `committed` writes.
pub(crate) fn batch_stopped(line: usize, committed: u64, why: &str) -> String {
    format!("line {line}: {why} ({committed} writes before it were committed)")
}

pub(crate) fn read_json(file: Option<&Path>) -> Result<Value> {
    let (text, source) = match file {
        Some(path) => (
            std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?,
            path.display().to_string(),
        ),
        None => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| format!("cannot read standard input: {e}"))?;
            (text, "standard input".to_owned())
        }
    };
    serde_json::from_str(&text)
        .map_err(|e| CliError::from(format!("{source} is not valid JSON: {e}")))
}

pub(crate) fn format_tid_time(tid: Tid) -> String {
    let micros = i64::try_from(tid.timestamp_micros()).unwrap_or(i64::MAX);
    jiff::Timestamp::from_microsecond(micros)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

/// Refuses a collection the repository has never had (a misspelling,
/// most likely): nothing could match, and an empty answer would hide it.
pub(crate) async fn known_collection(repo: &Repository<SlateKv>, collection: &str) -> Result<()> {
    let known: Vec<String> = repo
        .collections()
        .await
        .into_iter()
        .map(|(c, _)| c)
        .collect();
    if known.iter().any(|c| c == collection) {
        return Ok(());
    }
    const SHOWN: usize = 20;
    let listed = if known.is_empty() {
        "it has none".to_owned()
    } else if known.len() > SHOWN {
        format!(
            "it has: {} … and {} more (`datarepo collection list`)",
            known[..SHOWN].join(", "),
            known.len() - SHOWN
        )
    } else {
        format!("it has: {}", known.join(", "))
    };
    Err(CliError {
        name: "CollectionNotFound".to_owned(),
        message: format!(
            "the repository {} has no collection {collection}; {listed}",
            repo.id()
        ),
    })
}

/// How many records `collection` holds.
pub(crate) async fn count_records(repo: &Repository<SlateKv>, collection: &str) -> Result<u64> {
    repo.record_count(collection).await.map_err(say)
}
