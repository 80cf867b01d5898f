//! String formats, as `@atproto/syntax` checks them; a record's
//! `datetime` as `@atproto/lexicon` does, leniently
//! ([`crate::lenient_datetime`]).
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
            crate::lenient_datetime::datetime_lenient(s),
            "must be an valid atproto datetime (both RFC-3339 and ISO-8601)",
        ),
        Format::Uri => (uri(s), "must be a uri"),
        Format::AtUri => (at_uri(s), "must be a valid at-uri"),
        Format::Did => (rkey::validate_did(s).is_ok(), "must be a valid did"),
        Format::Handle => (rkey::validate_handle(s).is_ok(), "must be a valid handle"),
        Format::AtIdentifier => (at_identifier(s), "must be a valid did or a handle"),
        Format::Nsid => (rkey::validate_nsid(s).is_ok(), "must be a valid nsid"),
        Format::Cid => (cid_string(s), "must be a cid string"),
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
    // The usual tags (`en`, `pt-BR`) without the regular expression: a
    // two- or three-letter language, maybe a two-letter region, is in it.
    let b = s.as_bytes();
    let letters = |x: &[u8]| x.iter().all(u8::is_ascii_alphabetic);
    let common = match b.len() {
        2 | 3 => letters(b),
        5 => letters(&b[..2]) && b[2] == b'-' && letters(&b[3..]),
        _ => false,
    };
    common || LANGUAGE.is_match(s)
}

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
    // `^at://([^/?#]+)(?:/([^/?#]+)(?:/([^/?#]+))?)?(/)?(?:\?([^#]*))?(?:#(.*))?$`,
    // strict: no trailing slash, no query. The reference first rejects any
    // character outside `[a-zA-Z0-9._~:@!$&'()*+,;=%/\\[\]#?-]`; that
    // check is implied here, since each part is then held to a narrower
    // set (a DID or handle, an NSID, a record key, a JSON pointer).
    let b = s.as_bytes();
    if !b.starts_with(b"at://") {
        return false;
    }
    let end = memchr::memchr(b'#', b).unwrap_or(b.len());
    let path = &b[5..end];
    if memchr::memchr(b'?', path).is_some() {
        return false;
    }
    let mut slashes = [0usize; 2];
    let mut count = 0;
    for i in memchr::memchr_iter(b'/', path) {
        if count == 2 {
            return false;
        }
        slashes[count] = 5 + i;
        count += 1;
    }
    let segment = |from: usize, to: usize| &s[from..to];
    let (authority, collection, rkey) = match count {
        0 => (segment(5, end), None, None),
        1 => (
            segment(5, slashes[0]),
            Some(segment(slashes[0] + 1, end)),
            None,
        ),
        _ => (
            segment(5, slashes[0]),
            Some(segment(slashes[0] + 1, slashes[1])),
            Some(segment(slashes[1] + 1, end)),
        ),
    };
    if authority.is_empty()
        || !at_identifier(authority)
        || collection.is_some_and(|c| c.is_empty() || rkey::validate_nsid(c).is_err())
        || rkey.is_some_and(|r| r.is_empty() || rkey::validate_record_key(r).is_err())
    {
        return false;
    }
    end == b.len() || {
        let hash = &s[end + 1..];
        JSON_POINTER.is_match(hash) && percent_decodes(hash)
    }
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

/// Whether a string spells a CID, as `multiformats`' `CID.parse` reads it
/// (without a decoder argument): at most 128 characters, base58btc without
/// prefix for CIDv0 (`Q…`), else multibase `z` (base58btc), `b` (base32)
/// or `k` (base36), and the bytes exactly one CID.
pub(crate) fn cid_string(s: &str) -> bool {
    if s.len() > 128 {
        return false;
    }
    if s.starts_with('b')
        && let Some(verdict) = base32_cid_v1(&s[1..])
    {
        return verdict;
    }
    let mut buf = [0u8; 128];
    let decoded: Vec<u8>;
    let bytes: &[u8] = match s.as_bytes().first() {
        Some(b'b') => match base32_lower(&s[1..], &mut buf) {
            Some(b) => b,
            None => return false,
        },
        Some(b'Q') => match multibase::Base::Base58Btc.decode(s) {
            Ok(b) => {
                decoded = b;
                &decoded
            }
            Err(_) => return false,
        },
        // multiformats' base36 decoder is lowercase only; the multibase
        // crate's also takes uppercase.
        Some(b'k')
            if !s[1..]
                .bytes()
                .all(|c| matches!(c, b'a'..=b'z' | b'0'..=b'9')) =>
        {
            return false;
        }
        Some(b'z' | b'k') => match multibase::decode(s) {
            Ok((_, b)) => {
                decoded = b;
                &decoded
            }
            Err(_) => return false,
        },
        _ => return false,
    };
    cid_bytes(bytes, s.starts_with('Q'))
}

