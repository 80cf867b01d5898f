//! [`Nsid`]: namespaced identifiers, which name collections.

use std::{fmt, str::FromStr};

use crate::error::{Error, NsidRule};

/// Longest NSID: a 253-character domain authority, a dot, a 63-character name.
pub const MAX_NSID_LEN: usize = 253 + 1 + 63;
const MAX_SEGMENT_LEN: usize = 63;

/// Checks that `s` is a valid NSID (AT Protocol syntax), without allocating.
///
/// At most 317 characters of `A-Za-z0-9.-`; at least three dot-separated
/// segments of 1–63 characters that neither start nor end with `-`; the
/// first segment does not start with a digit; the last (the name) is
/// letters and digits and does not start with a digit.
///
/// # Errors
///
/// [`Error::Nsid`] with the rule broken and, where it applies, the byte
/// position of the offending character or segment.
///
/// # Examples
///
/// ```
/// assert!(rkey::validate_nsid("app.bsky.feed.post").is_ok());
/// assert!(rkey::validate_nsid("app.bsky").is_err());
/// ```
pub fn validate_nsid(s: &str) -> Result<(), Error> {
    if is_nsid(s.as_bytes()) {
        return Ok(());
    }
    nsid_rules(s)
}

/// Whether `s` is a valid NSID, in one pass over its bytes; exactly when
/// [`nsid_rules`] passes it (which then names the rule broken).
fn is_nsid(s: &[u8]) -> bool {
    // A segment's bytes are checked as they pass; its ends and length here.
    let segment_ok = |segment: &[u8], first: bool| match (segment.first(), segment.last()) {
        (Some(&a), Some(&z)) => {
            a != b'-'
                && z != b'-'
                && segment.len() <= MAX_SEGMENT_LEN
                && !(first && a.is_ascii_digit())
        }
        _ => false,
    };
    if s.len() > MAX_NSID_LEN {
        return false;
    }
    let (mut segments, mut start, mut hyphen_at) = (0, 0, None);
    for (i, &b) in s.iter().enumerate() {
        match b {
            b'.' => {
                if !segment_ok(&s[start..i], segments == 0) {
                    return false;
                }
                segments += 1;
                start = i + 1;
            }
            b'-' => hyphen_at = Some(i),
            _ if b.is_ascii_alphanumeric() => {}
            _ => return false,
        }
    }
    let name = &s[start..];
    segments >= 2
        && segment_ok(name, false)
        && !name[0].is_ascii_digit()
        && hyphen_at.is_none_or(|i| i < start)
}

/// [`validate_nsid`] rule by rule, in the order the error names the first
/// one broken.
fn nsid_rules(s: &str) -> Result<(), Error> {
    let fail = |reason, position| Err(Error::Nsid { reason, position });
    if s.len() > MAX_NSID_LEN {
        return fail(NsidRule::TooLong, None);
    }
    if let Some(p) = s
        .bytes()
        .position(|b| !(b.is_ascii_alphanumeric() || b == b'-' || b == b'.'))
    {
        return fail(NsidRule::Char, Some(p));
    }
    let mut count = 0;
    let mut start = 0;
    let mut last = (0, "");
    for segment in s.split('.') {
        count += 1;
        let bytes = segment.as_bytes();
        match (bytes.first(), bytes.last()) {
            (None, _) | (_, None) => return fail(NsidRule::EmptySegment, Some(start)),
            (Some(b'-'), _) | (_, Some(b'-')) => return fail(NsidRule::Hyphen, Some(start)),
            (Some(first), _) => {
                if bytes.len() > MAX_SEGMENT_LEN {
                    return fail(NsidRule::SegmentTooLong, Some(start));
                }
                if count == 1 && first.is_ascii_digit() {
                    return fail(NsidRule::LeadingDigit, Some(0));
                }
            }
        }
        last = (start, segment);
        start += segment.len() + 1;
    }
    if count < 3 {
        return fail(NsidRule::TooFewSegments, None);
    }
    let (name_start, name) = last;
    if name.starts_with(|c: char| c.is_ascii_digit()) || name.contains('-') {
        return fail(NsidRule::Name, Some(name_start));
    }
    Ok(())
}

/// A valid NSID such as `app.bsky.feed.post`; see [`validate_nsid`].
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Nsid(String);

impl Nsid {
    /// Validates `s` and wraps it.
    ///
    /// # Errors
    ///
    /// As [`validate_nsid`].
    pub fn new(s: impl Into<String>) -> Result<Self, Error> {
        let s = s.into();
        validate_nsid(&s)?;
        Ok(Self(s))
    }

    /// The NSID as a string slice.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The name: the last segment (`post` in `app.bsky.feed.post`).
    #[must_use]
    pub fn name(&self) -> &str {
        self.0.rsplit('.').next().unwrap_or_default()
    }
}

impl fmt::Display for Nsid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Nsid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Nsid({:?})", self.0)
    }
}

impl FromStr for Nsid {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        Self::new(s)
    }
}

impl TryFrom<&str> for Nsid {
    type Error = Error;
    fn try_from(s: &str) -> Result<Self, Error> {
        Self::new(s)
    }
}

impl AsRef<str> for Nsid {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl serde::Serialize for Nsid {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Nsid {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        Self::new(s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{is_nsid, nsid_rules};

    fn agree(s: &str) -> Result<(), TestCaseError> {
        prop_assert_eq!(is_nsid(s.as_bytes()), nsid_rules(s).is_ok(), "{:?}", s);
        Ok(())
    }

    proptest! {
        /// The one-pass check passes exactly what the rules pass: on short
        /// noise of NSID characters and a few others, and on dotted
        /// segments around every rule (digits and hyphens at their ends,
        /// lengths about the 63-byte segment and 317-byte total limits).
        #[test]
        fn one_pass_agrees_with_the_rules(
            noise in "[a-c0-9.\\-_Z]{0,24}",
            segments in proptest::collection::vec(("[a-z0-9\\-]{0,3}", 0usize..70, "[a-z0-9\\-]{0,2}"), 0..7),
        ) {
            agree(&noise)?;
            let dotted: Vec<String> = segments
                .iter()
                .map(|(head, fill, tail)| format!("{head}{}{tail}", "x".repeat(*fill)))
                .collect();
            agree(&dotted.join("."))?;
        }
    }

    #[test]
    fn one_pass_agrees_at_the_limits() {
        // Segments of these lengths, dotted.
        let dotted = |lens: &[usize]| {
            let segments: Vec<String> = lens.iter().map(|&n| "a".repeat(n)).collect();
            segments.join(".")
        };
        for s in [
            dotted(&[63, 63, 63]),
            dotted(&[64, 1, 1]),
            dotted(&[63, 63, 63, 63, 61]),
            dotted(&[63, 63, 63, 63, 62]),
            "app.bsky.feed.post".to_owned(),
            "app.bsky.feed.post-x".to_owned(),
            "app.b-sky.feed.post".to_owned(),
            "1app.bsky.post".to_owned(),
            "app.bsky.1post".to_owned(),
            "app..post".to_owned(),
            "app.bsky".to_owned(),
            String::new(),
        ] {
            agree(&s).unwrap();
        }
    }
}
