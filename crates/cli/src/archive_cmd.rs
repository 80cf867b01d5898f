//! Moving a repository whole and checking it: `export`, `import` and
//! `check`.

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
};

use indicatif::ProgressStyle;
use repo::{ImportProgress, Repository};
use rkey::Tid;
use serde_json::json;
use store::{Partitions, SlateKv};

use crate::{
    commands::RepoArgs,
    output::{CliError, Result, bar, count, outln, print, progress_style},
    session::{Session, parse_rev, say},
    storage::StoreArgs,
};

/// `export`: the repository (its head, what changed since a rev, or its
/// whole history) as a CAR file.
pub(crate) async fn export(
    s: &Session,
    args: &RepoArgs,
    file: PathBuf,
    since: Option<String>,
    history: bool,
    blobs: Option<PathBuf>,
    force: bool,
) -> Result<ExitCode> {
    let json_mode = args.json;
    let e = say;
    let repo = s.repo(args).await?;
    let scope = match since.as_deref().map(parse_rev).transpose()? {
        _ if history => ExportScope::History,
        since => ExportScope::Head(since),
    };
    if file.as_os_str() != "-" && !force && file.exists() {
        return Err(format!("{} exists: pass --force to replace it", file.display()).into());
    }
    let bar = bar("{spinner} exporting: {pos} blocks written ({per_sec})");
    let progress = |n| bar.set_position(n);
    let report = if file.as_os_str() == "-" {
        let out = tokio::io::BufWriter::new(tokio::io::stdout());
        let (mut out, report) = match scope.export(&repo, out, progress).await {
            Err(repo::Error::Io(err)) if err.kind() == std::io::ErrorKind::BrokenPipe => {
                crate::output::stdout_failed(&err)
            }
            other => other.map_err(e)?,
        };
        if let Err(err) = tokio::io::AsyncWriteExt::flush(&mut out).await {
            crate::output::stdout_failed(&err);
        }
        report
    } else {
        export_file(&repo, &file, scope, progress).await?
    };
    bar.finish_and_clear();
    let copied = match &blobs {
        Some(dir) => Some(export_blobs(&repo, dir).await?),
        None => None,
    };
    let mut out = json!({"commit": report.commit.to_string(), "rev": report.rev.to_string(),
                         "blocks": report.blocks, "bytes": report.bytes});
    if let Some(copied) = &copied {
        out["blobs"] = blob_copy_json(copied);
    }
    let blobs_said = match (&copied, &blobs) {
        (Some(c), Some(dir)) => format!(
            "; {} copied to {} ({} bytes; {} there already)",
            count(c.copied, "blob"),
            dir.display(),
            c.bytes,
            c.present
        ),
        _ => String::new(),
    };
    if file.as_os_str() == "-" {
        eprintln!("exported {} blocks{blobs_said}", report.blocks);
    } else {
        print(json_mode, &out, || {
            format!(
                "exported {} blocks ({} bytes of block data) to {}; root {} (rev {}){blobs_said}",
                report.blocks,
                report.bytes,
                file.display(),
                report.commit,
                report.rev
            )
        });
    }
    Ok(ExitCode::SUCCESS)
}

/// The blob directory `--blobs [DIR]` names for backup `file`: DIR, or
/// `FILE.blobs` beside the file when `--blobs` comes alone.
pub(crate) fn blob_dir(file: &Path, given: Option<Option<PathBuf>>) -> Result<Option<PathBuf>> {
    match given {
        None => Ok(None),
        Some(Some(dir)) => Ok(Some(dir)),
        Some(None) if file.as_os_str() == "-" => Err(
            "--blobs needs a directory when the CAR goes to standard output: --blobs DIR".into(),
        ),
        Some(None) => {
            let mut dir = file.as_os_str().to_owned();
            dir.push(".blobs");
            Ok(Some(PathBuf::from(dir)))
        }
    }
}

/// `export --blobs DIR`: the repository's blobs copied into `dir`.
async fn export_blobs(repo: &Repository<SlateKv>, dir: &Path) -> Result<repo::BlobCopyReport> {
    let to = store::Blobs::in_directory(dir)
        .map_err(|e| format!("cannot use {} for blobs: {e}", dir.display()))?;
    let bar = bar("{spinner} copying blobs: {msg}");
    let report = repo
        .export_blobs(&to, |r| {
            bar.set_message(format!("{} ({} bytes)", count(r.copied, "blob"), r.bytes));
        })
        .await
        .map_err(|e| format!("copying blobs to {} failed: {}", dir.display(), say(e)))?;
    bar.finish_and_clear();
    Ok(report)
}

fn blob_copy_json(report: &repo::BlobCopyReport) -> serde_json::Value {
    json!({"copied": report.copied, "bytes": report.bytes, "present": report.present})
}

