//! Signing keys and verification: `key generate|show|rotate`, `verify`,
//! `verify-record` (see `docs/repo.md`, "Signed commits").

use std::path::Path;

use repo::{Curve, PublicKey, SigningKey, VerifyOptions};
use serde_json::{Value, json};

use crate::commands::{CurveArg, KeyCommand};
use crate::key_files::{load_key_file, os_random, parse_keys};
use crate::output::count;
use crate::{
    commands::RepoArgs, output::Result, output::print, session::Session, session::record_uri_parts,
    session::say,
};

pub(crate) fn generate(curve: CurveArg, out: &Path, json_mode: bool) -> Result<()> {
    let key = SigningKey::generate(curve.into(), os_random);
    key.write_new_file(out).map_err(|e| match e {
        repo::KeyError::Io { source, .. } if source.kind() == std::io::ErrorKind::AlreadyExists => {
            format!(
                "{} exists; a key file is never overwritten (choose another --out)",
                out.display()
            )
        }
        e => e.to_string(),
    })?;
    let did = key.public_key().did_key();
    print(
        json_mode,
        &json!({"didKey": did, "type": Curve::from(curve).name(), "file": out.display().to_string()}),
        || did.clone(),
    );
    Ok(())
}

fn keys_json(keys: &repo::SigningKeys) -> Value {
    json!({
        "signingKey": keys.current.as_ref().map(|c| c.key.did_key()),
        "keyFile": keys.current.as_ref().map(|c| c.file.display().to_string()),
        "knownKeys": keys.known.iter().map(PublicKey::did_key).collect::<Vec<_>>(),
    })
}

