//! The repository commands and their arguments, as clap parses them.

use std::path::PathBuf;

use cid::Cid;
use clap::{Args, Subcommand, ValueEnum};
use repo::Curve;

use crate::output::Result;

/// Which repository; global to every repository command.
#[derive(Debug, Args)]
pub(crate) struct RepoArgs {
    /// The repository: a DID (did:web:example.com) or a handle (alice.example.com).
    #[arg(long, global = true, env = "DATAREPO_REPO")]
    pub(crate) repo: Option<String>,
    /// Print JSON for scripts (put/get/ls print AT Protocol's response shapes).
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// Send writing commands (put, rm, put --batch, index add|drop) to the
    /// datarepo server at this URL, with the token in DATAREPO_TOKEN, so
    /// they work beside it (reading commands read the store directly).
    #[arg(long, global = true, env = "DATAREPO_SERVER")]
    pub(crate) server: Option<String>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum CollectionCommand {
    /// Declare a collection's record key type.
    Define {
        /// The collection (an NSID such as app.bsky.feed.post).
        nsid: String,
        /// The record key type: tid, literal:<value>, any or nsid.
        #[arg(long)]
        key: String,
    },
    /// List the repository's collections, their key types and record counts.
    #[command(visible_alias = "ls")]
    List,
}

#[derive(Debug, Subcommand)]
pub(crate) enum LexiconCommand {
    /// Add (or replace) Lexicon documents, all or none. A document whose
    /// main definition is a record declares the collection named by its id,
    /// with its key type, and its records are validated from then on; other
    /// documents hold the definitions records refer to (refs and unions may
    /// point into them). The collection's existing records are checked and
    /// the ones that fail reported, not removed.
    Add {
        /// Lexicon JSON files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// List the repository's Lexicons.
    #[command(visible_alias = "ls")]
    List,
    /// Print a Lexicon document.
    Show {
        /// Its NSID.
        nsid: String,
    },
    /// Remove a Lexicon document; a collection it declared keeps its key
    /// type and is no longer validated.
    Rm {
        /// Its NSID.
        nsid: String,
    },
    /// Validate records read from standard input against the repository's
    /// Lexicons (or the files given): one JSON record (whose `$type` names
    /// its collection), or with --json-lines one `{"collection", "record"}`
    /// per line, answered by one `{"valid": true}` or `{"valid": false,
    /// "error"}` line. Exit status 0 when every input could be read,
    /// whatever the verdicts (without --json-lines: 1 when invalid).
    Validate {
        /// Lexicon files, or directories of them (searched recursively for
        /// `*.json`), instead of the repository's.
        #[arg(long, num_args = 1..)]
        lexicons: Vec<PathBuf>,
        /// Read JSON Lines of `{"collection": NSID, "record": {…}}`.
        #[arg(long)]
        json_lines: bool,
    },
}

/// `--validate` / `--no-validate`: the `validate` parameter of
/// `com.atproto.repo.createRecord`.
#[derive(Debug, Clone, Copy, Args)]
pub(crate) struct ValidateArgs {
    /// Validate records against their collection's Lexicon, and fail when
    /// there is none (default: validate when there is one).
    #[arg(long, conflicts_with = "no_validate")]
    validate: bool,
    /// Write records without validating them.
    #[arg(long)]
    no_validate: bool,
}

impl ValidateArgs {
    /// The `validate` parameter these flags give.
    pub(crate) fn param(self) -> Option<bool> {
        match (self.validate, self.no_validate) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        }
    }

