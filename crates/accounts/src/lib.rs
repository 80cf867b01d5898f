//! Accounts and sessions: many users on one server, each writing only the
//! repository of their own DID.
//!
//! An [`Account`](account::Account) has a DID, a handle, a password
//! (Argon2id, stored as a PHC string: [`password`]), an optional email and
//! a status, and owns the repository named by its DID. Accounts and the
//! refresh tokens of open sessions live in the same store as everything
//! else, under the keys `docs/storage-keys.md` gives ([`Accounts`]).
//! Sessions are AT Protocol's: an access JWT (short-lived, verified without
//! a store read) and a refresh JWT whose id is stored, so that logging out
//! revokes it ([`tokens`]).
//!
//! No clock and no randomness are read here: callers pass the time and the
//! random bytes (salts, token ids).

#![warn(clippy::unwrap_used)]

pub mod account;
pub mod app_passwords;
mod error;
pub mod invites;
pub mod login_limits;
pub mod password;
pub mod restore;
pub mod sessions;
pub mod storage;
pub mod tokens;

pub use error::Error;
pub use storage::Accounts;
