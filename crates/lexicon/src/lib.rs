//! AT Protocol Lexicons for datarepo: documents parsed once, records
//! validated against them with the verdicts and messages of the reference
//! validator, `@atproto/lexicon` (checked by a differential test).
//!
//! - [`Document`]: one Lexicon document, parsed and checked.
//! - [`Lexicons`]: the documents a repository holds, with
//!   [`Lexicons::validate_record`] and [`Lexicons::validate_write`].
//! - [`ValidationError`]: the reference's message, e.g.
//!   `Record/text must not be longer than 3000 graphemes`.
//!
//! Where the reference departs from the Lexicon specification this crate
//! follows the specification; `docs/repo.md` ("Record validation") lists
//! each case and `tests/divergences.rs` pins it.
//!
//! This crate is not: a store of Lexicons (the `repo` crate keeps them), a
//! resolver of Lexicons over the network, or a validator of XRPC bodies.
//!
//! ```
//! use lexicon::{Document, Lexicons};
//! use serde_json::json;
//!
//! let mut lexicons = Lexicons::new();
//! lexicons.insert(Document::parse(json!({
//!     "lexicon": 1, "id": "com.example.note",
//!     "defs": {"main": {"type": "record", "key": "tid", "record": {
//!         "type": "object", "required": ["text"],
//!         "properties": {"text": {"type": "string", "maxGraphemes": 5}}}}}
//! })).unwrap());
//! let ok = json!({"$type": "com.example.note", "text": "héllo"});
//! assert!(lexicons.validate_record("com.example.note", &ok).is_ok());
//! let long = json!({"$type": "com.example.note", "text": "hello!"});
//! assert_eq!(
//!     lexicons.validate_record("com.example.note", &long).unwrap_err().to_string(),
//!     "Record/text must not be longer than 5 graphemes",
//! );
//! ```

#![warn(clippy::unwrap_used)]

mod formats;
mod lenient_datetime;
mod schema;
mod validate;

use std::{
    collections::BTreeMap,
    sync::{Arc, OnceLock},
};

use foldhash::HashMap;
use serde_json::Value;

pub use lenient_datetime::strict_instant_micros;
use schema::Def;
pub use schema::Document;
use validate::{Fail, Path};

/// Standard base64 as AT Protocol JSON writes `$bytes`: padding optional.
pub(crate) const BASE64: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    base64::engine::GeneralPurposeConfig::new()
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
);

/// A Lexicon document that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LexiconError {
    /// The document breaks the Lexicon language: the message names the
    /// field (`defs.main.record.properties.text.maxLength must be an
    /// integer`).
    #[error("invalid Lexicon: {0}")]
    Invalid(String),
}

/// A record that does not validate; the message is the reference's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ValidationError(pub String);

/// A set of Lexicon documents, at most one per NSID, and the definitions
/// they make reachable by `lex:` URI.
#[derive(Debug, Clone, Default)]
pub struct Lexicons {
    docs: BTreeMap<String, Arc<Document>>,
    /// The documents' definitions with their references resolved, made on
    /// the first validation after a change.
    compiled: OnceLock<Compiled>,
}

/// Every definition of every document, each reference resolved to its
/// place here, so that validating follows references without lookups.
#[derive(Debug, Clone, Default)]
pub(crate) struct Compiled {
    pub(crate) defs: Vec<Def>,
    /// By `lex:` URI without the `lex:` (`nsid#name`, and `nsid` for main).
    pub(crate) by_key: HashMap<String, u32>,
}

impl Compiled {
    fn new(docs: &BTreeMap<String, Arc<Document>>) -> Self {
        let mut out = Self::default();
        for doc in docs.values() {
            for (name, def) in &doc.defs {
                let index = out.defs.len() as u32;
                out.defs.push(def.clone());
                out.by_key.insert(format!("{}#{name}", doc.id()), index);
                if name == "main" {
                    out.by_key.insert(doc.id().to_owned(), index);
                }
            }
        }
        let by_key = &out.by_key;
        let find = |uri: &str| by_key.get(validate::def_key(uri)).copied();
        for def in &mut out.defs {
            def.resolve(&find);
        }
        out
    }
}

impl Lexicons {
    /// No documents.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `doc`, replacing (and returning) the one with its NSID.
    pub fn insert(&mut self, doc: Document) -> Option<Arc<Document>> {
        self.compiled = OnceLock::new();
        self.docs.insert(doc.id().to_owned(), Arc::new(doc))
    }

    /// Removes the document with this NSID.
    pub fn remove(&mut self, nsid: &str) -> Option<Arc<Document>> {
        self.compiled = OnceLock::new();
        self.docs.remove(nsid)
    }

    pub(crate) fn compiled(&self) -> &Compiled {
        self.compiled.get_or_init(|| Compiled::new(&self.docs))
    }

    /// The document with this NSID.
    pub fn get(&self, nsid: &str) -> Option<&Arc<Document>> {
        self.docs.get(nsid)
    }

    /// Every document, by NSID.
    pub fn documents(&self) -> impl Iterator<Item = &Arc<Document>> {
        self.docs.values()
    }

    /// How many documents there are.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// Whether `nsid` has a record definition (records of that collection
    /// can be validated).
    pub fn has_record(&self, nsid: &str) -> bool {
        self.docs.get(nsid).is_some_and(|d| d.is_record())
    }

    /// The `lex:` URIs that some document's refs or unions name and no
    /// document defines, in NSID order.
    pub fn missing_refs(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .docs
            .values()
            .flat_map(|d| d.external_refs())
            .filter(|uri| !self.compiled().by_key.contains_key(validate::def_key(uri)))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Validates `record` as a record of `collection`, as the reference's
    /// `assertValidRecord`: `$type` must be present and name the collection.
    ///
    /// # Errors
    ///
    /// The first rule the record breaks, or a missing definition
    /// (`Lexicon not found: lex:…`), with the reference's message.
    pub fn validate_record(&self, collection: &str, record: &Value) -> Result<(), ValidationError> {
        self.check_record(collection, record, false)
    }

    /// [`Lexicons::validate_record`] for a record being written: an absent
    /// `$type` is taken as `collection`, as a PDS sets it before validating.
    ///
    /// # Errors
    ///
    /// As [`Lexicons::validate_record`].
    pub fn validate_write(&self, collection: &str, record: &Value) -> Result<(), ValidationError> {
        self.check_record(collection, record, true)
    }

    fn check_record(
        &self,
        collection: &str,
        record: &Value,
        implied_type: bool,
    ) -> Result<(), ValidationError> {
        let Value::Object(map) = record else {
            return Err(ValidationError("Record must be an object".to_owned()));
        };
        match validate::field(map, "$type") {
            None if implied_type => {}
            Some(Value::String(t)) => {
                // The reference's toLexUri errors first.
                schema::check_lex_uri(t).map_err(ValidationError)?;
                // A `$type` is an NSID; the reference also takes `lex:NSID`.
                if t != collection {
                    return Err(ValidationError(format!(
                        "Invalid $type: must be lex:{collection}, got {t}"
                    )));
                }
            }
            _ => return Err(ValidationError("Record/$type must be a string".to_owned())),
        }
        let def = self.def(collection).map_err(ValidationError::from)?;
        let Def::Record(object) = def else {
            return Err(ValidationError(format!(
                "Not a record lexicon: lex:{collection}"
            )));
        };
        self.object(&Path::Root("Record"), object, Some(record))
            .map_err(|f: Fail| f.into())
    }
}