    pub(crate) fn mode(self) -> repo::Validation {
        repo::Validation::from_param(self.param())
    }
}

#[derive(Debug, Subcommand)]
pub(crate) enum IndexCommand {
    /// Declare a field index and build it over the records already there;
    /// every later commit maintains it.
    Add {
        /// The collection (an NSID).
        collection: String,
        /// The path into its records: keys joined by dots (arrays are entered).
        path: String,
        /// What to index: keyword (strings, booleans), integer, datetime
        /// (AT Protocol datetimes), or text (the words of strings, for
        /// `--where 'path matches "words"'`).
        #[arg(long, value_parser = ["keyword", "integer", "datetime", "text"])]
        kind: String,
    },
    /// List the declared field indexes.
    #[command(visible_alias = "ls")]
    List {
        /// Only this collection's.
        collection: Option<String>,
    },
    /// Drop a field index and delete its bitmaps.
    Drop {
        /// The collection.
        collection: String,
        /// The indexed path.
        path: String,
    },
    /// Rebuild every field index of the repository from its records (what
    /// an import does after it lands; needed when one was interrupted, which
    /// queries and `check` then say). Writes wait until it finishes.
    Rebuild,
}

/// A repository command.
#[derive(Debug, Subcommand)]
pub(crate) enum RepoCommand {
    /// Create the repository (--repo); with --partitions, first create the
    /// store itself, split into partitions.
    Init {
        /// Sign every commit with this private key (from `datarepo key
        /// generate`); its path is kept in the store, the key stays in the file.
        #[arg(long)]
        signing_key: Option<PathBuf>,
        /// Create the store as P partitions (1 to 1024), each its own
        /// database holding the repositories whose ID hashes to it
        /// (docs/server.md, "Partitions"). The count is fixed for the
        /// store's life. Without --repo only the store is created.
        #[arg(long, value_name = "P", value_parser = clap::value_parser!(u32).range(1..=1024))]
        partitions: Option<u32>,
    },
    /// Declare or list collections.
    #[command(subcommand)]
    Collection(CollectionCommand),
    /// Register Lexicon documents.
    #[command(subcommand)]
    Lexicon(LexiconCommand),
    /// Accounts: who may log in and write which repository.
    #[command(subcommand)]
    Account(AccountCommand),
    /// Blobs: the files (images, video) records refer to.
    #[command(subcommand)]
    Blob(BlobCommand),
    /// Create or replace a record, from a JSON file or standard input.
    Put(PutArgs),
    /// Print a record.
    Get {
        /// The collection, the record as COLLECTION/RKEY, or its AT URI
        /// (at://DID/COLLECTION/RKEY).
        collection: String,
        /// The record key (none after COLLECTION/RKEY or an AT URI).
        rkey: Option<String>,
        /// The record as of the commit with this rev.
        #[arg(long)]
        at: Option<String>,
        /// Show only these paths of each record's value (comma-separated,
        /// e.g. text,embed.images.alt).
        #[arg(long, value_name = "PATHS")]
        fields: Option<String>,
    },
    /// Delete a record.
    Rm {
        /// The collection, the record as COLLECTION/RKEY, or its AT URI
        /// (at://DID/COLLECTION/RKEY).
        collection: String,
        /// The record key (none after COLLECTION/RKEY or an AT URI).
        rkey: Option<String>,
        #[command(flatten)]
        swap: SwapArgs,
    },
    /// List a collection's records in record key order.
    Ls {
        /// The collection.
        collection: String,
        /// At most this many records (1 to 10000).
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=10_000))]
        limit: u64,
        /// Continue after this cursor (from the previous page).
        #[arg(long)]
        cursor: Option<String>,
        /// Descending order.
        #[arg(long)]
        reverse: bool,
        /// Show only these paths of each record's value (comma-separated,
        /// e.g. text,embed.images.alt).
        #[arg(long, value_name = "PATHS")]
        fields: Option<String>,
        /// How records print: table (the default at a terminal), jsonl or
        /// csv (RFC 4180); --json without it prints listRecords' shape.
        #[arg(long, value_enum)]
        format: Option<crate::record_table::Format>,
    },
    /// Field indexes: declare, list, drop (see docs/indexes.md).
    #[command(subcommand)]
    Index(IndexCommand),
    /// Records of a collection matching a --where query, in record key
    /// order (listRecords' shape with --json); or their count, the most
    /// frequent values of a keyword path, or stats of an integer path.
    Query(QueryArgs),
    /// The commit log, newest first; with --record, the versions of one
    /// record (the commits that created, updated or deleted it).
    Log {
        /// At most this many commits (versions with --record).
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Only commits older than the one with this rev (the `cursor` of a
        /// previous page with --record).
        #[arg(long, value_name = "REV")]
        before: Option<String>,
        /// The versions of this record: COLLECTION/RKEY or its AT URI.
        #[arg(long, value_name = "COLLECTION/RKEY")]
        record: Option<String>,
    },
    /// Records created, updated and deleted between two commits (by rev).
    Diff {
        /// The older rev.
        rev_a: String,
        /// The newer rev.
        rev_b: String,
    },
    /// Write the repository as a CAR v1 file (root: the head commit).
    Export {
        /// The file to write ("-" for standard output).
        file: PathBuf,
        /// Only what changed after the commit with this rev: every commit
        /// since, with what each added, and the repository's declarations
        /// as of the head (an incremental backup).
        #[arg(long, conflicts_with = "history")]
        since: Option<String>,
        /// A full backup: every retained commit and what each reaches, and
        /// the repository's declarations (collections, key types, Lexicons,
        /// field indexes, public signing keys). Without it, the AT
        /// Protocol-style head CAR.
        #[arg(long)]
        history: bool,
        /// Also copy the repository's blobs (the files its records refer
        /// to; not part of a CAR) into this directory, one file per blob
        /// named by its CID (`--blobs` alone: FILE.blobs). Blobs the
        /// directory has already are kept, so one directory serves a full
        /// backup and its increments.
        #[arg(long, value_name = "DIR", num_args = 0..=1)]
        blobs: Option<Option<PathBuf>>,
        /// Replace FILE if it exists.
        #[arg(long)]
        force: bool,
    },
    /// Import a CAR file: creates the repository or moves it forward. When
    /// the store knows the repository's signing keys, every commit the file
    /// adds must be signed by one of them.
    Import {
        /// The CAR file.
        file: PathBuf,
        /// A public key (did:key) the file's commits may be signed with,
        /// trusted from now on (repeatable).
        #[arg(long = "key", value_name = "DID_KEY")]
        keys: Vec<String>,
        /// Import commits signed by a key nobody gave (or unsigned) instead
        /// of refusing them, and trust the keys the file declares.
        #[arg(long)]
        trust_new_key: bool,
        /// The private key file (PKCS #8 PEM) that signs the repository's
        /// next commits; its public key is trusted for the file's commits
        /// too. A restored signed repository refuses writes until it has
        /// one (this, or `key rotate --signing-key` later).
        #[arg(long, value_name = "FILE")]
        signing_key: Option<PathBuf>,
        /// The blob directory of the backup (`export --blobs [DIR]`;
        /// `--blobs` alone: FILE.blobs): the blobs the file's records refer
        /// to are copied from it, each checked against its CID.
        #[arg(long, value_name = "DIR", num_args = 0..=1)]
        blobs: Option<Option<PathBuf>>,
    },
    /// Signing keys: generate one, show or rotate a repository's.
    #[command(subcommand)]
    Key(crate::commands::KeyCommand),
    /// Verify a CAR file offline: every block against its CID, every
    /// commit's signature, every commit's tree and records. Exits with 1
    /// naming the first failure.
    Verify {
        /// The CAR file (from `export`, `export --since`, `export --history`
        /// or getRepo).
        file: PathBuf,
        /// A public key the commits may be signed with (repeatable: every key
        /// the history was signed with). Default: the keys this store knows
        /// for the repository (none where there is no store: an unsigned
        /// file is then checked but for signatures).
        #[arg(long = "key", value_name = "DID_KEY")]
        keys: Vec<String>,
        /// The file is an incremental export: blocks its trees name may be
        /// in the exports before it.
        #[arg(long)]
        incremental: bool,
    },
    /// Verify a record proof offline (the CAR of com.atproto.sync.getRecord):
    /// the signed commit, the shards on the path to the record, the record.
    VerifyRecord {
        /// The CAR file.
        file: PathBuf,
        /// The record's AT URI (at://DID/COLLECTION/RKEY).
        #[arg(long)]
        uri: String,
        /// A public key the commit may be signed with (repeatable). Default:
        /// the keys this store knows for the repository (none where there
        /// is no store).
        #[arg(long = "key", value_name = "DID_KEY")]
        keys: Vec<String>,
    },
    /// Counts: records per collection, commits.
    Stats,
    /// The store's repositories.
    #[command(subcommand)]
    Repo(RepoListCommand),
    /// Check a repository (all of them without --repo): every commit in
    /// its log and every shard and record of its head read back and hashed,
    /// and the record index compared with the tree. Changes nothing; exits
    /// with 1 when something is damaged.
    Check {
        /// Also read back every shard and record that only older retained
        /// commits reach (what `get --at`, `diff` and `export --since`
        /// read); subtrees that commits share are read once.
        #[arg(long)]
        history: bool,
    },
}

