//! Limits on failed logins, per account and per client address, so that
//! passwords cannot be guessed at the server's hashing speed.
//!
//! Fixed windows: at most [`Limit::failures`] failed logins per
//! [`Limit::window_secs`] for one key; past that, logins for the key are
//! refused until the window ends, whatever the password. Successful
//! logins count nothing. Kept in memory (a restart forgets them), with
//! the time passed in by the caller.

use std::{collections::HashMap, sync::Mutex};

/// A limit: so many failures per window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    /// Failed logins allowed in one window.
    pub failures: u32,
    /// The window's length, in seconds.
    pub window_secs: u64,
}

/// Failed logins allowed per account (by the identifier given, so that
/// unknown accounts are limited alike): 10 per 5 minutes.
pub const PER_ACCOUNT: Limit = Limit {
    failures: 10,
    window_secs: 5 * 60,
};

/// Failed logins allowed per client address: 50 per 5 minutes.
pub const PER_ADDRESS: Limit = Limit {
    failures: 50,
    window_secs: 5 * 60,
};

/// Keys remembered before windows that have ended are dropped.
const PRUNE_ABOVE: usize = 100_000;

/// Why a login was refused before its password was checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// The limit reached.
    pub limit: Limit,
    /// When logins for the key work again (seconds since the Unix epoch).
    pub reset_at: u64,
}

/// Failed logins per key in the current window.
#[derive(Debug, Default)]
pub struct LoginLimits {
    /// Key → (window start, failures in it).
    windows: Mutex<HashMap<String, (u64, u32)>>,
}

impl LoginLimits {
    /// No failures yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Refuses a login whose keys have reached their limits at `now`.
    ///
    /// # Errors
    ///
    /// The first [`Refusal`] found.
    pub fn check(&self, keys: &[(&str, Limit)], now: u64) -> Result<(), Refusal> {
        let windows = self
            .windows
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for (key, limit) in keys {
            if let Some((start, failures)) = windows.get(*key)
                && now < start + limit.window_secs
                && *failures >= limit.failures
            {
                return Err(Refusal {
                    limit: *limit,
                    reset_at: start + limit.window_secs,
                });
            }
        }
        Ok(())
    }

    /// Counts a failed login against each of `keys` at `now`.
    pub fn fail(&self, keys: &[(&str, Limit)], now: u64) {
        let mut windows = self
            .windows
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if windows.len() > PRUNE_ABOVE {
            let longest = PER_ACCOUNT.window_secs.max(PER_ADDRESS.window_secs);
            windows.retain(|_, (start, _)| now < *start + longest);
        }
        for (key, limit) in keys {
            let window = windows.entry((*key).to_owned()).or_insert((now, 0));
            if now >= window.0 + limit.window_secs {
                *window = (now, 0);
            }
            window.1 = window.1.saturating_add(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_PER_MINUTE: Limit = Limit {
        failures: 2,
        window_secs: 60,
    };

    #[test]
    fn a_key_is_refused_past_its_failures_until_its_window_ends() {
        let limits = LoginLimits::new();
        let keys = [("alice", TWO_PER_MINUTE)];
        assert!(limits.check(&keys, 100).is_ok());
        limits.fail(&keys, 100);
        assert!(limits.check(&keys, 101).is_ok());
        limits.fail(&keys, 101);
        assert_eq!(
            limits.check(&keys, 159),
            Err(Refusal {
                limit: TWO_PER_MINUTE,
                reset_at: 160
            })
        );
        // Another key is not affected; the window's end lifts the refusal.
        assert!(limits.check(&[("bob", TWO_PER_MINUTE)], 159).is_ok());
        assert!(limits.check(&keys, 160).is_ok());
        limits.fail(&keys, 160);
        assert!(limits.check(&keys, 161).is_ok());
    }
}
