//! `datarepo pail …`: drive a Pail from JSON lines (`apply`) or keep one
//! in a CAR file (`put`, `get`, `del`, `ls`, `tree`, `diff`, `merge`),
//! like the reference's CLI.

use crate::output::{out, outln};
use std::{
    io::{self, BufRead, Write},
    ops::ControlFlow,
    path::{Path, PathBuf},
    process::ExitCode,
    sync::Arc,
};

use cid::Cid;
use clap::{Args, Subcommand};
use pail::{Batch, EntriesOptions, LiveBlocks, MemoryBlocks, Shard, ShardConfig, ShardFetcher};
use serde::Deserialize;
use serde_json::json;

#[derive(Debug, Subcommand)]
pub(crate) enum PailCommand {
    /// Start from an empty tree and apply JSON Lines operations from stdin,
    /// printing one JSON line per operation.
    ///
    /// {"op":"put","key":K,"value":CID}, {"op":"del","key":K} and
    /// {"op":"batch","puts":[[K,CID],...],"dels":[K,...]} print {"root":CID},
    /// or {"root":CID,"error":"..."} when the operation failed (root
    /// unchanged). {"op":"entries", "prefix"|"gt"|"gte"|"lt"|"lte": K,
    /// "reverse": bool, "limit": N} (all optional) prints
    /// {"entries":[[K,CID],...]}.
    Apply(#[command(flatten)] TreeConfig),
    /// Put a value (a CID) under a key in the CAR file's tree (created if missing).
    Put {
        #[command(flatten)]
        car: CarPath,
        #[command(flatten)]
        config: TreeConfig,
        /// The key.
        key: String,
        /// The value, a CID.
        value: String,
    },
    /// Print the value stored under a key (exit 1 when absent).
    Get {
        #[command(flatten)]
        car: CarPath,
        /// The key.
        key: String,
    },
    /// Delete a key (a no-op when absent).
    Del {
        #[command(flatten)]
        car: CarPath,
        /// The key.
        key: String,
    },
    /// List entries, in key order.
    Ls {
        #[command(flatten)]
        car: CarPath,
        /// Only keys with this prefix.
        #[arg(short, long)]
        prefix: Option<String>,
        /// One JSON object per line: {"key": K, "value": CID}.
        #[arg(long)]
        json: bool,
    },
    /// Draw the shard structure (with --json, as nested objects).
    Tree {
        #[command(flatten)]
        car: CarPath,
    },
    /// Compare this tree with another CAR file's tree.
    Diff {
        #[command(flatten)]
        car: CarPath,
        /// The other CAR file.
        other: PathBuf,
        /// Show key changes instead of shard changes.
        #[arg(short, long)]
        keys: bool,
    },
    /// Merge the changes each target made relative to this tree into it.
    Merge {
        #[command(flatten)]
        car: CarPath,
        /// CAR files whose trees descend from this one.
        targets: Vec<PathBuf>,
    },
}

#[derive(Debug, Args)]
pub(crate) struct CarPath {
    /// The CAR file holding the tree: a Pail CAR, or a repository export
    /// (whose root commit leads to its tree).
    #[arg(long, default_value = "pail.car")]
    path: PathBuf,
}

#[derive(Debug, Args)]
pub(crate) struct TreeConfig {
    /// Largest encoded shard in bytes (for a new tree).
    #[arg(long, default_value_t = pail::DEFAULT_MAX_SIZE, value_parser = clap::value_parser!(u64).range(1..))]
    max_size: u64,
    /// Longest key piece in characters (for a new tree).
    #[arg(long, default_value_t = pail::DEFAULT_MAX_KEY_LENGTH, value_parser = clap::value_parser!(u64).range(1..))]
    max_key_length: u64,
}

impl TreeConfig {
    fn config(&self) -> ShardConfig {
        ShardConfig {
            max_size: self.max_size,
            max_key_length: self.max_key_length,
        }
    }
}

type Result<T> = std::result::Result<T, String>;

pub(crate) fn run(cmd: PailCommand, json_mode: bool) -> io::Result<ExitCode> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let outcome = rt.block_on(async {
        match cmd {
            PailCommand::Apply(config) => apply(config.config()).await,
            PailCommand::Put {
                car,
                config,
                key,
                value,
            } => {
                check_key(&key)?;
                let value = parse_cid(&value)?;
                let (blocks, root) = open_or_create(&car.path, config.config()).await?;
                let m = pail::put(&blocks, root, &key, value).await;
                finish(&car.path, &blocks, root, m).await
            }
            PailCommand::Get { car, key } => {
                let (blocks, root) = open(&car.path).await?;
                match pail::get(&blocks, root, &key)
                    .await
                    .map_err(|e| e.to_string())?
                {
                    Some(v) if json_mode => {
                        outln!("{}", json!({"key": key, "value": v.to_string()}));
                        Ok(ExitCode::SUCCESS)
                    }
                    Some(v) => {
                        outln!("{v}");
                        Ok(ExitCode::SUCCESS)
                    }
                    None if json_mode => {
                        eprintln!("{}", json!({"error": format!("no value for {key:?}")}));
                        Ok(ExitCode::from(1))
                    }
                    None => {
                        eprintln!("datarepo: no value for {key:?}");
                        Ok(ExitCode::from(1))
                    }
                }
            }
            PailCommand::Del { car, key } => {
                let (blocks, root) = open(&car.path).await?;
                let m = pail::del(&blocks, root, &key).await;
                finish(&car.path, &blocks, root, m).await
            }
            PailCommand::Ls { car, prefix, json } => {
                let json = json || json_mode;
                let (blocks, root) = open(&car.path).await?;
                let options = EntriesOptions {
                    prefix,
                    ..EntriesOptions::default()
                };
                let mut out = crate::output::Stdout::buffered();
                let mut n = 0usize;
                let mut failed = None;
                pail::for_each_entry(&blocks, root, &options, |k, v| {
                    let line = if json {
                        writeln!(out, "{}", json!({"key": k, "value": v.to_string()}))
                    } else {
                        writeln!(out, "{k}\t{v}")
                    };
                    n += 1;
                    match line {
                        Ok(()) => ControlFlow::Continue(()),
                        Err(e) => {
                            failed = Some(e);
                            ControlFlow::Break(())
                        }
                    }
                })
                .await
                .map_err(|e| e.to_string())?;
                if let Some(e) = failed {
                    return Err(e.to_string());
                }
                if !json {
                    writeln!(out, "total {n}").map_err(|e| e.to_string())?;
                }
                out.flush().map_err(|e| e.to_string())?;
                Ok(ExitCode::SUCCESS)
            }
            PailCommand::Tree { car } if json_mode => {
                let (blocks, root) = open(&car.path).await?;
                outln!("{}", tree_json(&blocks, root).await?);
                Ok(ExitCode::SUCCESS)
            }
            PailCommand::Tree { car } => {
                let (blocks, root) = open(&car.path).await?;
                let mut out = String::new();
                draw(&blocks, root, "", &mut out).await?;
                out!("{out}");
                Ok(ExitCode::SUCCESS)
            }
            PailCommand::Diff { car, other, keys } => {
                let (blocks, a) = open(&car.path).await?;
                let b = load_into(&other, &blocks).await?;
                let d = pail::diff(&blocks, a, b).await.map_err(|e| e.to_string())?;
                if json_mode {
                    let cids = |v: &[Cid]| v.iter().map(ToString::to_string).collect::<Vec<_>>();
                    let out = if keys {
                        let changes: Vec<_> = d
                            .keys
                            .iter()
                            .map(|c| {
                                json!({"key": c.key, "old": c.old.map(|v| v.to_string()),
                                       "new": c.new.map(|v| v.to_string())})
                            })
                            .collect();
                        json!({"old": a.to_string(), "new": b.to_string(), "keys": changes})
                    } else {
                        json!({"old": a.to_string(), "new": b.to_string(),
                               "additions": cids(&d.additions), "removals": cids(&d.removals)})
                    };
                    outln!("{out}");
                    return Ok(ExitCode::SUCCESS);
                }
                outln!("--- {a}\n+++ {b}");
                if keys {
                    for c in &d.keys {
                        if let Some(old) = c.old {
                            outln!("- {}\t{old}", c.key);
                        }
                        if let Some(new) = c.new {
                            outln!("+ {}\t{new}", c.key);
                        }
                    }
                } else {
                    d.additions.iter().for_each(|c| outln!("+ {c}"));
                    d.removals.iter().for_each(|c| outln!("- {c}"));
                }
                Ok(ExitCode::SUCCESS)
            }
            PailCommand::Merge { car, targets } => {
                let (blocks, base) = open(&car.path).await?;
                let mut roots = Vec::new();
                for t in &targets {
                    roots.push(load_into(t, &blocks).await?);
                }
                let m = pail::merge(&blocks, base, &roots).await;
                finish(&car.path, &blocks, base, m).await
            }
        }
    });
    match outcome {
        Ok(code) => Ok(code),
        Err(e) => {
            crate::output::report_error(json_mode, "Error", &e);
            Ok(ExitCode::from(1))
        }
    }
}