pub(crate) async fn run_key(s: &Session, args: &RepoArgs, cmd: KeyCommand) -> Result<()> {
    if let KeyCommand::Generate { curve, out } = cmd {
        return generate(curve, &out, args.json);
    }
    let repo = s.repo(args).await?;
    match cmd {
        KeyCommand::Generate { .. } => {}
        KeyCommand::Show => {
            let keys = repo.signing_keys().await.map_err(say)?;
            let mut value = keys_json(&keys);
            value["repo"] = json!(repo.id());
            print(args.json, &value, || match &keys.current {
                Some(current) => current.key.did_key(),
                None if keys.known.is_empty() => {
                    format!("{} has no signing key: its commits are unsigned", repo.id())
                }
                None => format!(
                    "{} has no key file in this store; its history was signed by {}",
                    repo.id(),
                    keys.known
                        .iter()
                        .map(PublicKey::did_key)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
        KeyCommand::Rotate { signing_key } => {
            let (key, file) = load_key_file(&signing_key)?;
            let keys = repo.set_signing_key(key, file).await.map_err(say)?;
            let mut value = keys_json(&keys);
            value["repo"] = json!(repo.id());
            print(args.json, &value, || {
                format!(
                    "{}: the next commits are signed by {}",
                    repo.id(),
                    keys.current
                        .as_ref()
                        .map(|c| c.key.did_key())
                        .unwrap_or_default()
                )
            });
        }
    }
    Ok(())
}

async fn stored_keys(s: Option<&Session>, repo: &str) -> Result<Vec<PublicKey>> {
    // Without a store, or one that knows no key for the repository, there
    // is none: a signed file then fails for want of one (the message says
    // to give --key), an unsigned one is checked but for signatures.
    let Some(s) = s else {
        return Ok(Vec::new());
    };
    match s.repos.open(repo).await {
        Ok(r) => Ok(r.signing_keys().await.map_err(say)?.known),
        Err(repo::Error::RepoNotFound(_)) => Ok(Vec::new()),
        Err(e) => Err(say(e)),
    }
}

/// The repository a CAR file's root commit names, read from its first
/// blocks only when keys must come from the store.
async fn car_repo(file: &Path) -> Result<String> {
    let f = open(file).await?;
    let mut reader = iroh_car::CarReader::new(tokio::io::BufReader::new(f))
        .await
        .map_err(|e| format!("{}: not a CAR v1 file: {e}", file.display()))?;
    let root = *reader
        .header()
        .roots()
        .first()
        .ok_or_else(|| format!("{}: the file names no root", file.display()))?;
    while let Some((cid, bytes)) = reader
        .next_block()
        .await
        .map_err(|e| format!("{}: {e}", file.display()))?
    {
        if cid == root {
            return repo::CommitData::decode(cid, &bytes)
                .map(|c| c.repo)
                .map_err(|e| crate::output::CliError::from(format!("{}: {e}", file.display())));
        }
    }
    Err(format!(
        "{}: the root commit {root} is not in the file",
        file.display()
    )
    .into())
}

async fn open(file: &Path) -> Result<tokio::fs::File> {
    tokio::fs::File::open(file)
        .await
        .map_err(|e| crate::output::CliError::from(format!("cannot open {}: {e}", file.display())))
}

pub(crate) async fn verify(
    s: Option<&Session>,
    file: &Path,
    keys: &[String],
    incremental: bool,
    json_mode: bool,
) -> Result<()> {
    let mut keys = parse_keys(keys)?;
    if keys.is_empty() {
        keys = stored_keys(s, &car_repo(file).await?).await?;
    }
    let input = tokio::io::BufReader::with_capacity(1 << 20, open(file).await?);
    // No key to check against: an unsigned repository's export passes with
    // everything else checked, and says so.
    let unsigned_ok = keys.is_empty();
    let options = VerifyOptions {
        keys,
        incremental,
        unsigned_ok,
    };
    let report = repo::verify_car(input, &options)
        .await
        .map_err(|e| format!("{}: {e}", file.display()))?;
    let commits: Vec<Value> = report
        .commits
        .iter()
        .map(|c| {
            json!({"cid": c.cid.to_string(), "rev": c.rev.to_string(),
                        "key": c.key.as_ref().map(PublicKey::did_key)})
        })
        .collect();
    let signed = report.commits.iter().all(|c| c.key.is_some());
    let value = json!({
        "repo": report.repo, "signed": signed, "commits": commits, "blocks": report.blocks,
        "shards": report.shards, "records": report.records,
        "historyRecords": report.history_records, "absent": report.absent,
    });
    print(json_mode, &value, || {
        let head = &report.commits[0];
        let mut signers: Vec<String> = report
            .commits
            .iter()
            .filter_map(|c| c.key.as_ref().map(PublicKey::did_key))
            .collect();
        signers.dedup();
        let signed_by = if signed {
            format!("signed by {}", signers.join(", "))
        } else {
            "UNSIGNED (no commit in the file carries a signature, so none was checked; \
             everything else was)"
                .to_owned()
        };
        let mut text = format!(
            "verified {}: {} (head rev {}) {signed_by}; {} hashed; {}, {}",
            report.repo,
            count(report.commits.len() as u64, "commit"),
            head.rev,
            count(report.blocks, "block"),
            count(report.shards, "shard"),
            count(report.records, "record"),
        );
        if report.history_records > 0 {
            text += &format!(" (+{} in older commits)", report.history_records);
        }
        if report.absent > 0 {
            text += &format!(
                "; {} blocks the trees name are in earlier exports",
                report.absent
            );
        }
        text
    });
    Ok(())
}

pub(crate) async fn verify_record(
    s: Option<&Session>,
    file: &Path,
    uri: &str,
    keys: &[String],
    json_mode: bool,
) -> Result<()> {
    let Some((did, collection, rkey)) = record_uri_parts(uri, None)? else {
        return Err(
            format!("--uri {uri:?} is not a record's AT URI (at://DID/COLLECTION/RKEY)").into(),
        );
    };
    let mut keys = parse_keys(keys)?;
    if keys.is_empty() {
        keys = stored_keys(s, did).await?;
    }
    let input = tokio::io::BufReader::new(open(file).await?);
    let proof = repo::verify_record(input, did, collection, rkey, &keys)
        .await
        .map_err(|e| format!("{}: {e}", file.display()))?;
    let value = proof.record.as_ref().map(repo::Record::to_json);
    print(
        json_mode,
        &json!({
            "uri": uri, "cid": proof.cid.map(|c| c.to_string()), "value": value,
            "commit": {"cid": proof.commit.cid.to_string(), "rev": proof.commit.rev.to_string()},
            "key": proof.commit.key.as_ref().map(PublicKey::did_key),
        }),
        || {
            // A record proof is always signed (verify_record checks it).
            let key = proof
                .commit
                .key
                .as_ref()
                .map_or_else(String::new, PublicKey::did_key);
            match proof.cid {
                Some(cid) => format!(
                    "verified {uri}: record {cid} in commit {} (rev {}) signed by {key}",
                    proof.commit.cid, proof.commit.rev
                ),
                None => format!(
                    "verified: {uri} does not exist at commit {} (rev {}) signed by {key}",
                    proof.commit.cid, proof.commit.rev
                ),
            }
        },
    );
    Ok(())
}