/// Whether `b` is exactly one CID, as `multiformats`' `CID.decode` reads
/// it: a bare sha2-256 multihash (CIDv0, only in a `Q…` string), or
/// version 1, codec, multihash code and digest length as varints and then
/// exactly that many digest bytes.
fn cid_bytes(b: &[u8], bare: bool) -> bool {
    if b.first() == Some(&0x12) {
        return bare && b.len() == 34 && b[1] == 0x20;
    }
    match cid_v1_head(b) {
        Some((1, digest, used)) => (b.len() - used) as u64 == digest,
        _ => false,
    }
}

/// The version and digest length a CID's bytes `b` start with, and how
/// many bytes their four varints (version, codec, hash, digest length)
/// take; `None` when one does not end within `b` or within eight bytes.
fn cid_v1_head(b: &[u8]) -> Option<(u64, u64, usize)> {
    let mut at = 0;
    let mut varint = || -> Option<u64> {
        let mut n = 0u64;
        for (i, &byte) in b.get(at..)?.iter().enumerate().take(8) {
            n |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                at += i + 1;
                return Some(n);
            }
        }
        None
    };
    let (version, _codec, _code, digest) = (varint()?, varint()?, varint()?, varint()?);
    Some((version, digest, at))
}

/// Each byte's base32 value, 0xff for bytes outside the lowercase alphabet.
static BASE32_LOWER: [u8; 256] = {
    let mut table = [0xff; 256];
    let mut i = 0;
    while i < 26 {
        table[b'a' as usize + i] = i as u8;
        i += 1;
    }
    let mut j = 0;
    while j < 6 {
        table[b'2' as usize + j] = 26 + j as u8;
        j += 1;
    }
    table
};

/// [`cid_string`]'s verdict on base32 text (after its `b`) without decoding
/// it all: the alphabet and the trailing bits checked on every character,
/// the length from their count, and only the first eight characters'
/// five bytes decoded for the version, codec, hash and length varints.
/// `None` when those varints do not end within the five bytes.
fn base32_cid_v1(s: &str) -> Option<bool> {
    let s = s.trim_end_matches('=').as_bytes();
    let (Some(head), Some(&last)) = (s.first_chunk::<8>(), s.last()) else {
        return None;
    };
    // No branch per character: a loop the compiler can vectorize.
    let in_alphabet = s.iter().fold(true, |all, &c| {
        all & ((c.wrapping_sub(b'a') < 26) | (c.wrapping_sub(b'2') < 6))
    });
    if !in_alphabet {
        return Some(false);
    }
    // The bits past the last whole byte: fewer than a character's, zero.
    let leftover = s.len() * 5 % 8;
    if leftover >= 5 || BASE32_LOWER[usize::from(last)] & ((1 << leftover) - 1) != 0 {
        return Some(false);
    }
    let n = head.iter().fold(0u64, |n, &c| {
        n << 5 | u64::from(BASE32_LOWER[usize::from(c)])
    });
    let first = &n.to_be_bytes()[3..];
    if first[0] == 0x12 {
        // A bare multihash: only in a `Q…` string.
        return Some(false);
    }
    // Varints running past the five bytes: `None`, for the full decoder.
    let (version, digest, used) = cid_v1_head(first)?;
    Some(version == 1 && (s.len() * 5 / 8 - used) as u64 == digest)
}