/// A key to put: any string but the empty one.
fn check_key(key: &str) -> Result<()> {
    if key.is_empty() {
        return Err("a key must not be empty".to_owned());
    }
    Ok(())
}

fn parse_cid(s: &str) -> Result<Cid> {
    s.parse().map_err(|e| format!("{s:?} is not a CID: {e}"))
}

/// Stores a write's result in the CAR file and prints what changed.
async fn finish(
    path: &Path,
    blocks: &MemoryBlocks,
    old: Cid,
    m: std::result::Result<pail::Mutation, pail::Error>,
) -> Result<ExitCode> {
    let m = m.map_err(|e| e.to_string())?;
    blocks.apply(&m, false);
    save(path, blocks, m.root).await?;
    print_mutation(old, &m);
    Ok(ExitCode::SUCCESS)
}

fn print_mutation(old: Cid, m: &pail::Mutation) {
    outln!("--- {old}\n+++ {}", m.root);
    m.additions.iter().for_each(|s| outln!("+ {}", s.cid()));
    m.removals.iter().for_each(|c| outln!("- {c}"));
}

/// One JSON Lines operation of `pail apply`.
#[derive(Debug, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase", deny_unknown_fields)]
enum Op {
    Put {
        key: String,
        value: String,
    },
    Del {
        key: String,
    },
    Batch {
        #[serde(default)]
        puts: Vec<(String, String)>,
        #[serde(default)]
        dels: Vec<String>,
    },
    Entries {
        prefix: Option<String>,
        gt: Option<String>,
        gte: Option<String>,
        lt: Option<String>,
        lte: Option<String>,
        #[serde(default)]
        reverse: bool,
        limit: Option<usize>,
    },
}

