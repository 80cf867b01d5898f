//! The crate's integration tests: one behaviour per file, each file a module
//! of this one test binary (one link instead of one per file).
//! Tests that measure the process's allocations stay binaries of their own.

mod account_keys;
mod blob_keys;
mod decoders_never_panic;
mod field_index_keys;
mod fields_order;
mod history_and_count_keys;
mod merged_event_keys;
mod prefix_golden;
mod record_keys;
mod stream_event_keys;
mod txkey_golden;
mod txkey_ranges;