/// How `import` takes a file: the keys it may be signed with, and where
/// its blobs are.
pub(crate) struct ImportFrom {
    pub(crate) keys: Vec<String>,
    pub(crate) trust_new_key: bool,
    pub(crate) signing_key: Option<PathBuf>,
    pub(crate) blobs: Option<PathBuf>,
}

/// `import`: a CAR file as a repository.
pub(crate) async fn import(
    s: &Session,
    args: &RepoArgs,
    file: PathBuf,
    from: ImportFrom,
) -> Result<ExitCode> {
    let json_mode = args.json;
    let trust_new_key = from.trust_new_key;
    let blobs = match &from.blobs {
        Some(dir) if !dir.is_dir() => {
            return Err(format!("{} is not a directory (--blobs)", dir.display()).into());
        }
        Some(dir) => Some(
            store::Blobs::in_directory(dir)
                .map_err(|e| format!("cannot read blobs from {}: {e}", dir.display()))?,
        ),
        None => None,
    };
    let options = repo::ImportOptions {
        repo: args.repo.clone(),
        keys: crate::key_files::parse_keys(&from.keys)?,
        trust_new_key,
        signing_key: from
            .signing_key
            .as_deref()
            .map(crate::key_files::load_key_file)
            .transpose()?,
        blobs,
    };
    let f = tokio::fs::File::open(&file)
        .await
        .map_err(|err| format!("cannot open {}: {err}", file.display()))?;
    let len = f.metadata().await.map(|m| m.len()).unwrap_or(0);
    let bar = bar("importing [{bar:40}] {bytes}/{total_bytes} ({eta})");
    bar.set_length(len);
    let reader = bar.wrap_async_read(tokio::io::BufReader::with_capacity(1 << 20, f));
    let writing = progress_style("writing blocks [{bar:40}] {pos}/{len} ({eta})");
    let waiting = ProgressStyle::with_template("{spinner} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner());
    let report = s
        .repos
        .import_car_with_progress(reader, &options, |step| match step {
            ImportProgress::Checking => {
                bar.set_style(waiting.clone());
                bar.set_message("checking the commit, its tree and its records");
                bar.enable_steady_tick(std::time::Duration::from_millis(100));
            }
            ImportProgress::Writing { written, total } => {
                if bar.length() != Some(total as u64) {
                    bar.disable_steady_tick();
                    bar.reset();
                    bar.set_length(total as u64);
                    bar.set_style(writing.clone());
                }
                bar.set_position(written as u64);
            }
            ImportProgress::Committing => {
                bar.set_style(waiting.clone());
                bar.set_message("committing the repository's head and record index");
                bar.enable_steady_tick(std::time::Duration::from_millis(100));
            }
            ImportProgress::Indexing { records } => {
                bar.set_style(waiting.clone());
                bar.set_message(format!(
                    "rebuilding field indexes: {}",
                    count(records, "record")
                ));
            }
        })
        .await
        .map_err(|err| format!("{}: {} (nothing was imported)", file.display(), say(err)))?;
    bar.finish_and_clear();
    // The account that owns the repository, as the backup carries it.
    let account = match &report.account {
        None => None,
        Some(backup) => Some(
            accounts::Accounts::new(std::sync::Arc::clone(s.repos.store()))
                .restore(&report.repo, &backup.record, &backup.app_passwords)
                .await
                .map_err(|e| {
                    format!(
                        "{}: imported {}, but not its account: {e}; import the file again once that is fixed (the records are in)",
                        file.display(),
                        report.repo
                    )
                })?,
        ),
    };
    if report.signed && report.verified == 0 && !trust_new_key && !json_mode {
        eprintln!(
            "note: the file's commits are signed, but this store knew no key for {} and none \
             was given (--key), so they were not verified; `datarepo verify FILE --key DID_KEY` \
             checks them",
            report.repo
        );
    }
    if report.signing_key_missing && !json_mode {
        eprintln!(
            "note: {} is signed, and this store has no private key for its next commit: writes \
             are refused until `datarepo key rotate --signing-key FILE` gives one",
            report.repo
        );
    }
    if !report.blobs_missing.is_empty() && !json_mode {
        eprintln!(
            "note: {} the records refer to {} not in this store{}: the records are in; `datarepo \
             import FILE --blobs DIR` again with the backup's blob directory brings {}",
            count(report.blobs_missing.len() as u64, "blob"),
            if report.blobs_missing.len() == 1 {
                "is"
            } else {
                "are"
            },
            if from.blobs.is_some() {
                " nor in --blobs"
            } else {
                ""
            },
            if report.blobs_missing.len() == 1 {
                "it"
            } else {
                "them"
            },
        );
    }
    let missing: Vec<String> = report
        .blobs_missing
        .iter()
        .map(ToString::to_string)
        .collect();
    print(
        json_mode,
        &json!({"repo": report.repo, "commit": {"cid": report.commit.to_string(), "rev": report.rev.to_string()},
                "records": report.records, "blocks": report.blocks, "unreachable": report.unreachable,
                "commits": report.commits, "declarations": report.declarations,
                "verified": report.verified, "signed": report.signed,
                "signingKeyMissing": report.signing_key_missing,
                "account": account.map(accounts::restore::Restored::as_str),
                "blobs": blob_copy_json(&report.blobs), "blobsMissing": missing}),
        || {
            format!(
                "imported {}: {}, {}, {}{}{}; head {} (rev {})",
                report.repo,
                count(report.records, "record"),
                count(report.blocks, "block"),
                count(report.commits, "commit"),
                if report.declarations {
                    ", declarations"
                } else {
                    ""
                },
                match account {
                    Some(accounts::restore::Restored::Created) => ", its account",
                    Some(accounts::restore::Restored::Updated) => ", its account (updated)",
                    _ => "",
                },
                report.commit,
                report.rev
            )
        },
    );
    Ok(ExitCode::SUCCESS)
}

/// `datarepo check`: the repository given, or every one.
pub(crate) async fn check(s: &Session, args: &RepoArgs, history: bool) -> Result<ExitCode> {
    let checked = check_repos(s, args, history, None).await?;
    if checked.reports.is_empty() && !args.json {
        outln!("no repositories in this store: nothing to check");
    }
    Ok(checked.finish(args.json))
}

/// `datarepo check` without `--repo` on a partitioned store: every
/// repository of every partition, one report (each repository's entry
/// names its partition).
pub(crate) async fn check_partitions(
    store: &StoreArgs,
    partitions: Partitions,
    args: &RepoArgs,
    history: bool,
) -> Result<ExitCode> {
    let mut all = Checked::default();
    for p in partitions.all() {
        let session = Session::open(&store.partition(p), false).await?;
        let checked = check_repos(&session, args, history, Some(p)).await;
        let closed = session.kv.close().await;
        let checked = checked?;
        closed.map_err(|e| format!("closing partition {p}: {e}"))?;
        all.intact &= checked.intact;
        all.reports.extend(checked.reports);
    }
    if all.reports.is_empty() && !args.json {
        outln!(
            "no repositories in any of the store's {} partitions: nothing to check",
            partitions.count()
        );
    }
    Ok(all.finish(args.json))
}

/// What `check` found in the repositories it read.
struct Checked {
    intact: bool,
    reports: Vec<serde_json::Value>,
}

impl Default for Checked {
    fn default() -> Self {
        Self {
            intact: true,
            reports: Vec::new(),
        }
    }
}

impl Checked {
    /// Prints the JSON report (people saw each repository's line as it was
    /// checked) and gives the exit code: 1 when something is damaged.
    fn finish(self, json_mode: bool) -> ExitCode {
        if json_mode {
            outln!("{}", json!({"intact": self.intact, "repos": self.reports}));
        }
        if self.intact {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        }
    }
}

/// Checks the repository `--repo` names, or every repository of the
/// session's store; `partition` is recorded in each report when given.
async fn check_repos(
    s: &Session,
    args: &RepoArgs,
    history: bool,
    partition: Option<u32>,
) -> Result<Checked> {
    let ids = match &args.repo {
        Some(id) => vec![id.clone()],
        None => {
            let all = s.repos.list().await.map_err(|e| e.to_string())?;
            all.into_iter().map(|(id, _)| id).collect()
        }
    };
    let mut checked = Checked::default();
    for id in ids {
        let bar = bar("{spinner} {msg}");
        bar.enable_steady_tick(std::time::Duration::from_millis(100));
        bar.set_message(format!("{id}: reading the commit log and the tree"));
        let checking = progress_style("{msg} [{bar:40}] {pos}/{len} ({eta})");
        let options = repo::CheckOptions { history };
        // Each phase counts against its own total, set with every step:
        // a bar never shows more done than there is.
        let mut phase = "";
        let mut counted = |name: &'static str, message: String, done: u64, total: u64| {
            if phase != name {
                phase = name;
                bar.disable_steady_tick();
                bar.set_style(checking.clone());
                bar.set_message(message);
            }
            bar.set_length(total);
            bar.set_position(done.min(total));
        };
        let report = s
            .repos
            .check_with(&id, options, |step| match step {
                repo::CheckProgress::Tree { records } => {
                    bar.set_message(format!(
                        "{id}: reading the tree: {}",
                        count(records, "record")
                    ));
                }
                repo::CheckProgress::Index { done, total } => {
                    counted("records", format!("{id}: checking records"), done, total);
                }
                repo::CheckProgress::History { done, total } => {
                    counted(
                        "history",
                        format!("{id}: checking older commits"),
                        done,
                        total,
                    );
                }
            })
            .await
            .map_err(|e| format!("checking {id}: {e}"))?;
        bar.finish_and_clear();
        checked.intact &= report.is_intact();
        if !args.json {
            outln!("{}", describe_check(&id, &report));
        }
        let mut entry = json!({
            "repo": id, "commit": report.commit.to_string(), "records": report.records,
            "shards": report.shards, "commits": report.commits, "signedCommits": report.signed,
            "intact": report.is_intact(),
            "problemCount": report.problem_count, "problems": report.problems,
            "headMoved": report.head_moved,
            "olderShards": report.older_shards, "olderRecords": report.older_records,
            "invalidRecords": report.invalid_records, "warnings": report.warnings,
            "blobs": report.blobs,
        });
        if let Some(p) = partition {
            entry["partition"] = json!(p);
        }
        checked.reports.push(entry);
    }
    Ok(checked)
}