/// Holds only the live tree: each write's replaced shards are freed.
async fn apply(config: ShardConfig) -> Result<ExitCode> {
    let mut blocks = LiveBlocks::new(Arc::new(Shard::empty(config)));
    let mut out = crate::output::Stdout::buffered();
    for line in io::stdin().lock().lines() {
        let line = line.map_err(|e| e.to_string())?;
        if line.trim().is_empty() {
            continue;
        }
        let root = blocks.root();
        let reply = match serde_json::from_str::<Op>(&line) {
            Err(e) => json!({"root": root.to_string(), "error": format!("invalid operation: {e}")}),
            Ok(Op::Entries {
                prefix,
                gt,
                gte,
                lt,
                lte,
                reverse,
                limit,
            }) => {
                let options = EntriesOptions {
                    prefix,
                    gt,
                    gte,
                    lt,
                    lte,
                    reverse,
                    limit,
                };
                match pail::entries(&blocks, root, &options).await {
                    Ok(list) => {
                        json!({"entries": list.iter().map(|(k, v)| json!([k, v.to_string()])).collect::<Vec<_>>()})
                    }
                    Err(e) => json!({"entries": [], "error": e.to_string()}),
                }
            }
            Ok(op) => match write(&blocks, root, op).await {
                Ok(m) => {
                    blocks.apply(&m);
                    json!({"root": m.root.to_string()})
                }
                Err(e) => json!({"root": root.to_string(), "error": e}),
            },
        };
        writeln!(out, "{reply}").map_err(|e| e.to_string())?;
        out.flush().map_err(|e| e.to_string())?;
    }
    Ok(ExitCode::SUCCESS)
}

