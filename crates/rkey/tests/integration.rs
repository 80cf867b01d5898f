//! The crate's integration tests: one behaviour per file, each file a module
//! of this one test binary (one link instead of one per file).
//! Tests that measure the process's allocations stay binaries of their own.

mod atproto_syntax_oracle;
mod key_type;
mod nsid;
mod serde_validation;
mod spec_examples;
mod tid_properties;
