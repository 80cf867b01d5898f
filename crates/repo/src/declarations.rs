//! The declarations block of a history export (`export --history`): what a
//! repository declares beyond its records — collections with their record
//! key types and Lexicons, and field indexes — so that a restore has them.
//!
//! A dag-cbor map, written right after the root commit and reached by no
//! commit:
//!
//! ```text
//! { "$type": "dev.datarepo.declarations",
//!   "repo": "did:…",
//!   "collections": [ { "nsid": "app.bsky.feed.post", "key": "tid",
//!                      "declared": true, "lexicon": "<the Lexicon as JSON text>" } ],
//!   "indexes": [ { "collection": "…", "path": "langs", "kind": "keyword" } ],
//!   "lexicons": [ "<a Lexicon that declares no collection, as JSON text>" ] }
//! ```
//!
//! `lexicon` is absent for a collection declared without one; `lexicons`
//! (the definitions record Lexicons refer to) is absent when there are
//! none, and files written before it existed read as having none. Lexicons
//! are kept as JSON text so that they round-trip byte for byte whatever
//! they hold.

use serde::{Deserialize, Serialize};

/// The `$type` that marks the block.
pub(crate) const DECLARATIONS_TYPE: &str = "dev.datarepo.declarations";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Declarations {
    #[serde(rename = "$type")]
    pub(crate) kind: String,
    pub(crate) repo: String,
    pub(crate) collections: Vec<DeclaredCollection>,
    pub(crate) indexes: Vec<DeclaredIndex>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) lexicons: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct DeclaredCollection {
    pub(crate) nsid: String,
    pub(crate) key: String,
    pub(crate) declared: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) lexicon: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct DeclaredIndex {
    pub(crate) collection: String,
    pub(crate) path: String,
    pub(crate) kind: String,
}

impl Declarations {
    /// The block.
    pub(crate) fn encode(&self) -> store::Block {
        // Strings, booleans and lists of them always encode.
        let bytes = serde_ipld_dagcbor::to_vec(self).unwrap_or_default();
        store::Block::new(0x71, bytes.into())
    }

    /// The declarations in `bytes`, or `None` when they are something else
    /// (a shard, a record).
    pub(crate) fn decode(bytes: &[u8]) -> Option<Self> {
        serde_ipld_dagcbor::from_slice::<Self>(bytes)
            .ok()
            .filter(|d| d.kind == DECLARATIONS_TYPE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarations_round_trip_and_nothing_else_decodes_as_them() {
        let d = Declarations {
            kind: DECLARATIONS_TYPE.to_owned(),
            repo: "did:web:a.example".to_owned(),
            collections: vec![DeclaredCollection {
                nsid: "app.bsky.feed.post".to_owned(),
                key: "tid".to_owned(),
                declared: true,
                lexicon: Some(r#"{"lexicon":1,"id":"app.bsky.feed.post"}"#.to_owned()),
            }],
            indexes: vec![DeclaredIndex {
                collection: "app.bsky.feed.post".to_owned(),
                path: "langs".to_owned(),
                kind: "keyword".to_owned(),
            }],
            lexicons: vec![r#"{"lexicon":1,"id":"app.bsky.richtext.facet"}"#.to_owned()],
        };
        let block = d.encode();
        assert_eq!(Declarations::decode(block.bytes()), Some(d.clone()));
        let mut other = d;
        other.kind = "app.example.record".to_owned();
        assert_eq!(Declarations::decode(other.encode().bytes()), None);
        assert_eq!(Declarations::decode(b"\xa0"), None);
    }
}