async fn write(blocks: &LiveBlocks, root: Cid, op: Op) -> Result<pail::Mutation> {
    let e = |e: pail::Error| e.to_string();
    match op {
        Op::Put { key, value } => {
            check_key(&key)?;
            pail::put(blocks, root, &key, parse_cid(&value)?)
                .await
                .map_err(e)
        }
        Op::Del { key } => pail::del(blocks, root, &key).await.map_err(e),
        Op::Batch { puts, dels } => {
            let puts: Vec<(String, Cid)> = puts
                .into_iter()
                .map(|(k, v)| check_key(&k).and_then(|()| parse_cid(&v).map(|v| (k, v))))
                .collect::<Result<_>>()?;
            let mut batch = Batch::new(blocks, root).await.map_err(e)?;
            for (k, v) in &puts {
                batch.put(k, *v).await.map_err(e)?;
            }
            for k in &dels {
                batch.del(k).await.map_err(e)?;
            }
            Ok(batch.commit())
        }
        Op::Entries { .. } => Err("entries is not a write".to_owned()),
    }
}

/// Reads a CAR file's blocks into `blocks`, checking each shard's hash;
/// returns its root.
async fn load_into(path: &Path, blocks: &MemoryBlocks) -> Result<Cid> {
    let file = tokio::fs::File::open(path)
        .await
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let mut reader = iroh_car::CarReader::new(tokio::io::BufReader::new(file))
        .await
        .map_err(|e| match e {
            // iroh-car's words for a header whose roots list is empty.
            iroh_car::Error::Parsing(m) if m == "empty CAR file" => {
                format!("{}: the file's header names no root", path.display())
            }
            e => format!("{} is not a CAR v1 file: {e}", path.display()),
        })?;
    let root = *reader
        .header()
        .roots()
        .first()
        .ok_or_else(|| format!("{} has no root", path.display()))?;
    let mut root = root;
    // A repository export's root is a commit, and its records are not
    // shards: the tree is the commit's `data`.
    let mut not_shards = None;
    let mut commit_root = false;
    while let Some((cid, bytes)) = reader
        .next_block()
        .await
        .map_err(|e| format!("{}: {e}", path.display()))?
    {
        if cid.codec() != pail::DAG_CBOR {
            continue;
        }
        let shard = match Shard::decode(&bytes) {
            Ok(shard) => shard,
            Err(e) => {
                if cid == root
                    && let Ok(commit) = repo::CommitData::decode(cid, &bytes)
                {
                    root = commit.data;
                    commit_root = true;
                } else if not_shards.is_none() {
                    not_shards = Some(format!("{}: block {cid}: {e}", path.display()));
                }
                continue;
            }
        };
        if shard.cid() != cid {
            return Err(format!(
                "{}: block {cid} does not hash to its CID (corrupt file)",
                path.display()
            ));
        }
        blocks.insert(Arc::new(shard));
    }
    if let Some(e) = not_shards
        && !commit_root
    {
        return Err(e);
    }
    blocks
        .get_shard(&root)
        .await
        .map_err(|e| format!("{}: the root shard is missing: {e}", path.display()))?;
    Ok(root)
}

async fn open(path: &Path) -> Result<(MemoryBlocks, Cid)> {
    let blocks = MemoryBlocks::new();
    let root = load_into(path, &blocks).await?;
    Ok((blocks, root))
}

async fn open_or_create(path: &Path, config: ShardConfig) -> Result<(MemoryBlocks, Cid)> {
    if tokio::fs::try_exists(path).await.unwrap_or(false) {
        return open(path).await;
    }
    let blocks = MemoryBlocks::new();
    let empty = Arc::new(Shard::empty(config));
    blocks.insert(Arc::clone(&empty));
    Ok((blocks, empty.cid()))
}

