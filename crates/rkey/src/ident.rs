//! Repository identifiers: DIDs and handles (AT Protocol's `at-identifier`).

use crate::error::Error;

/// The longest DID accepted.
pub const MAX_DID_LEN: usize = 2048;
/// The longest handle accepted.
pub const MAX_HANDLE_LEN: usize = 253;

/// The bytes a DID's identifier may hold: `A-Z a-z 0-9 . _ : % -`.
static DID_ID_CHARS: [bool; 256] = crate::ascii_alphanumeric_and(b"._:%-");

/// Checks DID syntax: `did:<method>:<id>` where the method is lowercase
/// letters and the id is `[A-Za-z0-9._:%-]`, not ending in `:` or `%`.
///
/// # Errors
///
/// [`Error::InvalidDid`] naming the rule broken.
///
/// # Examples
///
/// ```
/// assert!(rkey::validate_did("did:web:example.com").is_ok());
/// assert!(rkey::validate_did("did:Web:example.com").is_err());
/// ```
pub fn validate_did(s: &str) -> Result<(), Error> {
    let fail = |reason: &'static str| Err(Error::InvalidDid { reason });
    let Some(rest) = s.strip_prefix("did:") else {
        return fail("a DID starts with \"did:\"");
    };
    if s.len() > MAX_DID_LEN {
        return fail("a DID is at most 2048 characters");
    }
    let Some((method, id)) = rest.split_once(':') else {
        return fail("a DID is did:<method>:<identifier>");
    };
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_lowercase()) {
        return fail("the DID method is one or more lowercase letters");
    }
    if id.is_empty() {
        return fail("the DID identifier is empty");
    }
    // No branch per byte: identifiers are short, and usually valid.
    if !id
        .bytes()
        .fold(true, |ok, b| ok & DID_ID_CHARS[usize::from(b)])
    {
        return fail("a DID identifier allows only A-Z a-z 0-9 . _ : % -");
    }
    if id.ends_with(':') || id.ends_with('%') {
        return fail("a DID can not end with \":\" or \"%\"");
    }
    Ok(())
}

/// Checks handle syntax: a domain name of at least two labels, each 1 to
/// 63 of `[A-Za-z0-9-]` not starting or ending with `-`, the last starting
/// with a letter, at most 253 characters in all.
///
/// # Errors
///
/// [`Error::InvalidHandle`] naming the rule broken.
///
/// # Examples
///
/// ```
/// assert!(rkey::validate_handle("alice.example.com").is_ok());
/// assert!(rkey::validate_handle("alice").is_err());
/// ```
pub fn validate_handle(s: &str) -> Result<(), Error> {
    let fail = |reason: &'static str| Err(Error::InvalidHandle { reason });
    if !s
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
    {
        return fail("a handle allows only A-Z a-z 0-9 . -");
    }
    if s.len() > MAX_HANDLE_LEN {
        return fail("a handle is at most 253 characters");
    }
    let mut labels = s.split('.').peekable();
    let mut count = 0;
    while let Some(label) = labels.next() {
        count += 1;
        if label.is_empty() {
            return fail("handle labels can not be empty");
        }
        if label.len() > 63 {
            return fail("a handle label is at most 63 characters");
        }
        if label.starts_with('-') || label.ends_with('-') {
            return fail("handle labels can not start or end with \"-\"");
        }
        if labels.peek().is_none() && !label.as_bytes()[0].is_ascii_alphabetic() {
            return fail("the last handle label must start with a letter");
        }
    }
    if count < 2 {
        return fail("a handle has at least two labels (like alice.example.com)");
    }
    Ok(())
}

/// Checks a repository identifier: a DID when it starts with `did:`,
/// otherwise a handle.
///
/// # Errors
///
/// [`Error::InvalidDid`] or [`Error::InvalidHandle`].
pub fn validate_repo_id(s: &str) -> Result<(), Error> {
    if s.starts_with("did:") {
        validate_did(s)
    } else {
        validate_handle(s)
    }
}