// The arguments of `put` (no doc comment: clap would take it for the command's).
#[derive(Debug, Args)]
pub(crate) struct PutArgs {
    /// The collection (an NSID).
    #[arg(required_unless_present = "batch")]
    pub(crate) collection: Option<String>,
    /// The record key (default: a fresh TID).
    pub(crate) rkey: Option<String>,
    /// Read JSON Lines of applyWrites-shaped writes from standard input
    /// (`{"$type": "com.atproto.repo.applyWrites#create", "collection":
    /// …, "rkey"?: …, "value": {…}}`, `#update`, `#delete`) and apply
    /// them in commits of --commit-every writes.
    #[arg(long, conflicts_with_all = ["collection", "file", "create", "swap_commit", "swap_record"])]
    pub(crate) batch: bool,
    /// With --batch: writes per commit.
    #[arg(long, default_value_t = 200, requires = "batch",
          value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub(crate) commit_every: u64,
    /// Read the record from this file instead of standard input.
    #[arg(long, short)]
    pub(crate) file: Option<PathBuf>,
    /// Fail unless the record does not exist yet.
    #[arg(long)]
    pub(crate) create: bool,
    #[command(flatten)]
    pub(crate) swap: SwapArgs,
    #[command(flatten)]
    pub(crate) validate: ValidateArgs,
}

