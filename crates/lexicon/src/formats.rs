//! String formats, as `@atproto/syntax` checks them, except where the
//! Lexicon specification is stricter than that package (`datetime`: see
//! [`datetime`]).
//!
//! DIDs, handles, NSIDs, TIDs and record keys use the `rkey` crate's
//! validators (differentially tested against `@atproto/syntax`). The
//! patterns here are the reference's regular expressions, compiled once;
//! JavaScript's `\w` and `\s` are spelled out, since the `regex` crate's
//! Unicode classes differ from them.

use std::sync::LazyLock;

use regex::Regex;

use crate::schema::Format;

/// Whether `s` is in `format`; `Err` is the reference's message tail.
pub(crate) fn check(format: Format, s: &str) -> Result<(), &'static str> {
    let (ok, message) = match format {
        Format::Datetime => (
            datetime(s),
            "must be an valid atproto datetime (both RFC-3339 and ISO-8601)",
        ),
        Format::Uri => (uri(s), "must be a uri"),
        Format::AtUri => (at_uri(s), "must be a valid at-uri"),
        Format::Did => (rkey::validate_did(s).is_ok(), "must be a valid did"),
        Format::Handle => (rkey::validate_handle(s).is_ok(), "must be a valid handle"),
        Format::AtIdentifier => (at_identifier(s), "must be a valid did or a handle"),
        Format::Nsid => (rkey::validate_nsid(s).is_ok(), "must be a valid nsid"),
        Format::Cid => (cid_string(s).is_some(), "must be a cid string"),
        Format::Language => (language(s), "must be a well-formed BCP 47 language tag"),
        Format::Tid => (rkey::Tid::parse(s).is_ok(), "must be a valid TID"),
        Format::RecordKey => (
            rkey::validate_record_key(s).is_ok(),
            "must be a valid Record Key",
        ),
    };
    if ok { Ok(()) } else { Err(message) }
}

fn at_identifier(s: &str) -> bool {
    if s.starts_with("did:") {
        rkey::validate_did(s).is_ok()
    } else {
        rkey::validate_handle(s).is_ok()
    }
}

/// `^\w+:(?:\/\/)?[^\s/][^\s]*$` with JavaScript's `\w` and `\s`.
fn uri(s: &str) -> bool {
    let scheme_len = s
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
        .count();
    if scheme_len == 0 || s.as_bytes().get(scheme_len) != Some(&b':') {
        return false;
    }
    let rest = &s[scheme_len + 1..];
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    match rest.chars().next() {
        Some(c) if c != '/' && !js_space(c) => rest.chars().all(|c| !js_space(c)),
        _ => false,
    }
}

/// JavaScript's `\s`: WhiteSpace and LineTerminator.
fn js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

static DATETIME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^([0-9]{4})-(0[1-9]|1[012])-([0-2][0-9]|3[01])T([0-1][0-9]|2[0-3]):([0-5][0-9]):([0-5][0-9]|60)(\.[0-9]+)?(Z|([+-])([0-1][0-9]|2[0-3]):([0-5][0-9]))$",
    )
    .expect("a valid pattern")
});

/// The Lexicon specification's datetime: RFC 3339 and ISO 8601 at once,
/// with a timezone (`Z` or `±hh:mm`, not `-00:00`), a real calendar day
/// (second 60 is RFC 3339's leap second), at most 64 characters, and a UTC
/// year from 0 to 9999.
///
/// The reference (`isDatetimeStringLenient`) also accepts whatever the
/// `iso-datestring-validator` package accepts (no timezone, `±hhmm`,
/// ordinal dates…) and lets `new Date()` roll invalid days over
/// (`2023-02-30` is March 2); those are not RFC 3339 datetimes, so they
/// are rejected here (`tests/divergences.rs`).
pub(crate) fn datetime(s: &str) -> bool {
    if s.len() > 64 || s.ends_with("-00:00") {
        return false;
    }
    let Some(c) = DATETIME.captures(s) else {
        return false;
    };
    let num = |i: usize| -> i64 { c.get(i).map_or(0, |m| m.as_str().parse().unwrap_or(0)) };
    let (year, month, day) = (num(1), num(2), num(3));
    if day == 0 || day > days_in_month(year, month) {
        return false;
    }
    // The year once normalized to UTC must stay within 0..=9999.
    let offset_minutes = match c.get(9).map(|m| m.as_str()) {
        None => 0,
        Some(sign) => {
            let m = num(10) * 60 + num(11);
            if sign == "-" { -m } else { m }
        }
    };
    let minute_of_year_day = num(4) * 60 + num(5) - offset_minutes;
    if year == 0 && month == 1 && day == 1 && minute_of_year_day < 0 {
        return false;
    }
    if year == 9999 && month == 12 && day == 31 && minute_of_year_day >= 24 * 60 {
        return false;
    }
    true
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

static LANGUAGE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"^((en-GB-oed|i-ami|i-bnn|i-default|i-enochian|i-hak|i-klingon|i-lux|i-mingo|i-navajo|i-pwn|i-tao|i-tay|i-tsu|sgn-BE-FR|sgn-BE-NL|sgn-CH-DE)|(art-lojban|cel-gaulish|no-bok|no-nyn|zh-guoyu|zh-hakka|zh-min|zh-min-nan|zh-xiang))$|",
        r"^(([A-Za-z]{2,3}(-[A-Za-z]{3}(-[A-Za-z]{3}){0,2})?)|[A-Za-z]{4}|[A-Za-z]{5,8})(-[A-Za-z]{4})?(-([A-Za-z]{2}|[0-9]{3}))?(-([A-Za-z0-9]{5,8}|[0-9][A-Za-z0-9]{3}))*(-[0-9A-WY-Za-wy-z](-[A-Za-z0-9]{2,8})+)*(-[xX](-[A-Za-z0-9]{1,8})+)?$|",
        r"^[xX](-[A-Za-z0-9]{1,8})+$",
    ))
    .expect("a valid pattern")
});

