//! The index crate's integration tests, one behaviour per module.

mod words_vs_javascript;