// The arguments of `query` (no doc comment, as `PutArgs`).
#[derive(Debug, Args)]
pub(crate) struct QueryArgs {
    /// The collection.
    pub(crate) collection: String,
    /// The condition, e.g. 'langs = "en" and createdAt >= "2024-01-01T00:00:00Z"'
    /// (docs/indexes.md); every record without it.
    #[arg(long = "where", value_name = "EXPR")]
    pub(crate) where_: Option<String>,
    /// At most this many records (default 50, 1 to 10000), or values with --top (default 10).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub(crate) limit: Option<u64>,
    /// Continue after this cursor (from the previous page of records or
    /// groups).
    #[arg(long, conflicts_with_all = ["count", "top"])]
    pub(crate) cursor: Option<String>,
    /// Descending record key order.
    #[arg(long, conflicts_with_all = ["count", "top", "stats", "group_by"])]
    pub(crate) reverse: bool,
    /// Order the records by their value at this indexed path (integer,
    /// datetime or keyword), ties by record key, records without a value
    /// last; a record with several values sorts by its smallest (its
    /// largest with --desc). A page's cursor holds for the head it was
    /// read at.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["count", "top", "stats", "group_by", "reverse"])]
    pub(crate) sort: Option<String>,
    /// With --sort: largest first.
    #[arg(long, requires = "sort")]
    pub(crate) desc: bool,
    /// Print only how many records match: {"count": N}.
    #[arg(long, conflicts_with_all = ["top", "stats"])]
    pub(crate) count: bool,
    /// The most frequent values of this keyword-indexed path among the
    /// matching records: {"top": [{"value", "count"}]}.
    #[arg(long, value_name = "PATH", conflicts_with = "stats")]
    pub(crate) top: Option<String>,
    /// Count, sum, min, max and mean (avg) of this integer-indexed path
    /// over the matching records (of each group, with --group-by).
    #[arg(long, value_name = "PATH")]
    pub(crate) stats: Option<String>,
    /// Count the matching records per value of this keyword-indexed path
    /// (repeatable, at most 3: per combination of values):
    /// {"groups": [{"key", "count", "stats"?}], "cursor"?}, by count
    /// descending then key; --limit groups per page (default 50).
    #[arg(long = "group-by", value_name = "PATH", conflicts_with_all = ["count", "top"])]
    pub(crate) group_by: Vec<String>,
    /// How many matching records have a value of this integer- or
    /// datetime-indexed path in each bucket of --interval:
    /// {"buckets": [{"start", "count"}]}, empty buckets included.
    #[arg(long, value_name = "PATH", requires = "interval",
          conflicts_with_all = ["count", "top", "stats", "group_by", "cursor", "reverse", "fields", "format"])]
    pub(crate) histogram: Option<String>,
    /// The buckets' width: for a datetime, 1s, 15m, 1h, 1d, 1w (from
    /// Monday), 1mo, 1y (UTC calendar); for an integer, a positive width.
    #[arg(long, value_name = "I", requires = "histogram")]
    pub(crate) interval: Option<String>,
    /// With --histogram: only values from this one (a datetime or an
    /// integer), the first bucket holding it.
    #[arg(long, value_name = "VALUE", requires = "histogram")]
    pub(crate) from: Option<String>,
    /// With --histogram: only values before this one.
    #[arg(long, value_name = "VALUE", requires = "histogram")]
    pub(crate) to: Option<String>,
    /// Show only these paths of each record's value (comma-separated,
    /// e.g. text,embed.images.alt).
    #[arg(long, value_name = "PATHS", conflicts_with_all = ["count", "top", "stats", "group_by"])]
    pub(crate) fields: Option<String>,
    /// How records print: table (the default at a terminal), jsonl or csv
    /// (RFC 4180); --json without it prints listRecords' shape.
    #[arg(long, value_enum, conflicts_with_all = ["count", "top", "stats", "group_by"])]
    pub(crate) format: Option<crate::record_table::Format>,
}

