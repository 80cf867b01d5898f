//! A collection's declaration: its record key type and the Lexicon that
//! declared it.

use bytes::Bytes;
use rkey::{KeyType, Nsid};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::Error;

/// A collection's declaration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectionInfo {
    /// The record key type its records must fit.
    pub key: KeyType,
    /// Whether it was declared (`false`: first written to undeclared, so `any`).
    pub declared: bool,
    /// The Lexicon document that declared it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lexicon: Option<Value>,
}

impl CollectionInfo {
    pub(crate) fn undeclared() -> Self {
        Self {
            key: KeyType::Any,
            declared: false,
            lexicon: None,
        }
    }

    pub(crate) fn encode(&self) -> Bytes {
        Bytes::from(serde_json::to_vec(self).unwrap_or_default())
    }

    pub(super) fn decode(collection: &str, bytes: &[u8]) -> Result<Self, Error> {
        serde_json::from_slice(bytes).map_err(|e| {
            Error::Store(store::Error::Malformed {
                what: "collection declaration",
                reason: format!("{collection}: {e}"),
            })
        })
    }
}

/// The collection NSID and key type a Lexicon record document declares.
pub(super) fn parse_lexicon(doc: &Value) -> Result<(String, KeyType), Error> {
    let bad = |reason: &str| Error::InvalidLexicon(reason.to_owned());
    if doc.get("lexicon").and_then(Value::as_u64) != Some(1) {
        return Err(bad("\"lexicon\" must be 1"));
    }
    let id = doc
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("\"id\" (the NSID) is missing"))?;
    Nsid::new(id).map_err(|e| Error::InvalidLexicon(format!("\"id\": {e}")))?;
    let main = doc
        .pointer("/defs/main")
        .ok_or_else(|| bad("\"defs.main\" is missing"))?;
    if main.get("type").and_then(Value::as_str) != Some("record") {
        return Err(bad(
            "\"defs.main.type\" must be \"record\" (only record lexicons declare collections)",
        ));
    }
    let key = main
        .get("key")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("\"defs.main.key\" (the record key type) is missing"))?;
    let key: KeyType = key
        .parse()
        .map_err(|e| Error::InvalidLexicon(format!("\"defs.main.key\": {e}")))?;
    Ok((id.to_owned(), key))
}
