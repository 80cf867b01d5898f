//! Naming syntax for datarepo: record keys, their key types, NSIDs and TIDs.
//!
//! - [`RecordKey`] / [`validate_record_key`]: a record's name within its
//!   collection, `^[A-Za-z0-9._:~-]{1,512}$` and not `.` or `..`.
//! - [`KeyType`]: the rule a collection declares for its keys (`tid`,
//!   `literal:<value>`, `any`, `nsid`), with [`KeyType::check`].
//! - [`Nsid`] / [`validate_nsid`]: collection names such as `app.bsky.feed.post`.
//! - [`validate_did`], [`validate_handle`], [`validate_repo_id`]: the
//!   identifiers that name repositories.
//! - [`Tid`]: 64-bit timestamp identifiers in their 13-character form, and
//!   [`TidGenerator`], which makes them strictly increasing from an injected
//!   [`Clock`].
//!
//! The syntax agrees with AT Protocol's (`@atproto/syntax`), checked by a
//! differential test. Every fallible call returns [`Error`], which says
//! what is wrong and where; nothing here panics on any input.
//!
//! This crate is not: an I/O layer, a Lexicon validator, or a URI parser.
//!
//! ```
//! use rkey::{KeyType, RecordKey, Tid};
//!
//! let key: RecordKey = "3jui7kd54zh2y".parse().unwrap();
//! assert!(KeyType::Tid.check(&key).is_ok());
//! let tid = Tid::parse(key.as_str()).unwrap();
//! assert_eq!(tid.to_string(), key.as_str());
//! ```

#![warn(clippy::unwrap_used)]

mod error;
mod ident;
mod key_type;
mod nsid;
mod record_key;
mod tid;
mod tid_generator;

pub use error::{Error, NsidRule};
pub use ident::{MAX_DID_LEN, MAX_HANDLE_LEN, validate_did, validate_handle, validate_repo_id};
pub use key_type::KeyType;
pub use nsid::{MAX_NSID_LEN, Nsid, validate_nsid};
pub use record_key::{MAX_RECORD_KEY_LEN, RecordKey, validate_record_key};
pub use tid::{MAX_CLOCK_ID, MAX_TID_MICROS, TID_LEN, Tid};
pub use tid_generator::{Clock, SystemClock, TidGenerator, TidGeneratorBuilder};

/// A byte table, true exactly for ASCII letters, digits and `extra`.
const fn ascii_alphanumeric_and(extra: &[u8]) -> [bool; 256] {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = (b as u8).is_ascii_alphanumeric();
        b += 1;
    }
    let mut i = 0;
    while i < extra.len() {
        table[extra[i] as usize] = true;
        i += 1;
    }
    table
}
