//! datarepo's repository model over the `store` crate.
//!
//! A store holds any number of repositories ([`Repos`]), each named by a
//! DID or handle. A [`Repository`] holds collections (NSIDs) of records;
//! each collection declares a record key type ([`rkey::KeyType`]), directly
//! or through an AT Protocol Lexicon document. Records are AT Protocol JSON
//! ([`Record`]) stored as dag-cbor blocks; the repository's Pail maps
//! `collection/rkey` to record CIDs, and every write is a commit
//! ([`CommitData`]: `{repo, rev, data, prev}`).
//!
//! - Writes: [`Repository::apply_writes`] (creates, updates, deletes as one
//!   commit, with optional compare-and-swap on the commit and on records);
//!   records are validated against their collection's Lexicon
//!   ([`Repository::apply_writes_validated`], [`Repository::add_lexicons`];
//!   the rules are the `lexicon` crate's).
//! - Reads: [`Repository::get_record`], [`Repository::list_records`].
//! - History: [`Repository::log`], [`Repository::record_at`],
//!   [`Repository::diff`].
//! - CAR v1: [`Repository::export_car`], [`Repos::import_car`].
//! - Integrity: [`Repos::check`] reads a repository back and reports damage.
//! - Signatures: a repository with a [`SigningKey`] signs every commit;
//!   [`verify_car`] and [`verify_record`] check exports and record proofs
//!   offline against public keys ([`PublicKey`], `did:key`).
//!
//! - Field indexes: the `index` crate keeps and queries them; this crate
//!   declares them and writes each commit's index changes in its batch
//!   ([`Repository::query`], [`Repository::add_index`]).
//!
//! Clocks are injected ([`Env`]); nothing here reads the system time.

#![warn(clippy::unwrap_used)]

mod blob_gc;
mod blobs;
mod car;
mod check;
mod commit;
mod error;
mod event;
mod history;
mod inspect;
mod keys;
mod lexicons;
mod parallel;
mod record;
mod repository;
mod search;
mod signing;
mod stream;
mod validation;

pub use blob_gc::{BlobGcReport, DEFAULT_BLOB_TEMP_TTL_SECS};
pub use blobs::{BlobCopyReport, BlobInfo, BlobRef, blob_refs, blob_type};
pub use car::declarations::AccountBackup;
pub use car::export::ExportReport;
pub use car::import::{ImportOptions, ImportProgress, ImportReport};
pub use car::verify::{
    VerifiedCommit, VerifiedRecord, VerifyOptions, VerifyReport, verify_car, verify_record,
};
pub use check::{CheckOptions, CheckProgress, CheckReport};
pub use commit::{CommitData, SIGNED_COMMIT_VERSION};
pub use error::Error;
pub use event::{
    CommitEvent, Frame, RepoOp, decode_frame, error_frame, frame_event, info_frame,
    stored_event_time,
};
pub use index::{
    Bucket, Cmp, Cond, Expr, Group, IndexDecl, IndexKind, Keyword, Literal, Op, RecordCondition,
    RecordFields, Stats, TopValue, buckets_json, field_text, groups_json_text, groups_page,
    parse_where,
};
pub use inspect::{PailStep, RecordHistory, RecordVersion};
pub use keys::{CurrentKey, SigningKeys};
pub use lexicon::{Document as LexiconDocument, Lexicons};
pub use lexicons::{InvalidRecord, LexiconAdded, REPORTED_FAILURES};
pub use record::Record;
pub use repository::collection::CollectionInfo;
pub use repository::env::{
    DEFAULT_MAX_KEY_LENGTH, DEFAULT_MAX_SHARD_SIZE, Env, default_shard_config,
};
pub use repository::head::{HeadInfo, MAX_REV_AHEAD};
pub use repository::log::{LogEntry, RecordDiff};
pub use repository::paths::record_uri;
pub use repository::repos::Repos;
pub use repository::state::{DEFAULT_INDEX_CACHE_BYTES, Repository};
pub use repository::write::{CommitResult, Write, WriteResult};
pub use search::build::{IndexProgress, MAX_HELD_CHANGES};
pub use search::query::{MAX_GROUP_PATHS, QueryPage};
pub use signing::{Curve, KeyError, PublicKey, SignatureError, SigningKey};
pub use stream::{
    AccountChange, STREAM_DICTIONARY_VERSION, account_stream_events, compress_stream_event,
    stream_dictionary, stream_dictionary_id, stream_event_forms,
};
pub use validation::{Validation, ValidationStatus};
