//! A record's names: its AT URI and its Pail key.

use crate::error::Error;

/// The AT URI of a record.
pub fn record_uri(repo: &str, collection: &str, rkey: &str) -> String {
    format!("at://{repo}/{collection}/{rkey}")
}

/// Checks that `collection/rkey` can name a record at all, so a read of a
/// malformed name is an error rather than "not found".
pub(crate) fn check_path(collection: &str, rkey: &str) -> Result<(), Error> {
    rkey::validate_nsid(collection)?;
    rkey::validate_record_key(rkey)?;
    Ok(())
}

/// The Pail key of a record.
pub(crate) fn pail_key(collection: &str, rkey: &str) -> String {
    let mut key = String::with_capacity(collection.len() + 1 + rkey.len());
    key.push_str(collection);
    key.push('/');
    key.push_str(rkey);
    key
}