/// A BCP 47 language tag, by the reference's regular expression (which
/// checks shape, not registry membership).
fn language(s: &str) -> bool {
    LANGUAGE.is_match(s)
}

static AT_URI: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^at://([^/?#\s]+)(?:/([^/?#\s]+)(?:/([^/?#\s]+))?)?(/)?(?:\?([^#\s]*))?(?:#([^\s]*))?$",
    )
    .expect("a valid pattern")
});

static JSON_POINTER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^/[a-zA-Z0-9._~:@!$&')(*+,;=%\[\]/-]*$").expect("a valid pattern")
});

/// An AT URI as `@atproto/syntax`'s `isAtUriString` checks it (strict):
/// `at://authority[/collection[/rkey]][#/json-pointer]`, no query, no
/// trailing slash.
fn at_uri(s: &str) -> bool {
    // Length in UTF-16 units; every accepted character is ASCII.
    if s.len() > 8192 && s.encode_utf16().count() > 8192 {
        return false;
    }
    let allowed = |b: u8| b.is_ascii_alphanumeric() || b"._~:@!$&'()*+,;=%/\\[]#?-".contains(&b);
    if !s.bytes().all(allowed) {
        return false;
    }
    let Some(c) = AT_URI.captures(s) else {
        return false;
    };
    if !c.get(1).is_some_and(|a| at_identifier(a.as_str())) {
        return false;
    }
    if let Some(collection) = c.get(2)
        && rkey::validate_nsid(collection.as_str()).is_err()
    {
        return false;
    }
    if let Some(hash) = c.get(6)
        && (!JSON_POINTER.is_match(hash.as_str()) || !percent_decodes(hash.as_str()))
    {
        return false;
    }
    if c.get(4).is_some() || c.get(5).is_some() {
        return false;
    }
    c.get(3)
        .is_none_or(|rkey| rkey::validate_record_key(rkey.as_str()).is_ok())
}

/// Whether `decodeURIComponent` accepts `s`: every `%` starts two hex
/// digits, and the bytes they spell are UTF-8.
fn percent_decodes(s: &str) -> bool {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b.get(i + 1..i + 3).and_then(|h| {
                std::str::from_utf8(h)
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
            });
            match hex {
                Some(byte) => out.push(byte),
                None => return false,
            }
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    std::str::from_utf8(&out).is_ok()
}

/// The CID a string spells, as `multiformats`' `CID.parse` reads it
/// (without a decoder argument): at most 128 characters, base58btc without
/// prefix for CIDv0 (`Q…`), else multibase `z` (base58btc), `b` (base32)
/// or `k` (base36), and the bytes exactly one CID.
pub(crate) fn cid_string(s: &str) -> Option<cid::Cid> {
    if s.len() > 128 {
        return None;
    }
    let bytes = match s.as_bytes().first()? {
        b'Q' => multibase::Base::Base58Btc.decode(s).ok()?,
        b'z' | b'b' | b'k' => {
            let (base, bytes) = multibase::decode(s).ok()?;
            if !matches!(
                base,
                multibase::Base::Base58Btc
                    | multibase::Base::Base32Lower
                    | multibase::Base::Base36Lower
            ) {
                return None;
            }
            bytes
        }
        _ => return None,
    };
    let mut reader = bytes.as_slice();
    let cid = cid::Cid::read_bytes(&mut reader).ok()?;
    if !reader.is_empty() {
        return None;
    }
    // A CIDv0 is only ever written bare.
    if (cid.version() == cid::Version::V0) != (s.as_bytes()[0] == b'Q') {
        return None;
    }
    Some(cid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datetimes_follow_the_specification() {
        for ok in [
            "1985-04-12T23:20:50.123Z",
            "1985-04-12T23:20:50.1235678912345Z",
            "1985-04-12T23:20:50.123+01:45",
            "2024-02-29T00:00:00Z",
            "0000-01-01T00:00:00Z",
            "9999-12-31T23:59:59+00:01",
            "1985-04-12T23:59:60Z",
        ] {
            assert!(datetime(ok), "{ok}");
        }
        for bad in [
            "1985-04-12T23:20:50.123-00:00",
            "1985-04-12 23:20:50Z",
            "1985-04-12t23:20:50Z",
            "1985-04-12T23:20:50",
            "2023-02-29T00:00:00Z",
            "2023-04-31T00:00:00Z",
            "0000-01-01T00:00:00+00:01",
            "9999-12-31T23:59:59-00:01",
        ] {
            assert!(!datetime(bad), "{bad}");
        }
    }

    #[test]
    fn uris_need_a_scheme_and_no_spaces() {
        assert!(uri("https://example.com/a"));
        assert!(uri("mailto:a@b"));
        assert!(!uri("https:///x"));
        assert!(!uri("no scheme"));
        assert!(!uri("a:b c"));
        assert!(!uri(":x"));
    }

    #[test]
    fn cid_strings_need_a_known_multibase() {
        let v1 = "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm";
        assert!(cid_string(v1).is_some());
        assert!(cid_string("QmQg1v4o9xdT3Q14wh4S7dxZkDjyZ9ssFzFzyep1YrVJBY").is_some());
        assert!(cid_string(&v1.to_uppercase()).is_none());
        assert!(cid_string(&v1[..v1.len() - 1]).is_none());
        assert!(cid_string("").is_none());
    }
}