impl RepoCommand {
    /// Whether the command changes the store; the others open it read-only.
    pub(crate) fn writes(&self) -> bool {
        match self {
            Self::Key(k) => k.writes(),
            Self::Account(a) => a.writes(),
            Self::Init { .. }
            | Self::Collection(CollectionCommand::Define { .. })
            | Self::Lexicon(LexiconCommand::Add { .. } | LexiconCommand::Rm { .. })
            | Self::Put(_)
            | Self::Rm { .. }
            | Self::Index(
                IndexCommand::Add { .. } | IndexCommand::Drop { .. } | IndexCommand::Rebuild,
            )
            | Self::Import { .. }
            | Self::Repo(RepoListCommand::Delete { .. })
            | Self::Blob(BlobCommand::Put { .. }) => true,
            Self::Collection(CollectionCommand::List)
            | Self::Lexicon(
                LexiconCommand::List
                | LexiconCommand::Show { .. }
                | LexiconCommand::Validate { .. },
            )
            | Self::Index(IndexCommand::List { .. })
            | Self::Query(_)
            | Self::Get { .. }
            | Self::Ls { .. }
            | Self::Log { .. }
            | Self::Diff { .. }
            | Self::Export { .. }
            | Self::Stats
            | Self::Repo(RepoListCommand::List)
            | Self::Blob(BlobCommand::Get { .. } | BlobCommand::Ls)
            | Self::Verify { .. }
            | Self::VerifyRecord { .. }
            | Self::Check { .. } => false,
        }
    }

    /// Whether the command reads or writes the repository's blocks once
    /// each, so that caches for repeated reads would only fill
    /// ([`Session::open_for_one_pass`](crate::session::Session::open_for_one_pass)).
    pub(crate) fn one_pass(&self) -> bool {
        matches!(
            self,
            Self::Export { .. } | Self::Check { .. } | Self::Import { .. }
        )
    }

