//! [`TidGenerator`]: strictly increasing TIDs from an injected clock.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::{
    error::Error,
    tid::{MAX_CLOCK_ID, MAX_TID_MICROS, Tid},
};

/// A source of wall-clock time in microseconds since the Unix epoch.
///
/// The clock may be coarse, stand still or step backwards; the generator
/// stays strictly increasing regardless.
pub trait Clock: Send + Sync {
    /// Now, in microseconds since the Unix epoch.
    fn now_micros(&self) -> u64;
}

/// The system's real-time clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[allow(clippy::disallowed_methods)] // the one sanctioned ambient clock
    fn now_micros(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
    }
}

impl<F: Fn() -> u64 + Send + Sync> Clock for F {
    fn now_micros(&self) -> u64 {
        self()
    }
}

/// Makes TIDs that are strictly increasing and never repeat, across threads.
///
/// Lock-free: the last TID issued lives in one atomic, and each call claims
/// `max(clock now, last + 1 µs)` with a compare-and-swap. Many TIDs in one
/// microsecond, or a clock that steps backwards, make the generator run
/// ahead of the clock ([`TidGenerator::lead_micros`]) until the clock
/// catches up. The clock id is fixed for the generator's lifetime.
///
/// # Examples
///
/// ```
/// use rkey::TidGenerator;
///
/// let tids = TidGenerator::builder()
///     .clock(|| 1_700_000_000_000_000)
///     .clock_id(7)
///     .build()
///     .unwrap();
/// let a = tids.next_tid().unwrap();
/// let b = tids.next_tid().unwrap();
/// assert!(a < b);
/// assert_eq!(a.clock_id(), 7);
/// ```
#[derive(Debug)]
pub struct TidGenerator<C = SystemClock> {
    clock: C,
    clock_id: u16,
    /// Raw value of the last TID issued or resumed from (0 when neither).
    last: AtomicU64,
}

/// Configures a [`TidGenerator`]; see [`TidGenerator::builder`].
#[derive(Debug)]
#[must_use]
pub struct TidGeneratorBuilder<C> {
    clock: C,
    clock_id: Option<u16>,
    resume_after: Option<Tid>,
}

impl TidGenerator<SystemClock> {
    /// A builder with the system clock, a random clock id and no history.
    pub fn builder() -> TidGeneratorBuilder<SystemClock> {
        TidGeneratorBuilder {
            clock: SystemClock,
            clock_id: None,
            resume_after: None,
        }
    }
}

impl<C> TidGeneratorBuilder<C> {
    /// Uses `clock` instead of the system clock.
    pub fn clock<C2: Clock>(self, clock: C2) -> TidGeneratorBuilder<C2> {
        TidGeneratorBuilder {
            clock,
            clock_id: self.clock_id,
            resume_after: self.resume_after,
        }
    }

    /// Uses this clock id (0–1023) instead of a random one.
    pub fn clock_id(mut self, clock_id: u16) -> Self {
        self.clock_id = Some(clock_id);
        self
    }

    /// Makes every TID strictly greater than `last`, e.g. the newest TID
    /// persisted before a restart.
    pub fn resume_after(mut self, last: Tid) -> Self {
        self.resume_after = Some(last);
        self
    }
}

impl<C: Clock> TidGeneratorBuilder<C> {
    /// Builds the generator; a missing clock id is drawn from `random`.
    ///
    /// # Errors
    ///
    /// [`Error::TidClockIdRange`] if the clock id exceeds 1023.
    pub fn build_with_random(self, random: impl FnOnce() -> u64) -> Result<TidGenerator<C>, Error> {
        let clock_id = match self.clock_id {
            Some(id) if id > MAX_CLOCK_ID => {
                return Err(Error::TidClockIdRange {
                    clock_id: u64::from(id),
                });
            }
            Some(id) => id,
            None => (random() & u64::from(MAX_CLOCK_ID)) as u16,
        };
        Ok(TidGenerator {
            clock: self.clock,
            clock_id,
            last: AtomicU64::new(self.resume_after.map_or(0, Tid::as_u64)),
        })
    }

    /// Builds the generator; a missing clock id is drawn from the operating
    /// system's random source.
    ///
    /// # Errors
    ///
    /// [`Error::TidClockIdRange`] if the clock id exceeds 1023.
    pub fn build(self) -> Result<TidGenerator<C>, Error> {
        #[allow(clippy::disallowed_methods)] // the one sanctioned ambient randomness
        self.build_with_random(|| getrandom::u64().unwrap_or(0))
    }
}

impl<C: Clock> TidGenerator<C> {
    /// The next TID: greater than every TID this generator issued or resumed
    /// after, and not below the clock's current time.
    ///
    /// # Errors
    ///
    /// [`Error::TidExhausted`] if the next timestamp would not fit in 53
    /// bits (a clock or resumed TID past the year 2255). The generator is
    /// unchanged by a failed call.
    pub fn next_tid(&self) -> Result<Tid, Error> {
        let now = self.clock.now_micros();
        let from_clock = (now.min(MAX_TID_MICROS + 1) << 10) | u64::from(self.clock_id);
        let mut last = self.last.load(Ordering::Relaxed);
        loop {
            let next = from_clock.max(self.successor(last)?);
            if next >> 10 > MAX_TID_MICROS {
                return Err(Error::TidExhausted);
            }
            match self
                .last
                .compare_exchange_weak(last, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Ok(Tid::from_u64(next)),
                Err(current) => last = current,
            }
        }
    }

    /// The smallest value with this generator's clock id above `last`.
    fn successor(&self, last: u64) -> Result<u64, Error> {
        let same_micro = (last & !0x3ff) | u64::from(self.clock_id);
        if same_micro > last {
            return Ok(same_micro);
        }
        (last >> 10)
            .checked_add(1)
            .map(|micros| (micros << 10) | u64::from(self.clock_id))
            .filter(|v| v >> 10 <= MAX_TID_MICROS)
            .ok_or(Error::TidExhausted)
    }

    /// This generator's clock id.
    #[must_use]
    pub fn clock_id(&self) -> u16 {
        self.clock_id
    }

    /// The last TID issued (or resumed after), if any.
    #[must_use]
    pub fn last(&self) -> Option<Tid> {
        match self.last.load(Ordering::Relaxed) {
            0 => None,
            v => Some(Tid::from_u64(v)),
        }
    }

    /// How many microseconds the last TID issued is ahead of the clock now
    /// (0 when the clock is ahead). A large lead means TIDs are being made
    /// faster than one per microsecond, or the clock stepped backwards.
    #[must_use]
    pub fn lead_micros(&self) -> u64 {
        let last_micros = self.last.load(Ordering::Relaxed) >> 10;
        last_micros.saturating_sub(self.clock.now_micros())
    }
}