/// A check's result for a person.
fn describe_check(id: &str, report: &repo::CheckReport) -> String {
    let signed = match report.signed {
        0 => String::new(),
        n if n == report.commits => " (all signed)".to_owned(),
        n => format!(" ({n} signed)"),
    };
    let blobs = if report.blobs > 0 {
        format!(", {}", count(report.blobs, "blob"))
    } else {
        String::new()
    };
    let mut counts = format!(
        "{}, {}, {}{signed}{blobs}; head {}",
        count(report.records, "record"),
        count(report.shards, "shard"),
        count(report.commits, "commit"),
        report.commit
    );
    if report.older_shards > 0 || report.older_records > 0 {
        counts += &format!(
            "; older commits: {} more, {} more",
            count(report.older_shards, "shard"),
            count(report.older_records, "record")
        );
    }
    let warnings = || {
        let mut lines: Vec<String> = report
            .warnings
            .iter()
            .map(|w| format!("  warning: {w}"))
            .collect();
        if report.invalid_records > 0 {
            lines.push(format!(
                "  warning: {} record(s) do not validate against their collection's Lexicon",
                report.invalid_records
            ));
        }
        lines
    };
    if report.is_intact() {
        let mut lines = vec![format!("{id}: intact ({counts})")];
        lines.extend(warnings());
        return lines.join("\n");
    }
    let mut lines = vec![format!(
        "{id}: {} problem(s) ({counts})",
        report.problem_count
    )];
    lines.extend(warnings());
    lines.extend(report.problems.iter().map(|p| format!("  {p}")));
    let unlisted = report.problem_count - report.problems.len() as u64;
    if unlisted > 0 {
        lines.push(format!("  ... and {unlisted} more"));
    }
    if report.head_moved {
        lines.push(
            "  the repository changed while it was checked (a server is writing): differences \
             between the tree and the record index may be that write; run the check again when \
             writes pause"
                .to_owned(),
        );
    }
    lines.join("\n")
}

