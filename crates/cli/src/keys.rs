//! `datarepo keys …`: build and explain storage keys.
//!
//! Output is JSON on stdout; on invalid input, `{"error": "..."}` on stdout
//! and exit status 1.

use crate::output::outln;
use std::{io, process::ExitCode};

use clap::{ArgGroup, Args, Subcommand};
use keycodec::{
    records::{DecodedKey, decode_key},
    txkey::{full, short},
};
use serde_json::{Value, json};

#[derive(Debug, Subcommand)]
pub(crate) enum KeysCommand {
    /// FeatureBase roaring-container keys (txkey), short or full form.
    #[command(subcommand)]
    Txkey(TxkeyCommand),
    /// Explain any datarepo storage key given in hex: prefix, record type,
    /// decoded fields.
    Decode {
        /// The key, in hex.
        hex: String,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum TxkeyCommand {
    /// Build a key; prints {"key": "<hex>", "prefix": "<hex>"}.
    Encode(EncodeArgs),
    /// Decode a key given in hex; prints its field, view and ckey (and, for
    /// the full form, index and shard).
    Decode {
        #[command(flatten)]
        form: Form,
        /// The key, in hex.
        hex: String,
    },
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("form").required(true).args(["short", "full"])))]
pub(crate) struct Form {
    /// The short form: '~' field ';' view '<' ckey '#'.
    #[arg(long)]
    short: bool,
    /// The full form: '~' index '%' field ';' view ':' shard '<' ckey '#'.
    #[arg(long)]
    full: bool,
}

#[derive(Debug, Args)]
pub(crate) struct EncodeArgs {
    #[command(flatten)]
    form: Form,
    /// Field name.
    #[arg(long)]
    field: String,
    /// View name.
    #[arg(long)]
    view: String,
    /// Roaring container key.
    #[arg(long)]
    ckey: u64,
    /// Index name (full form).
    #[arg(long, required_if_eq("full", "true"))]
    index: Option<String>,
    /// Shard (full form).
    #[arg(long, required_if_eq("full", "true"))]
    shard: Option<u64>,
}

/// Prints the result as JSON on stdout; an error goes to stderr (as a JSON
/// object `{"error": ...}` with `--json`, else as a sentence) and exits 1.
pub(crate) fn run(cmd: KeysCommand, json_errors: bool) -> io::Result<ExitCode> {
    let result = match cmd {
        KeysCommand::Txkey(TxkeyCommand::Encode(args)) => encode(&args),
        KeysCommand::Txkey(TxkeyCommand::Decode { form, hex }) => parse_hex(&hex).and_then(|key| {
            if form.full {
                full::Key::parse(&key)
                    .map(|k| {
                        json!({"index": k.index, "field": k.field, "view": k.view,
                               "shard": k.shard, "ckey": k.ckey, "text": k.to_string()})
                    })
                    .map_err(|e| e.to_string())
            } else {
                short::Key::parse(&key)
                    .map(|k| {
                        json!({"field": k.field, "view": k.view, "ckey": k.ckey,
                               "text": k.to_string()})
                    })
                    .map_err(|e| e.to_string())
            }
        }),
        KeysCommand::Decode { hex } => parse_hex(&hex).and_then(|key| explain(&key)),
    };
    match result {
        Ok(value) => {
            outln!("{value}");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) if json_errors => {
            eprintln!("{}", json!({"error": e}));
            Ok(ExitCode::from(1))
        }
        Err(e) => {
            eprintln!("datarepo: {e}");
            Ok(ExitCode::from(1))
        }
    }
}

fn encode(args: &EncodeArgs) -> Result<Value, String> {
    let built = if args.form.full {
        full::key_and_prefix(
            args.index.as_deref().unwrap_or_default(),
            &args.field,
            &args.view,
            args.shard.unwrap_or_default(),
            args.ckey,
        )
    } else {
        short::key_and_prefix(&args.field, &args.view, args.ckey)
    };
    built
        .map(|(key, prefix)| json!({"key": hex::encode(key), "prefix": hex::encode(prefix)}))
        .map_err(|e| e.to_string())
}

