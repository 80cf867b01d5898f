//! `--histogram PATH --interval I`: how many matching records have a value
//! in each bucket, from the bit-sliced values (`Reader::values`).
//!
//! Integer buckets are `[k·w, (k+1)·w)` for integers `k` (negative values
//! floor). Datetime buckets are UTC: a fixed duration (`30s`, `15m`, `1h`,
//! `1d`) counted from the Unix epoch, whole weeks from a Monday (`1w`), or
//! calendar months and years (`1mo`, `1y`, `3mo`).

use std::collections::BTreeMap;

use roaring::RoaringBitmap;

use crate::values::{IndexKind, datetime_micros};

/// Most buckets one histogram may have.
pub const MAX_BUCKETS: usize = 100_000;

const SECOND: i64 = 1_000_000;
const DAY: i64 = 86_400 * SECOND;
/// 1969-12-29, the Monday before the epoch (a Thursday), in microseconds.
const A_MONDAY: i64 = -3 * DAY;

/// A bucket width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interval {
    /// A fixed width: an integer, or microseconds, from 0.
    Width(i64),
    /// Whole weeks of microseconds, from a Monday.
    Weeks(i64),
    /// Calendar months (UTC).
    Months(i64),
}

impl Interval {
    /// `text` as an interval of an index of `kind`.
    ///
    /// # Errors
    ///
    /// A message saying what an interval of that kind looks like.
    pub fn parse(kind: IndexKind, text: &str) -> Result<Self, String> {
        let positive = |n: i64| n > 0;
        match kind {
            IndexKind::Integer => text
                .parse::<i64>()
                .ok()
                .filter(|n| positive(*n))
                .map(Self::Width)
                .ok_or_else(|| {
                    format!("--interval {text:?}: an integer index's interval is a positive width")
                }),
            IndexKind::Datetime => {
                let split = text
                    .find(|c: char| !c.is_ascii_digit())
                    .unwrap_or(text.len());
                let (n, unit) = text.split_at(split);
                let n = n.parse::<i64>().ok().filter(|n| positive(*n));
                let interval = match (n, unit) {
                    (Some(n), "s") => n.checked_mul(SECOND).map(Self::Width),
                    (Some(n), "m") => n.checked_mul(60 * SECOND).map(Self::Width),
                    (Some(n), "h") => n.checked_mul(3600 * SECOND).map(Self::Width),
                    (Some(n), "d") => n.checked_mul(DAY).map(Self::Width),
                    (Some(n), "w") => n.checked_mul(7 * DAY).map(Self::Weeks),
                    (Some(n), "mo") => Some(Self::Months(n)),
                    (Some(n), "y") => n.checked_mul(12).map(Self::Months),
                    _ => None,
                };
                interval.ok_or_else(|| {
                    format!(
                        "--interval {text:?}: a datetime index's interval is a number and a \
                         unit: s, m, h, d, w (from Monday), mo or y (calendar, UTC), e.g. 1d, 15m, 1mo"
                    )
                })
            }
            IndexKind::Keyword | IndexKind::Text => {
                Err("--histogram needs an integer or datetime index".into())
            }
        }
    }

    /// The start of the bucket holding `value` (below the smallest 64-bit
    /// integer for the lowest integer buckets).
    pub(crate) fn start(self, value: i64) -> Option<i128> {
        let value = i128::from(value);
        match self {
            Self::Width(w) => Some(value.div_euclid(i128::from(w)) * i128::from(w)),
            Self::Weeks(w) => {
                let (w, monday) = (i128::from(w), i128::from(A_MONDAY));
                Some((value - monday).div_euclid(w) * w + monday)
            }
            Self::Months(n) => {
                let month = month_index(i64::try_from(value).ok()?)?;
                month_start(month.div_euclid(n) * n).map(i128::from)
            }
        }
    }

