//! What a new repository is made with: the Pail configuration and the
//! clock its TIDs come from.

use std::sync::Arc;

use pail::ShardConfig;
use rkey::{Tid, TidGenerator};

use crate::error::Error;

/// The Pail `maxSize` of new repositories: the smallest power of two that
/// holds the worst unsplittable shard (see [`default_shard_config`]).
pub const DEFAULT_MAX_SHARD_SIZE: u64 = 8192;

/// The Pail `maxKeyLength` of new repositories.
pub const DEFAULT_MAX_KEY_LENGTH: u64 = 24;

/// The Pail configuration of new repositories, chosen by benchmark under a
/// safety bound (see `docs/repo.md`).
///
/// Smaller shards mean less to re-encode and re-hash per commit, but a
/// shard must never be too full to split: Pail splits an oversized shard
/// only by a prefix that two of its entries share, so a shard whose
/// entries all start with different characters cannot be split. Record
/// paths use 68 characters (letters, digits, `._:~-/`), so such a shard has
/// at most 68 entries, each at most `[key, [link, data]]` = 86 bytes plus
/// its key (at most `maxKeyLength` = 24 characters and a 2-byte header):
/// 68 × 112 + 38 bytes of map = 7,654 bytes, under 8,192. With this
/// configuration no valid record is ever refused with a shard-limit error
/// (pinned by the `no_shard_limit` test).
#[must_use]
pub fn default_shard_config() -> ShardConfig {
    ShardConfig {
        max_size: DEFAULT_MAX_SHARD_SIZE,
        max_key_length: DEFAULT_MAX_KEY_LENGTH,
    }
}

pub(super) type ClockFn = Box<dyn Fn() -> u64 + Send + Sync>;

/// Where TIDs come from: a clock (microseconds since the Unix epoch) and a
/// clock id. Injected so that library code reads no ambient clock.
#[derive(Clone)]
pub struct Env {
    clock: Arc<dyn Fn() -> u64 + Send + Sync>,
    clock_id: u16,
}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Env")
            .field("clock_id", &self.clock_id)
            .finish_non_exhaustive()
    }
}

impl Env {
    /// An environment with this clock and clock id (0..=1023).
    pub fn new(clock: impl Fn() -> u64 + Send + Sync + 'static, clock_id: u16) -> Self {
        Self {
            clock: Arc::new(clock),
            clock_id,
        }
    }

    /// Microseconds since the Unix epoch, by this environment's clock.
    pub(crate) fn now_micros(&self) -> u64 {
        (self.clock)()
    }

    pub(super) fn tids(&self, resume_after: Option<Tid>) -> Result<TidGenerator<ClockFn>, Error> {
        let clock = Arc::clone(&self.clock);
        let clock: ClockFn = Box::new(move || clock());
        let mut builder = TidGenerator::builder().clock(clock).clock_id(self.clock_id);
        if let Some(tid) = resume_after {
            builder = builder.resume_after(tid);
        }
        Ok(builder.build_with_random(|| 0)?)
    }
}