    /// Whether the command is a short chain of reads: it writes nothing and
    /// makes no pass over a whole repository or file.
    pub(crate) fn reads_little(&self) -> bool {
        !self.writes()
            && !self.one_pass()
            && !matches!(self, Self::Verify { .. } | Self::VerifyRecord { .. })
    }

    /// Whether the command uses a store only when there is one (`verify`
    /// and `verify-record` read the keys it knows).
    pub(crate) fn store_optional(&self) -> bool {
        matches!(self, Self::Verify { .. } | Self::VerifyRecord { .. })
    }

    /// Whether the command reads or writes the store at all.
    pub(crate) fn needs_store(&self) -> bool {
        match self {
            Self::Key(k) => k.needs_store(),
            Self::Verify { keys, .. } | Self::VerifyRecord { keys, .. } => keys.is_empty(),
            Self::Lexicon(LexiconCommand::Validate { lexicons, .. }) => lexicons.is_empty(),
            _ => true,
        }
    }
}

#[derive(Debug, Subcommand)]
pub(crate) enum BlobCommand {
    /// Store a file as a blob of the repository (temporary until a record
    /// refers to it) and print the blob reference to put in a record. Its
    /// type is what its bytes show, else --mime, else
    /// application/octet-stream. With --server, through uploadBlob.
    Put {
        /// The file.
        file: PathBuf,
        /// The type to claim when the bytes do not show one.
        #[arg(long)]
        mime: Option<String>,
    },
    /// Write a blob's bytes to a file (-o), or to standard output.
    Get {
        /// The blob's CID.
        cid: String,
        /// Where to write it.
        #[arg(short = 'o', long = "out")]
        out: Option<PathBuf>,
    },
    /// The repository's blobs: CID, type, size, and whether records refer
    /// to them (referenced), did (released) or never did (temporary).
    #[command(visible_alias = "list")]
    Ls,
}

#[derive(Debug, Subcommand)]
pub(crate) enum RepoListCommand {
    /// Every repository in the store, with its head (listRepos' shape with
    /// --json).
    #[command(visible_alias = "ls")]
    List,
    /// Delete a repository: its records, history, field indexes,
    /// declarations and signing keys (blocks no other repository shares go
    /// at the next `gc`). An account that owns it stays: `account delete
    /// --delete-repository` deletes both.
    Delete {
        /// The repository (a DID or handle as it was created).
        id: String,
        /// Confirms the deletion (required: it cannot be undone).
        #[arg(long, required = true)]
        yes: bool,
    },
}

/// Compare-and-swap preconditions of a write.
#[derive(Debug, Args)]
pub(crate) struct SwapArgs {
    /// Fail (changing nothing) unless the head commit is this CID.
    #[arg(long)]
    swap_commit: Option<String>,
    /// Fail (changing nothing) unless the record's current CID is this.
    #[arg(long)]
    swap_record: Option<String>,
}

impl SwapArgs {
    pub(crate) fn parse(&self) -> Result<(Option<Cid>, Option<Cid>)> {
        let cid = |s: &Option<String>, flag: &str| {
            s.as_deref()
                .map(|s| {
                    Cid::try_from(s).map_err(|e| format!("--{flag}: {s:?} is not a CID ({e})"))
                })
                .transpose()
        };
        Ok((
            cid(&self.swap_commit, "swap-commit")?,
            cid(&self.swap_record, "swap-record")?,
        ))
    }
}