fn parse_hex(s: &str) -> Result<Vec<u8>, String> {
    hex::decode(s.trim()).map_err(|e| format!("not a hex string: {e}"))
}

fn explain(key: &[u8]) -> Result<Value, String> {
    let decoded = decode_key(key).map_err(|e| e.to_string())?;
    let fields = match &decoded {
        DecodedKey::Block { cid } | DecodedKey::BlockDelta { cid } => {
            json!({"cidHex": hex::encode(cid)})
        }
        DecodedKey::Head { repo } => json!({"repo": repo}),
        DecodedKey::CommitLog { repo, rev } => json!({
            "repo": repo,
            "rev": rev,
            "revTid": rkey::Tid::from_u64(*rev).to_string(),
        }),
        DecodedKey::RecordIndex {
            repo,
            collection,
            rkey,
        } => json!({"repo": repo, "collection": collection, "rkey": rkey}),
        DecodedKey::RecordHistory {
            repo,
            collection,
            rkey,
            rev,
        } => json!({
            "repo": repo,
            "collection": collection,
            "rkey": rkey,
            "rev": rev,
            "revTid": rkey::Tid::from_u64(*rev).to_string(),
        }),
        DecodedKey::HistoryStart { repo } => json!({"repo": repo, "historyStart": true}),
        DecodedKey::Collection { repo, collection } => {
            json!({"repo": repo, "collection": collection})
        }
        DecodedKey::RecordCount { repo, collection } => {
            json!({"repo": repo, "collection": collection, "recordCount": true})
        }
        DecodedKey::Bitmap { txkey } => {
            let text = short::Key::parse(txkey)
                .map(|k| k.to_string())
                .or_else(|_| full::Key::parse(txkey).map(|k| k.to_string()))
                .map_err(|e| format!("bitmap key holds an invalid txkey: {e}"))?;
            json!({"txkeyHex": hex::encode(txkey), "txkey": text})
        }
        DecodedKey::FieldIndex {
            repo,
            collection,
            path,
        } => json!({"repo": repo, "collection": collection, "path": path}),
        DecodedKey::IndexEpoch { repo } => json!({"repo": repo, "indexEpoch": true}),
        DecodedKey::Column { scope, rkey } => json!({"scope": scope, "rkey": rkey}),
        DecodedKey::ColumnRkey { scope, column } => {
            let column = *column;
            let mut fields = json!({"scope": scope, "column": column});
            if column >= keycodec::records::COLUMN_FENCES {
                fields["fenceChunk"] = json!(column - keycodec::records::COLUMN_FENCES);
            } else if column >= keycodec::records::COLUMN_PACKED {
                fields["packedBlock"] = json!(column - keycodec::records::COLUMN_PACKED);
            }
            fields
        }
        DecodedKey::KeywordRow { scope, path, value } => {
            json!({"scope": scope, "path": path, "valueHex": hex::encode(value)})
        }
        DecodedKey::KeywordValue { scope, path, row } => {
            json!({"scope": scope, "path": path, "row": row})
        }
        DecodedKey::SigningKeys { repo } => json!({"repo": repo}),
        DecodedKey::Event { seq } => json!({"seq": seq}),
        DecodedKey::StreamEvent { time_us } => json!({"timeUs": time_us}),
        DecodedKey::Lexicon { repo, nsid } => json!({"repo": repo, "nsid": nsid}),
        _ => json!({}),
    };
    // The key's own tag: a type's reserved bits may be set (0x41, 0x51).
    let tag = key.get(1).copied().unwrap_or_default();
    Ok(json!({
        "version": keycodec::CURRENT_VERSION,
        "recordTag": format!("0x{tag:02x}"),
        "recordType": decoded.record_type().name(),
        "fields": fields,
    }))
}
