//! The reference's verdict on a record's `datetime`: `@atproto/lexicon`
//! checks it with `@atproto/syntax`'s `isDatetimeStringLenient`, which
//! accepts what the `iso-datestring-validator` package (2.2.2) accepts, and
//! otherwise what its strict check (`isDatetimeString`: a regular
//! expression, then JavaScript's `Date`) accepts. Both are ported here as
//! they behave, quirks included, so that records get the reference's
//! verdicts (`tests/datetimes_vs_atproto_lexicon.rs`):
//!
//! - `iso-datestring-validator` builds its regular expressions with the
//!   input's first non-digit character as the separator, unescaped (so
//!   `.` matches anything, and a separator that breaks the expression
//!   fails the check); it takes any time zone-less ISO 8601 time, `±hhmm`
//!   offsets, and fractions of up to 9 digits.
//! - The strict check's `Date` rolls a day past the month's end over
//!   (`2023-02-30` is March 2), refuses day 00 and second 60, and the UTC
//!   year must be 0..=9999.
//!
//! JavaScript's `.` also refuses `\r`, U+2028 and U+2029, which
//! `fancy_regex`'s `.` matches: such inputs are the one known difference.
//! Query literals and revs keep the strict check ([`crate::formats`]).

use std::sync::{Arc, LazyLock, Mutex};

use foldhash::HashMap;

/// The first character that is not an ASCII digit, or "" (JavaScript's
/// `/\D/.exec(s)`).
fn separator(s: &str) -> &str {
    s.char_indices()
        .find(|(_, c)| !c.is_ascii_digit())
        .map_or("", |(i, c)| &s[i..i + c.len_utf8()])
}

/// Compiled patterns by text, for the patterns built with an ASCII
/// separator (a bounded set: four shapes, 128 separators each).
static COMPILED: LazyLock<Mutex<HashMap<String, Option<Arc<fancy_regex::Regex>>>>> =
    LazyLock::new(|| Mutex::new(HashMap::default()));

/// `new RegExp(pattern).test(s)`; a pattern that does not compile throws,
/// which the reference's caller takes as "not valid" (`None`).
fn test(pattern: &str, separator: &str, s: &str) -> Option<bool> {
    let compile = || fancy_regex::Regex::new(pattern).ok().map(Arc::new);
    let regex = if separator.is_ascii() {
        let mut cache = COMPILED.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .entry(pattern.to_owned())
            .or_insert_with(compile)
            .clone()
    } else {
        compile()
    };
    regex?.is_match(s).ok()
}

fn valid_date(s: &str, t: &str) -> Option<bool> {
    test(
        &format!(
            "^(?!0{{4}}{t}0{{2}}{t}0{{2}})((?=[0-9]{{4}}{t}(((0[^2])|1[0-2])|02(?={t}(([0-1][0-9])|2[0-8]))){t}[0-9]{{2}})|(?=((([13579][26])|([2468][048])|(0[48]))0{{2}})|([0-9]{{2}}((((0|[2468])[48])|[2468][048])|([13579][26]))){t}02{t}29))([0-9]{{4}}){t}(?!((0[469])|11){t}31)((0[1,3-9]|1[0-2])|(02(?!{t}3))){t}(0[1-9]|[1-2][0-9]|3[0-1])$"
        ),
        t,
        s,
    )
}

fn valid_offset(s: &str, plus: bool, r: &str) -> Option<bool> {
    let pattern = if plus {
        format!(
            "^(0(?!(2{r}4)|0{r}3)|1(?=([0-1]|2(?={r}[04])|[34](?={r}0))))([03469](?={r}[03])|[17](?={r}0)|2(?={r}[04])|5(?={r}[034])|8(?={r}[04])){r}([03](?=0)|4(?=5))[05]$"
        )
    } else {
        format!("^(0(?=[^0])|1(?=[0-2]))([39](?={r}[03])|[0-24-8](?={r}00)){r}[03]0$")
    };
    test(&pattern, r, s)
}

fn valid_time(s: &str, t: &str) -> Option<bool> {
    let time = format!(
        "^([0-1]|2(?=([0-3])|4{t}00))[0-9]{t}[0-5][0-9]({t}([0-5]|6(?=0))[0-9])?(.[0-9]{{1,9}})?$"
    );
    if !s.contains(['Z', '+', '-']) {
        return test(&time, t, s);
    }
    if s.ends_with('Z') {
        return test(&time, t, &s.replacen('Z', "", 1));
    }
    let plus = s.contains('+');
    let mut parts = s.split(['+', '-']);
    let (before, after) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    Some(test(&time, t, before)? && valid_offset(after, plus, separator(after))?)
}

/// The time part's separator: JavaScript's
/// `/([^Z+\-\d])(?=\d+\1)/` — a character that is not `Z`, a sign or a
/// digit, followed by digits and itself again.
fn time_separator(s: &str) -> &str {
    let chars: Vec<(usize, char)> = s.char_indices().collect();
    for (k, &(i, c)) in chars.iter().enumerate() {
        if matches!(c, 'Z' | '+' | '-') || c.is_ascii_digit() {
            continue;
        }
        let digits = chars[k + 1..]
            .iter()
            .take_while(|(_, d)| d.is_ascii_digit())
            .count();
        // Backtracking: any run of at least one digit followed by `c`.
        let found = (1..=digits).any(|n| chars.get(k + 1 + n).is_some_and(|&(_, d)| d == c));
        if found {
            return &s[i..i + c.len_utf8()];
        }
    }
    ""
}

