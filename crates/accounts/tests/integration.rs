//! The crate's integration tests: one behaviour per file, each file a module
//! of this one test binary (one link instead of one per file).

mod accounts_are_unique_and_sessions_close;
mod app_passwords_end_their_sessions;
mod invite_codes_are_used_up;