    /// The start of the bucket after the one starting at `start`.
    pub(crate) fn next(self, start: i128) -> Option<i128> {
        match self {
            Self::Width(w) | Self::Weeks(w) => Some(start + i128::from(w)),
            Self::Months(n) => {
                month_start(month_index(i64::try_from(start).ok()?)?.checked_add(n)?)
                    .map(i128::from)
            }
        }
    }
}

/// Months since year 0 (UTC) of a time in microseconds.
fn month_index(micros: i64) -> Option<i64> {
    let t = jiff::Timestamp::from_microsecond(micros).ok()?;
    let date = t.to_zoned(jiff::tz::TimeZone::UTC).date();
    Some(i64::from(date.year()) * 12 + i64::from(date.month()) - 1)
}

/// The first microsecond (UTC) of month `index` since year 0.
fn month_start(index: i64) -> Option<i64> {
    let year = i16::try_from(index.div_euclid(12)).ok()?;
    let month = i8::try_from(index.rem_euclid(12) + 1).ok()?;
    let date = jiff::civil::Date::new(year, month, 1).ok()?;
    let zoned = date.to_zoned(jiff::tz::TimeZone::UTC).ok()?;
    Some(zoned.timestamp().as_microsecond())
}

/// A bound given with `--from`/`--to`, read as the index's kind reads
/// values.
///
/// # Errors
///
/// A message naming the bound.
pub fn parse_bound(kind: IndexKind, flag: &str, text: &str) -> Result<i64, String> {
    match kind {
        IndexKind::Integer => text
            .parse()
            .map_err(|_| format!("{flag} {text:?} is not an integer")),
        _ => datetime_micros(text).ok_or_else(|| {
            format!(
                "{flag} {text:?} is not an AT Protocol datetime (e.g. \"2024-01-31T12:00:00Z\")"
            )
        }),
    }
}

/// One bucket: where it starts and how many records have a value in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket {
    /// Its first value (a datetime's, in microseconds); the lowest integer
    /// bucket, which may begin below the smallest 64-bit integer, starts
    /// at it.
    pub start: i64,
    /// Records with a value in it (a record with several counts once).
    pub count: u64,
}

/// `{"buckets": [{"start", "count"}]}`: a datetime bucket's start as RFC
/// 3339 (UTC), an integer one's as a number.
#[must_use]
pub fn buckets_json(kind: IndexKind, buckets: &[Bucket]) -> serde_json::Value {
    let start = |micros: i64| -> serde_json::Value {
        match kind {
            IndexKind::Integer => micros.into(),
            _ => jiff::Timestamp::from_microsecond(micros)
                .map_or(serde_json::Value::Null, |t| t.to_string().into()),
        }
    };
    let items: Vec<serde_json::Value> = buckets
        .iter()
        .map(|b| serde_json::json!({"start": start(b.start), "count": b.count}))
        .collect();
    serde_json::json!({ "buckets": items })
}

