//! Record validation on writes: whether a write is validated, what it
//! found, and a repository's stored Lexicons compiled into one
//! [`lexicon::Lexicons`].

use bytes::Bytes;
use lexicon::{Document, Lexicons};
use serde_json::Value;

use crate::error::Error;

/// Whether a write is validated against its collection's Lexicon: the
/// `validate` parameter of `com.atproto.repo.createRecord` & co.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Validation {
    /// Validate when the collection has a record Lexicon (`validate`
    /// unset).
    #[default]
    Auto,
    /// Validate, and fail when there is no Lexicon (`validate: true`).
    Require,
    /// Do not validate (`validate: false`).
    Skip,
}

impl Validation {
    /// The mode for a `validate` parameter.
    pub fn from_param(validate: Option<bool>) -> Self {
        match validate {
            None => Self::Auto,
            Some(true) => Self::Require,
            Some(false) => Self::Skip,
        }
    }
}

/// What validation said of a written record (`validationStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValidationStatus {
    /// Validated against its collection's Lexicon.
    Valid,
    /// Not validated (no Lexicon, or validation skipped).
    Unknown,
}

impl ValidationStatus {
    /// `"valid"` or `"unknown"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Valid => "valid",
            Self::Unknown => "unknown",
        }
    }
}

/// Validates one record about to be written to `collection`.
pub(crate) fn validate_write(
    lexicons: &Lexicons,
    mode: Validation,
    collection: &str,
    value: &Value,
) -> Result<ValidationStatus, Error> {
    if mode == Validation::Skip || (mode == Validation::Auto && !lexicons.has_record(collection)) {
        return Ok(ValidationStatus::Unknown);
    }
    lexicons
        .validate_write(collection, value)
        .map_err(|e| Error::LexiconValidation(e.0))?;
    Ok(ValidationStatus::Valid)
}

/// Compiles a repository's stored Lexicons. A stored document that no
/// longer parses (kept by an older datarepo, which checked less) is left
/// out; `check` names it.
/// `record_lexicons` are the documents kept in collection declarations,
/// `others` the rest (NSID, stored JSON).
pub(crate) fn compile<'a>(
    record_lexicons: impl Iterator<Item = &'a Value>,
    others: &[(String, Bytes)],
) -> (Lexicons, Vec<String>) {
    let mut out = Lexicons::new();
    let mut unusable = Vec::new();
    for doc in record_lexicons {
        {
            match Document::parse(doc.clone()) {
                Ok(d) => {
                    out.insert(d);
                }
                Err(e) => unusable.push(format!(
                    "{}: {e}",
                    doc.get("id").and_then(Value::as_str).unwrap_or("?")
                )),
            }
        }
    }
    for (nsid, bytes) in others {
        match serde_json::from_slice(bytes)
            .map_err(|e| e.to_string())
            .and_then(|v| Document::parse(v).map_err(|e| e.to_string()))
        {
            Ok(d) => {
                out.insert(d);
            }
            Err(e) => unusable.push(format!("{nsid}: {e}")),
        }
    }
    (out, unusable)
}
