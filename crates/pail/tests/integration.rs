//! The crate's integration tests: one behaviour per file, each file a module
//! of this one test binary (one link instead of one per file).

mod common;

mod diff_and_merge;
mod key_length_boundaries;
mod live_blocks;
mod model_based;
mod reference_bugs;
mod reference_differential;
mod reference_differential_oversized;
mod shard_cids_hash_their_bytes;
mod shard_format;
mod shard_versions_name_their_previous;
