//! [`Store`](state::Store): verified blocks, repository heads, the commit
//! log and the record index over a [`Kv`](crate::kv::interface::Kv), with atomic,
//! compare-and-swap commits.
//!
//! One direction of use: [`commit`], [`keys`] and [`index_value`] describe
//! what is stored and import no sibling but each other's constants;
//! [`state`] holds the store; the rest each add one concern's methods to
//! [`Store`](state::Store): [`write`] (the commit path), [`blocks`],
//! [`heads`] (heads and the commit log), [`records`] (the record index),
//! [`declarations`], [`events`] (the firehose log) and [`merged_events`]
//! (a partitioned store's merged event order).

pub(crate) mod blocks;
pub(crate) mod commit;
pub(crate) mod declarations;
pub(crate) mod events;
pub(crate) mod heads;
pub(crate) mod index_value;
pub(crate) mod keys;
pub(crate) mod merged_events;
pub(crate) mod records;
pub(crate) mod state;
pub(crate) mod write;