/// What an export writes.
#[derive(Clone, Copy)]
enum ExportScope {
    /// The head (and, with a rev, only what changed since).
    Head(Option<Tid>),
    /// Every retained commit and the declarations.
    History,
}

impl ExportScope {
    async fn export<W: tokio::io::AsyncWrite + Unpin + Send>(
        self,
        repo: &Repository<SlateKv>,
        out: W,
        progress: impl FnMut(u64) + Send,
    ) -> std::result::Result<(W, repo::ExportReport), repo::Error> {
        match self {
            Self::Head(None) => repo.export_car(out, None, progress).await,
            Self::Head(Some(since)) => repo.export_increment_car(out, since, progress).await,
            Self::History => repo.export_history_car(out, progress).await,
        }
    }
}

async fn export_file(
    repo: &Repository<SlateKv>,
    file: &Path,
    scope: ExportScope,
    progress: impl FnMut(u64) + Send,
) -> Result<repo::ExportReport> {
    let tmp = file.with_extension("car.partial");
    let f = tokio::fs::File::create(&tmp)
        .await
        .map_err(|err| format!("cannot write {}: {err}", tmp.display()))?;
    let out = tokio::io::BufWriter::with_capacity(1 << 20, f);
    let written = async {
        let (mut out, report) = scope
            .export(repo, out, progress)
            .await
            .map_err(|e| e.to_string())?;
        tokio::io::AsyncWriteExt::flush(&mut out)
            .await
            .map_err(|e| e.to_string())?;
        out.into_inner()
            .sync_all()
            .await
            .map_err(|e| e.to_string())?;
        tokio::fs::rename(&tmp, file)
            .await
            .map_err(|e| e.to_string())?;
        Ok::<_, String>(report)
    }
    .await;
    if written.is_err() {
        let _ = tokio::fs::remove_file(&tmp).await;
    }
    written.map_err(|err| CliError::from(format!("export to {} failed: {err}", file.display())))
}
