//! `datarepo lexicon …`: a repository's Lexicons, and validating records
//! against them.

use std::{
    io::{BufRead as _, Read as _, Write as _},
    path::{Path, PathBuf},
    process::ExitCode,
};

use repo::{LexiconDocument, Lexicons};
use serde_json::{Value, json};

use crate::{
    client::server_repo,
    commands::LexiconCommand,
    commands::RepoArgs,
    output::Result,
    output::print,
    output::{Stdout, outln},
    session::Session,
    session::Target,
    session::read_json,
    session::say,
};

/// Runs a `lexicon` subcommand.
pub(crate) async fn run(t: Target<'_>, args: &RepoArgs, cmd: LexiconCommand) -> Result<ExitCode> {
    let client = match t {
        Target::Store(s) => return run_on_store(s, args, cmd).await,
        Target::Server(client) => client,
    };
    let json_mode = args.json;
    match cmd {
        LexiconCommand::Add { files } => {
            let docs = files
                .iter()
                .map(|f| read_json(Some(f)))
                .collect::<Result<Vec<Value>>>()?;
            let out = client
                .post(
                    "dev.datarepo.putLexicons",
                    &json!({"repo": server_repo(args)?, "lexicons": docs}),
                )
                .await?;
            let human = describe_added(&out);
            print(json_mode, &out, || human);
        }
        LexiconCommand::Rm { nsid } => {
            let out = client
                .post(
                    "dev.datarepo.deleteLexicon",
                    &json!({"repo": server_repo(args)?, "nsid": nsid}),
                )
                .await?;
            print(json_mode, &out, || format!("removed Lexicon {nsid}"));
        }
        _ => {
            t.session()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A `lexicon` subcommand on the store itself.
async fn run_on_store(s: &Session, args: &RepoArgs, cmd: LexiconCommand) -> Result<ExitCode> {
    let json_mode = args.json;
    match cmd {
        LexiconCommand::Add { files } => {
            let mut docs = Vec::with_capacity(files.len());
            for file in &files {
                docs.push(read_json(Some(file))?);
            }
            let repo = s.repo(args).await?;
            // On a terminal: how far the check of existing records is.
            let bar = indicatif::ProgressBar::new_spinner();
            bar.set_style(crate::output::progress_style(
                "{spinner} {msg}: {pos} existing records checked ({per_sec})",
            ));
            let added = repo
                .add_lexicons_with(docs, |collection, checked| {
                    if bar.message() != collection {
                        bar.set_message(collection.to_owned());
                    }
                    bar.set_position(checked);
                })
                .await
                .map_err(say)?;
            bar.finish_and_clear();
            let report = repo.lexicons_added_report(&added).await;
            print(json_mode, &report, || describe_added(&report));
        }
        LexiconCommand::List => {
            let lexicons = s.repo(args).await?.lexicons();
            let list: Vec<Value> = lexicons
                .documents()
                .map(
                    |d| json!({"nsid": d.id(), "type": d.main_type(), "collection": d.is_record()}),
                )
                .collect();
            print(json_mode, &json!({"lexicons": list}), || {
                if lexicons.is_empty() {
                    return "no Lexicons (add one with `datarepo lexicon add FILE`)".to_owned();
                }
                lexicons
                    .documents()
                    .map(|d| match d.main_type() {
                        Some("record") => format!("{}  record (declares the collection)", d.id()),
                        Some(t) => format!("{}  {t}", d.id()),
                        None => format!("{}  definitions", d.id()),
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            });
        }
        LexiconCommand::Show { nsid } => {
            let lexicons = s.repo(args).await?.lexicons();
            let doc = lexicons.get(&nsid).ok_or_else(|| {
                format!("no Lexicon {nsid} in this repository (see `datarepo lexicon list`)")
            })?;
            let text = serde_json::to_string_pretty(doc.json()).unwrap_or_default();
            if json_mode {
                outln!("{}", doc.json());
            } else {
                outln!("{text}");
            }
        }
        LexiconCommand::Rm { nsid } => {
            let repo = s.repo(args).await?;
            repo.remove_lexicon(&nsid).await.map_err(say)?;
            print(json_mode, &json!({"removed": nsid}), || {
                format!("removed Lexicon {nsid}")
            });
        }
        LexiconCommand::Validate {
            lexicons,
            json_lines,
        } => {
            let lexicons = if lexicons.is_empty() {
                (*s.repo(args).await?.lexicons()).clone()
            } else {
                load_files(&lexicons)?
            };
            return validate(&lexicons, json_lines);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `lexicon add`'s report ([`repo::Repository::lexicons_added_report`],
/// also what `dev.datarepo.putLexicons` answers) for a person.
pub(crate) fn describe_added(report: &Value) -> String {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let mut lines = Vec::new();
    for a in report["lexicons"].as_array().into_iter().flatten() {
        let nsid = text(&a["nsid"]);
        let verb = if a["replaced"] == json!(true) {
            "replaced"
        } else {
            "added"
        };
        if a.get("collection").is_none() {
            lines.push(format!(
                "{nsid}: {verb} ({})",
                a["type"]
                    .as_str()
                    .map_or("definitions".to_owned(), |t| format!("main is a {t}"))
            ));
            continue;
        }
        lines.push(format!(
            "{nsid}: {verb}; record keys are {}",
            text(&a["key"])
        ));
        let (checked, invalid) = (
            a["checked"].as_u64().unwrap_or(0),
            a["invalid"].as_u64().unwrap_or(0),
        );
        if checked > 0 {
            lines.push(match invalid {
                0 => format!("  all {checked} existing records validate"),
                n => format!(
                    "  {n} of {checked} existing records do not validate (they stay; `datarepo check` lists them):"
                ),
            });
            for f in a["failures"].as_array().into_iter().flatten() {
                lines.push(format!(
                    "    {nsid}/{}: {}",
                    text(&f["rkey"]),
                    text(&f["error"])
                ));
            }
        }
    }
    for uri in report["missingRefs"].as_array().into_iter().flatten() {
        lines.push(format!(
            "note: {} is referred to but no Lexicon defines it: records that reach it fail validation until it is added",
            text(uri)
        ));
    }
    lines.join("\n")
}

/// Lexicon documents from files and directories (searched recursively
/// for `*.json`).
pub(crate) fn load_files(paths: &[PathBuf]) -> Result<Lexicons> {
    let mut files = Vec::new();
    for p in paths {
        collect_json_files(p, &mut files)?;
    }
    let mut out = Lexicons::new();
    for file in files {
        let doc = LexiconDocument::parse(read_json(Some(&file))?)
            .map_err(|e| format!("{}: {e}", file.display()))?;
        let id = doc.id().to_owned();
        if out.insert(doc).is_some() {
            return Err(
                format!("{}: a second Lexicon {id} (each NSID once)", file.display()).into(),
            );
        }
    }
    Ok(out)
}

fn collect_json_files(path: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let meta =
        std::fs::metadata(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if !meta.is_dir() {
        out.push(path.to_owned());
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for entry in entries {
        if entry.is_dir() {
            collect_json_files(&entry, out)?;
        } else if entry.extension().is_some_and(|x| x == "json") {
            out.push(entry);
        }
    }
    Ok(())
}

/// Validates standard input's records: exit 0 when every input could be
/// read (with one JSON record, 1 when it is invalid), 2 when one could not.
pub(crate) fn validate(lexicons: &Lexicons, json_lines: bool) -> Result<ExitCode> {
    if !json_lines {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| format!("cannot read standard input: {e}"))?;
        let record: Value = serde_json::from_str(&text)
            .map_err(|e| format!("standard input is not valid JSON: {e}"))?;
        let collection = record
            .get("$type")
            .and_then(Value::as_str)
            .ok_or("the record has no \"$type\" naming its collection (or use --json-lines with {\"collection\", \"record\"})")?;
        let verdict = lexicons.validate_write(collection, &record);
        let out = match &verdict {
            Ok(()) => json!({"valid": true}),
            Err(e) => json!({"valid": false, "error": e.0}),
        };
        outln!("{out}");
        return Ok(if verdict.is_ok() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }
    let mut out = Stdout::buffered();
    let mut unreadable = 0u64;
    let stdin = std::io::stdin().lock();
    for (n, line) in stdin.lines().enumerate() {
        let line = line.map_err(|e| format!("cannot read standard input: {e}"))?;
        if line.trim().is_empty() {
            continue;
        }
        let answer = match parse_line(&line) {
            Ok((collection, record)) => match lexicons.validate_write(&collection, &record) {
                Ok(()) => json!({"valid": true}),
                Err(e) => json!({"valid": false, "error": e.0}),
            },
            Err(why) => {
                unreadable += 1;
                json!({"valid": false, "error": format!("line {}: {why}", n + 1)})
            }
        };
        let _ = writeln!(out, "{answer}");
    }
    let _ = out.flush();
    if unreadable > 0 {
        eprintln!(
            "datarepo: {unreadable} input line(s) were neither {{\"collection\": NSID, \"record\": {{…}}}} nor a record with a \"$type\""
        );
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::SUCCESS)
}

/// A line's (collection, record): `{"collection", "record"}`, or, as with
/// one record on standard input, a record whose `$type` names its
/// collection.
fn parse_line(line: &str) -> std::result::Result<(String, Value), String> {
    let mut v: Value = serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    let wrapped = v.get("collection").is_some_and(Value::is_string) && v.get("record").is_some();
    if !wrapped && let Some(collection) = v.get("$type").and_then(Value::as_str) {
        return Ok((collection.to_owned(), v));
    }
    let collection = v
        .get("collection")
        .and_then(Value::as_str)
        .ok_or("neither {\"collection\", \"record\"} nor a record with a \"$type\"")?
        .to_owned();
    let record = v
        .get_mut("record")
        .map(Value::take)
        .ok_or("no \"record\"")?;
    Ok((collection, record))
}