/// RFC 4648 base32, lowercase, as `multiformats` decodes it: trailing `=`
/// ignored, and the bits left over at the end must be fewer than a
/// character's and zero. Into `out`, without allocating.
fn base32_lower<'a>(s: &str, out: &'a mut [u8; 128]) -> Option<&'a [u8]> {
    let s = s.trim_end_matches('=').as_bytes();
    let (mut buffer, mut bits, mut written) = (0u32, 0u32, 0usize);
    // Eight characters are five whole bytes.
    let whole = s.len() / 8 * 8;
    if whole / 8 * 5 > out.len() {
        return None;
    }
    for chunk in s[..whole].chunks_exact(8) {
        let mut n = 0u64;
        for &c in chunk {
            let value = BASE32_LOWER[usize::from(c)];
            if value == 0xff {
                return None;
            }
            n = n << 5 | u64::from(value);
        }
        out[written..written + 5].copy_from_slice(&n.to_be_bytes()[3..]);
        written += 5;
    }
    for &c in &s[whole..] {
        let value = BASE32_LOWER[usize::from(c)];
        if value == 0xff {
            return None;
        }
        buffer = (buffer << 5) | u32::from(value);
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            *out.get_mut(written)? = (buffer >> bits) as u8;
            written += 1;
        }
    }
    if bits >= 5 || (buffer << (8 - bits)) & 0xff != 0 {
        return None;
    }
    Some(&out[..written])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_need_a_scheme_and_no_spaces() {
        assert!(uri("https://example.com/a"));
        assert!(uri("mailto:a@b"));
        assert!(!uri("https:///x"));
        assert!(!uri("no scheme"));
        assert!(!uri("a:b c"));
        assert!(!uri(":x"));
    }

    proptest::proptest! {
        /// The shortcut for base32 CIDs answers as decoding it all does,
        /// on real CIDs (v1, of several codecs and digest lengths) with
        /// characters changed, added or removed, and on noise.
        #[test]
        fn base32_cids_checked_without_decoding_all_as_decoded(
            pick in 0..CIDS.len(),
            edits in proptest::collection::vec((0usize..80, 0usize..40, 0u8..3), 0..3),
            noise in "[a-z2-7=A]{0,70}",
            use_noise: bool,
        ) {
            let mut body: Vec<u8> = if use_noise {
                noise.into_bytes()
            } else {
                CIDS[pick].as_bytes()[1..].to_vec()
            };
            const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz234567=A";
            for (at, c, how) in edits {
                let at = at % (body.len() + 1);
                let c = ALPHABET[c % ALPHABET.len()];
                match how {
                    0 if at < body.len() => body[at] = c,
                    1 => body.insert(at, c),
                    _ if at < body.len() => {
                        body.remove(at);
                    }
                    _ => {}
                }
            }
            let body = String::from_utf8(body).unwrap();
            let mut buf = [0u8; 128];
            let decoded = base32_lower(&body, &mut buf).is_some_and(|b| cid_bytes(b, false));
            if let Some(shortcut) = base32_cid_v1(&body) {
                proptest::prop_assert_eq!(shortcut, decoded, "{}", body);
            }
        }
    }

    /// v1 CIDs made by `multiformats` (npm) for the bytes `datarepo`:
    /// dag-cbor, raw and dag-json (a two-byte codec) with sha2-256, raw
    /// with the identity hash, dag-cbor with a 20-byte digest; and raw
    /// with the identity hash of `datare` (ten bytes: no leftover bits).
    const CIDS: &[&str] = &[
        "bafyreidrwg3ugkf3wotgdgni5rtmtopzv5fyx2u3ckkchxslnsklrrkqpu",
        "bafkreidrwg3ugkf3wotgdgni5rtmtopzv5fyx2u3ckkchxslnsklrrkqpu",
        "baguqeeraogy3oqzixoz2mymzvdwgnsnz7gxuxc7ktmjjii66jnwjjogfkb6q",
        "bafkqacdemf2gc4tfobxq",
        "bafyrefdrwg3ugkf3wotgdgni5rtmtopzv5fyx2q",
        "bafkqabtemf2gc4tf",
    ];

    /// Each CID is taken; and with one to seven characters added or
    /// removed at its end (every count of leftover bits), each of them
    /// any of the alphabet, the shortcut answers as decoding does.
    #[test]
    fn the_base32_shortcut_takes_the_usual_cids_and_their_ends() {
        let same = |body: &str| {
            let mut buf = [0u8; 128];
            let decoded = base32_lower(body, &mut buf).is_some_and(|b| cid_bytes(b, false));
            if let Some(shortcut) = base32_cid_v1(body) {
                assert_eq!(shortcut, decoded, "{body}");
            }
        };
        for cid in CIDS {
            assert_eq!(base32_cid_v1(&cid[1..]), Some(true), "{cid}");
            assert!(cid_string(cid), "{cid}");
            for cut in 1..=7 {
                same(&cid[1..cid.len() - cut]);
            }
            for c in "abcdefghijklmnopqrstuvwxyz234567".chars() {
                for extra in 1..=7 {
                    same(&format!("{}{}", &cid[1..], c.to_string().repeat(extra)));
                }
            }
        }
    }

    #[test]
    fn cid_strings_need_a_known_multibase() {
        let v1 = "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm";
        assert!(cid_string(v1));
        assert!(cid_string("QmQg1v4o9xdT3Q14wh4S7dxZkDjyZ9ssFzFzyep1YrVJBY"));
        assert!(!cid_string(&v1.to_uppercase()));
        assert!(!cid_string(&v1[..v1.len() - 1]));
        assert!(!cid_string(""));
    }
}
