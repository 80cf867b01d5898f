//! Every byte datarepo writes as a key to its ordered KV store is built and
//! parsed here, and nowhere else.
//!
//! - [`KeyPrefix`] / [`RecordTag`]: the 2-byte `[version, record_tag]` prefix
//!   of every key (OpenData RFC 0001), and [`KeyRange`] helpers for scans.
//! - [`KeyBuilder`] / [`KeyReader`]: order-preserving fields after the
//!   prefix (big-endian integers, sign-flipped `i64`, escaped and
//!   terminated strings), so byte order of keys equals tuple order.
//! - [`records`]: datarepo's record types and their key layouts, and
//!   [`records::decode_key`] to explain any stored key.
//! - [`txkey`]: FeatureBase's roaring-container keys, short and full forms,
//!   byte-exact, with checked names.
//!
//! Byte diagrams of every layout are in `docs/storage-keys.md`.
//!
//! This crate is not: a KV store, a value codec, or anything that does I/O.
//! Decoding any byte string returns a value or an [`Error`]; it never panics.

#![warn(clippy::unwrap_used)]

mod error;
mod fields;
mod prefix;
pub mod records;
pub mod txkey;

pub use error::Error;
pub use fields::{KeyBuilder, KeyReader, encode_terminated};
pub use prefix::{CURRENT_VERSION, KeyPrefix, KeyRange, RecordTag, prefix_successor};
pub use records::RecordType;
