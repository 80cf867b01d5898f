//! [`Kv`](interface::Kv): the small ordered key/value interface datarepo
//! needs, with an in-memory implementation for tests
//! ([`memory`]) and a SlateDB one ([`slate`]).
//!
//! One direction of use: [`interface`] and [`location`] import no sibling;
//! [`options`] reads a [`Location`](location::Location)'s medium;
//! [`memory`] and [`slate`] implement the interface.

pub(crate) mod interface;
pub(crate) mod location;
pub(crate) mod memory;
pub(crate) mod options;
pub(crate) mod slate;