/// Writes the tree at `root` (its reachable shards, root first, pre-order)
/// to `path`, atomically (a temporary file renamed over it).
async fn save(path: &Path, blocks: &MemoryBlocks, root: Cid) -> Result<()> {
    let tmp = path.with_extension("car.tmp");
    let file = tokio::fs::File::create(&tmp)
        .await
        .map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    let mut writer = iroh_car::CarWriter::new(
        iroh_car::CarHeader::new_v1(vec![root]),
        tokio::io::BufWriter::new(file),
    );
    let mut stack = vec![root];
    let mut seen = std::collections::HashSet::new();
    while let Some(cid) = stack.pop() {
        if !seen.insert(cid) {
            continue;
        }
        let shard = blocks.get_shard(&cid).await.map_err(|e| e.to_string())?;
        writer
            .write(cid, shard.bytes())
            .await
            .map_err(|e| e.to_string())?;
        let links: Vec<Cid> = (0..shard.len()).filter_map(|i| shard.link(i)).collect();
        stack.extend(links.into_iter().rev());
    }
    let mut inner = writer.finish().await.map_err(|e| e.to_string())?;
    tokio::io::AsyncWriteExt::flush(&mut inner)
        .await
        .map_err(|e| e.to_string())?;
    inner
        .into_inner()
        .sync_all()
        .await
        .map_err(|e| e.to_string())?;
    tokio::fs::rename(&tmp, path)
        .await
        .map_err(|e| format!("cannot replace {}: {e}", path.display()))
}

/// Draws the shard structure under `cid`: the shard on the current line
/// (after whatever the caller printed), its entries below with `indent`.
/// The tree at `cid` as nested JSON: each shard's CID, encoded size and
/// entries (key, value, and the child shard a link leads to).
fn tree_json<'a>(
    blocks: &'a MemoryBlocks,
    cid: Cid,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<serde_json::Value>> + 'a>> {
    Box::pin(async move {
        let shard = blocks.get_shard(&cid).await.map_err(|e| e.to_string())?;
        let mut entries = Vec::with_capacity(shard.len());
        for i in 0..shard.len() {
            let mut entry = serde_json::Map::new();
            entry.insert("key".into(), shard.key(i).into());
            if let Some(v) = shard.data(i) {
                entry.insert("value".into(), v.to_string().into());
            }
            if let Some(link) = shard.link(i) {
                entry.insert("link".into(), tree_json(blocks, link).await?);
            }
            entries.push(serde_json::Value::Object(entry));
        }
        Ok(json!({"cid": cid.to_string(), "bytes": shard.bytes().len(), "entries": entries}))
    })
}

fn draw<'a>(
    blocks: &'a MemoryBlocks,
    cid: Cid,
    indent: &'a str,
    out: &'a mut String,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<()>> + 'a>> {
    Box::pin(async move {
        use std::fmt::Write as _;
        let shard = blocks.get_shard(&cid).await.map_err(|e| e.to_string())?;
        let _ = writeln!(
            out,
            "Shard({cid}) {} bytes, {} entries",
            shard.bytes().len(),
            shard.len()
        );
        let n = shard.len();
        for i in 0..n {
            let (branch, more) = if i + 1 == n {
                ("└── ", "    ")
            } else {
                ("├── ", "│   ")
            };
            let _ = writeln!(out, "{indent}{branch}Key({})", shard.key(i));
            let inner = format!("{indent}{more}");
            let link = shard.link(i);
            if let Some(data) = shard.data(i) {
                let twig = if link.is_some() {
                    "├── "
                } else {
                    "└── "
                };
                let _ = writeln!(out, "{inner}{twig}Value({data})");
            }
            if let Some(link) = link {
                let _ = write!(out, "{inner}└── ");
                draw(blocks, link, &format!("{inner}    "), out).await?;
            }
        }
        Ok(())
    })
}
