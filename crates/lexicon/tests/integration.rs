//! The crate's integration tests: one behaviour per file, each file a module
//! of this one test binary (one link instead of one per file).

mod common;

mod contradictory_lexicons_are_named;
mod datetimes_vs_atproto_lexicon;
mod divergences;
mod formats_vs_atproto;
mod real_lexicons_vs_atproto;
mod records_vs_atproto_lexicon;