/// `iso-datestring-validator`'s `isValidISODateString`.
fn iso_datestring(s: &str) -> bool {
    let mut parts = s.split('T');
    let date = parts.next().unwrap_or("");
    let Some(time) = parts.next() else {
        return false;
    };
    if time.is_empty() {
        return false;
    }
    let date_ok = valid_date(date, separator(date));
    date_ok == Some(true) && valid_time(time, time_separator(time)) == Some(true)
}

/// `@atproto/syntax`'s strict `isDatetimeString` as JavaScript runs it.
fn strict_as_javascript(s: &str) -> bool {
    strict_instant_micros(s).is_some()
}

/// The instant, in microseconds since the Unix epoch (digits past the
/// microsecond dropped), of a datetime `@atproto/syntax`'s strict
/// `isDatetimeString` accepts as JavaScript runs it; `None` for any other
/// string.
pub fn strict_instant_micros(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() > 64 || b.len() < 20 || s.ends_with("-00:00") {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        b[r].iter().try_fold(0i64, |n, &c| {
            c.is_ascii_digit().then(|| n * 10 + i64::from(c - b'0'))
        })
    };
    let fixed = [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':')];
    if fixed.iter().any(|&(i, c)| b[i] != c) {
        return None;
    }
    let (Some(year), Some(month), Some(day), Some(hour), Some(minute), Some(second)) = (
        num(0..4),
        num(5..7),
        num(8..10),
        num(11..13),
        num(14..16),
        num(17..19),
    ) else {
        return None;
    };
    // The regular expression: month 01–12, day 00–31, hour 00–23, minute
    // 00–59, second 00–60.
    if !(1..=12).contains(&month) || day > 31 || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut rest = &b[19..];
    let mut micros = 0;
    if let Some(frac) = rest.strip_prefix(b".") {
        let n = frac.iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return None;
        }
        micros = frac[..n]
            .iter()
            .chain(std::iter::repeat(&b'0'))
            .take(6)
            .fold(0, |m, &c| m * 10 + i64::from(c - b'0'));
        rest = &frac[n..];
    }
    let offset = match rest {
        b"Z" => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let two = |a: u8, b: u8| {
                (a.is_ascii_digit() && b.is_ascii_digit())
                    .then(|| i64::from(a - b'0') * 10 + i64::from(b - b'0'))
            };
            let (Some(h), Some(m)) = (two(*h1, *h2), two(*m1, *m2)) else {
                return None;
            };
            if h > 23 || m > 59 {
                return None;
            }
            if *sign == b'-' {
                -(h * 60 + m)
            } else {
                h * 60 + m
            }
        }
        _ => return None,
    };
    // `Date`: day 1–31 whatever the month (the excess rolls over), second
    // 0–59.
    if day == 0 || second > 59 {
        return None;
    }
    // The UTC year once the day rolled over and the offset applied.
    let minutes = (days_from_civil(year, month, 1) + day - 1) * 1440 + hour * 60 + minute - offset;
    let utc_year = civil_year(minutes.div_euclid(1440));
    (0..=9999)
        .contains(&utc_year)
        .then(|| (minutes * 60 + second) * 1_000_000 + micros)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The year of a day since 1970-01-01 (`civil_from_days`).
fn civil_year(z: i64) -> i64 {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    yoe + era * 400 + i64::from(m <= 2)
}

/// `isDatetimeStringLenient`: the reference's verdict on a record's
/// `datetime`. The strict check goes first (the order of an `||` of two
/// pure checks changes no verdict): it takes nearly every datetime clients
/// write, without a regular expression.
pub(crate) fn datetime_lenient(s: &str) -> bool {
    strict_as_javascript(s) || iso_datestring(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calendar_arithmetic_round_trips() {
        for (y, m, d) in [
            (1970, 1, 1),
            (2000, 2, 29),
            (0, 1, 1),
            (9999, 12, 31),
            (1, 3, 1),
        ] {
            assert_eq!(civil_year(days_from_civil(y, m, d)), y, "{y}-{m}-{d}");
        }
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(civil_year(-1), 1969);
    }

    /// Instants agree with `jiff`'s (an independent parser) wherever both
    /// take the string; `jiff`'s timestamps end late on 9999-12-30, where
    /// the instant is derived by hand.
    #[test]
    fn instants_agree_with_jiff() {
        for s in [
            "2024-01-01T00:00:00Z",
            "2024-01-01T00:00:00.1234567Z",
            "2024-01-01T01:00:00+01:00",
            "1969-12-31T23:59:59.999999Z",
            "0999-06-15T12:30:00-05:30",
            "0010-01-01T00:00:00Z",
            "2023-02-28T23:59:59.5+14:00",
        ] {
            let want = s.parse::<jiff::Timestamp>().unwrap().as_microsecond();
            assert_eq!(strict_instant_micros(s), Some(want), "{s}");
        }
        // 10000-01-01T00:00:00Z is 253,402,300,800 s after the epoch.
        assert_eq!(
            strict_instant_micros("9999-12-31T23:00:00Z"),
            Some((253_402_300_800 - 3_600) * 1_000_000)
        );
        assert_eq!(
            strict_instant_micros("9999-12-31T23:59:59.999999Z"),
            Some(253_402_300_800 * 1_000_000 - 1)
        );
        for bad in [
            "2024-01-01T00:00:00",
            "2024-01-01T00:00:00-00:00",
            "9999-12-31T23:00:00-01:00",
        ] {
            assert_eq!(strict_instant_micros(bad), None, "{bad}");
        }
    }
}