/// The buckets of `values` ((column, value), `Reader::values`), those
/// in `[from, to)` only when given: every bucket from the first to the
/// last, empty ones included.
///
/// # Errors
///
/// A message when there would be more than [`MAX_BUCKETS`].
pub fn histogram(
    values: &[(u32, i64)],
    interval: Interval,
    from: Option<i64>,
    to: Option<i64>,
) -> Result<Vec<Bucket>, String> {
    let mut filled: BTreeMap<i128, RoaringBitmap> = BTreeMap::new();
    for &(column, value) in values {
        if from.is_some_and(|f| value < f) || to.is_some_and(|t| value >= t) {
            continue;
        }
        if let Some(start) = interval.start(value) {
            filled.entry(start).or_default().insert(column);
        }
    }
    let first = match from {
        Some(f) => interval.start(f),
        None => filled.keys().next().copied(),
    };
    let last = match to {
        Some(t) => t.checked_sub(1).and_then(|t| interval.start(t)),
        None => filled.keys().next_back().copied(),
    };
    let (Some(first), Some(last)) = (first, last) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    let mut start = Some(first);
    while let Some(s) = start.filter(|s| *s <= last) {
        if out.len() == MAX_BUCKETS {
            return Err(format!(
                "the histogram would have more than {MAX_BUCKETS} buckets: widen --interval or narrow --from/--to"
            ));
        }
        out.push(Bucket {
            start: i64::try_from(s.max(i128::from(i64::MIN))).unwrap_or(i64::MAX),
            count: filled.get(&s).map_or(0, RoaringBitmap::len),
        });
        start = interval.next(s);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> i64 {
        datetime_micros(text).unwrap()
    }

    fn at_(text: &str) -> i128 {
        i128::from(at(text))
    }

    #[test]
    fn buckets_floor_and_follow_the_calendar() {
        let width = Interval::parse(IndexKind::Integer, "3").unwrap();
        assert_eq!(width.start(-5), Some(-6));
        assert_eq!(width.start(5), Some(3));
        assert_eq!(width.start(i64::MIN), Some(i128::from(i64::MIN) - 1));
        let week = Interval::parse(IndexKind::Datetime, "1w").unwrap();
        // 2024-01-01 was a Monday.
        assert_eq!(
            week.start(at("2024-01-07T23:59:59Z")),
            Some(at_("2024-01-01T00:00:00Z"))
        );
        assert_eq!(
            week.start(at("2024-01-08T00:30:00+01:00")),
            Some(at_("2024-01-01T00:00:00Z"))
        );
        assert_eq!(
            week.start(at("2024-01-08T00:00:00Z")),
            Some(at_("2024-01-08T00:00:00Z"))
        );
        let month = Interval::parse(IndexKind::Datetime, "1mo").unwrap();
        assert_eq!(
            month.start(at("2024-02-29T23:00:00-02:00")),
            Some(at_("2024-03-01T00:00:00Z"))
        );
        assert_eq!(
            month.next(at_("2024-12-01T00:00:00Z")),
            Some(at_("2025-01-01T00:00:00Z"))
        );
        let quarter = Interval::parse(IndexKind::Datetime, "3mo").unwrap();
        assert_eq!(
            quarter.start(at("2024-05-17T00:00:00Z")),
            Some(at_("2024-04-01T00:00:00Z"))
        );
        let year = Interval::parse(IndexKind::Datetime, "1y").unwrap();
        assert_eq!(
            year.start(at("1969-07-20T20:17:00Z")),
            Some(at_("1969-01-01T00:00:00Z"))
        );
        let quarter_hour = Interval::parse(IndexKind::Datetime, "15m").unwrap();
        assert_eq!(
            quarter_hour.start(at("2024-01-01T10:44:59Z")),
            Some(at_("2024-01-01T10:30:00Z"))
        );
        for bad in ["", "0d", "1q", "d", "-1h"] {
            assert!(Interval::parse(IndexKind::Datetime, bad).is_err(), "{bad}");
        }
        assert!(Interval::parse(IndexKind::Integer, "0").is_err());
    }

    #[test]
    fn empty_buckets_between_are_kept_and_records_count_once() {
        let values = [(1, 0), (1, 1), (2, 7), (3, -1)];
        let buckets = histogram(&values, Interval::Width(3), None, None).unwrap();
        let got: Vec<(i64, u64)> = buckets.iter().map(|b| (b.start, b.count)).collect();
        assert_eq!(got, vec![(-3, 1), (0, 1), (3, 0), (6, 1)]);
        let bounded = histogram(&values, Interval::Width(3), Some(0), Some(6)).unwrap();
        let got: Vec<(i64, u64)> = bounded.iter().map(|b| (b.start, b.count)).collect();
        assert_eq!(got, vec![(0, 1), (3, 0)]);
        assert!(histogram(&[(1, 0), (2, i64::MAX)], Interval::Width(1), None, None).is_err());
    }
}
