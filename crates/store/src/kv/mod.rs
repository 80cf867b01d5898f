//! [`Kv`](interface::Kv): the small ordered key/value interface datarepo
//! needs, with an in-memory implementation for tests
//! ([`memory`]) and a SlateDB one ([`slate`]).
//!
//! One direction of use: [`interface`] and [`local_reads`] import no
//! sibling; [`location`] puts a local directory's object store behind
//! [`local_reads`]; [`options`] reads a [`Location`](location::Location)'s
//! medium; [`memory`] and [`slate`] implement the interface; [`read_socket`] lets
//! a local store's writer answer other processes' reads, and [`slate`]'s
//! reader use it; [`reader_manifests`] collects the manifests a local
//! store's readers leave, at their close.

pub(crate) mod interface;
pub(crate) mod local_reads;
pub(crate) mod location;
pub(crate) mod memory;
pub(crate) mod options;
#[cfg(unix)]
pub(crate) mod read_socket;
pub(crate) mod reader_manifests;
pub(crate) mod slate;
