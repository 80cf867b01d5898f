//! [`Repos`](repos::Repos) (every repository in a store) and
//! [`Repository`](state::Repository) (one of them): writes as commits,
//! reads, history.
//!
//! One direction of use: the data files ([`env`], [`paths`], [`head`],
//! [`collection`], [`write`]) import none of the others; [`state`] holds
//! the repository and what its writers share; [`repos`] creates and opens
//! repositories; the rest each add one concern's methods to
//! [`Repository`](state::Repository): [`apply`] (the write path),
//! [`reads`], [`log`] (history), [`declare`] (collections) and
//! [`signing_keys`].

pub(crate) mod apply;
pub(crate) mod collection;
pub(crate) mod declare;
pub(crate) mod delete;
pub(crate) mod env;
pub(crate) mod head;
pub(crate) mod log;
pub(crate) mod paths;
pub(crate) mod reads;
pub(crate) mod repos;
pub(crate) mod signing_keys;
pub(crate) mod state;
pub(crate) mod write;
