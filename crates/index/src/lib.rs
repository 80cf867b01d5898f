//! Field indexes: roaring bitmaps under FeatureBase txkeys, kept in the
//! same atomic write as every commit, and the `--where` queries over them.
//!
//! Layout (`docs/storage-keys.md`, `docs/indexes.md`): each indexed
//! collection has a *scope* (a `u32`, the txkey's index name in decimal);
//! each record of it a *column* (dense, first-written order, never reused).
//! Bitmap rows live in containers of 2^16 columns under record type `0x6`:
//!
//! - `.columns` / `existence`, row 0: the collection's live columns;
//! - a keyword index at `path`: field `path`, view `standard`, one row per
//!   dictionary value (record types `0xB`/`0xC`), and view `existence`,
//!   row 0: records with a value;
//! - an integer or datetime index: field `path`, view `bsig_<path>`, a
//!   bit-sliced index per *slot* (the n-th value at the path): rows
//!   `66·slot + 0` exists, `+ 1` sign, `+ 2 + i` magnitude bit `i`; and the
//!   `existence` view as for keywords.
//!
//! A `$` in a path is written `=24` in txkey names (FeatureBase reserves `$`).
//!
//! What is here, by module: `values` (index kinds, keyword and number
//! values of a record), `cbor` (values read straight from dag-cbor bytes),
//! `query` (the `--where` language), `matching` (an expression on one
//! record, no index), `columns` (rkey ↔ column), `build`
//! (a whole scope from a tree or a record stream), `maintain` (one
//! commit's changes), `eval` (plans and bitmap evaluation) and `cache`.
//! The crate knows stores and trees, not repositories: the `repo` crate
//! declares indexes, holds the cache and writes each commit's changes in
//! the commit's batch.

mod build;
mod cache;
mod cbor;
mod columns;
mod decl;
mod error;
mod eval;
mod fields;
mod histogram;
mod maintain;
mod matching;
mod query;
mod results;
mod rows;
mod values;
mod words;

pub use error::Error;

pub use build::{
    BuildColumns, BuildProgress, BuiltRows, build_scope, compute_at, compute_given, compute_scope,
    write_built,
};

#[doc(hidden)]
pub mod fuzzing;

pub use build::ComputedScopes;
pub use cache::IndexCache;
pub use columns::{Packed, Walk, column_of, differences as column_differences, load_packed};
pub use decl::{
    Declared, Epoch, IndexDecl, declarations, declarations_by_collection, encode_decl, epoch,
    free_scope, raise_epoch,
};
pub use eval::{Matches, Plan, Reader, plan as eval_plan};
pub use fields::{RecordFields, field_text};
pub use histogram::{Bucket, Interval, MAX_BUCKETS, buckets_json, histogram, parse_bound};
pub use maintain::{CommitIndex, IndexWrite, KNOWN_ROWS_LIMIT, KnownRows, ScopeCounters};
pub use matching::RecordCondition;
pub use query::{Cmp, Cond, Expr, Literal, Op, parse as parse_where};
pub use results::{Group, Stats, TopValue, groups_json_text, groups_page};
pub use rows::{
    RowDeltas, RowId, container_key, decode_column, decode_container, delete_index_data,
    delete_range, delete_scope, field_name, for_each_stored_container, is_bsi_row, put_rows,
    split_containers,
};
pub use values::{IndexKind, Keyword};
pub use words::{QueryWord, query_words, words};