/// Where an account command reads a password: a file, standard input, or
/// (neither given) a prompt on the terminal.
#[derive(Debug, Args)]
#[group(multiple = false)]
pub(crate) struct PasswordArgs {
    /// Read the password from this file (its first line).
    #[arg(long, value_name = "FILE")]
    pub(crate) password_file: Option<PathBuf>,
    /// Read the password from standard input (its first line).
    #[arg(long)]
    pub(crate) password_stdin: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum AccountCommand {
    /// Make an account: a handle, a password and the repository of its DID
    /// (an existing repository is attached). With --server, through the
    /// server's createAccount (DATAREPO_TOKEN is the admin token); so are
    /// set-password, deactivate, activate and takedown, beside a running
    /// server (list and show read the store, beside it too).
    Create {
        /// The handle (AT Protocol handle syntax; unique whatever its case).
        #[arg(long)]
        handle: String,
        /// The DID (default: did:web:<handle>).
        #[arg(long)]
        did: Option<String>,
        /// An email address.
        #[arg(long)]
        email: Option<String>,
        #[command(flatten)]
        password: PasswordArgs,
        /// Where the account's signing key (secp256k1) is kept, as
        /// `serve --signing-key-dir` keeps them (default: signing-keys in
        /// the store's directory). A repository attached with --did that
        /// signs already keeps its key.
        #[arg(long, value_name = "DIR")]
        signing_key_dir: Option<std::path::PathBuf>,
    },
    /// List the accounts.
    #[command(visible_alias = "ls")]
    List,
    /// Show one account (by handle or DID).
    Show {
        /// The handle or DID.
        account: String,
    },
    /// Replace an account's password.
    SetPassword {
        /// The handle or DID.
        account: String,
        #[command(flatten)]
        password: PasswordArgs,
    },
    /// Stop an account from writing (it can still log in).
    Deactivate {
        /// The handle or DID.
        account: String,
    },
    /// Let a deactivated or taken-down account write (and be read) again.
    Activate {
        /// The handle or DID.
        account: String,
    },
    /// Take an account down: its sessions end, it cannot log in, and its
    /// repository neither writes nor reads until `activate`.
    Takedown {
        /// The handle or DID.
        account: String,
    },
    /// Delete an account (its handle becomes free, its sessions and app
    /// passwords end). Say what becomes of its repository:
    /// --keep-repository or --delete-repository.
    Delete {
        /// The handle or DID.
        account: String,
        /// Keep the account's repository and its records.
        #[arg(long, required_unless_present = "delete_repository")]
        keep_repository: bool,
        /// Delete the account's repository too: its records, history,
        /// indexes and declarations (blocks no other repository shares go
        /// at the next `gc`).
        #[arg(long, conflicts_with = "keep_repository")]
        delete_repository: bool,
    },
}

impl AccountCommand {
    pub(crate) fn writes(&self) -> bool {
        !matches!(self, Self::List | Self::Show { .. })
    }

    /// The account (handle or DID) the command acts on, when it names one.
    pub(crate) fn account(&self) -> Option<&str> {
        match self {
            Self::Show { account }
            | Self::SetPassword { account, .. }
            | Self::Deactivate { account }
            | Self::Activate { account }
            | Self::Takedown { account }
            | Self::Delete { account, .. } => Some(account),
            Self::Create { .. } | Self::List => None,
        }
    }
}

#[derive(Debug, Subcommand)]
pub(crate) enum KeyCommand {
    /// Make a signing key: its private key goes to a new file (PKCS #8 PEM,
    /// mode 0600, never overwritten); prints its public key as a did:key.
    Generate {
        /// The curve.
        #[arg(long = "type", value_enum, default_value = "k256")]
        curve: CurveArg,
        /// The private key file to create.
        #[arg(long)]
        out: PathBuf,
    },
    /// Print the repository's public signing key (did:key), its key file,
    /// and every key its history was signed with.
    Show,
    /// Sign the repository's next commits with another key (or start
    /// signing a repository that had none); earlier keys stay known, so the
    /// history they signed still verifies.
    Rotate {
        /// The new private key file (from `datarepo key generate`).
        #[arg(long)]
        signing_key: PathBuf,
    },
}

/// A key's curve on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum CurveArg {
    /// NIST P-256 (secp256r1).
    P256,
    /// secp256k1 (AT Protocol's usual repository key).
    K256,
}

impl From<CurveArg> for Curve {
    fn from(c: CurveArg) -> Self {
        match c {
            CurveArg::P256 => Curve::P256,
            CurveArg::K256 => Curve::K256,
        }
    }
}

impl KeyCommand {
    pub(crate) fn writes(&self) -> bool {
        matches!(self, Self::Rotate { .. })
    }

    pub(crate) fn needs_store(&self) -> bool {
        !matches!(self, Self::Generate { .. })
    }
}
