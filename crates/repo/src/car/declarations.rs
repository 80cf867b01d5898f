//! The declarations block of a backup (`export --history`, and the
//! increments of `export --since`): what a repository declares beyond its
//! records, as of the file's head — collections with their record key
//! types and Lexicons, field indexes and the public signing keys — so that
//! a restore has them.
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
//!   "lexicons": [ "<a Lexicon that declares no collection, as JSON text>" ],
//!   "keys": { "current": "did:key:…", "known": [ "did:key:…" ] },
//!   "account": { "record": "<the account as stored, JSON text>",
//!                "appPasswords": [ "<an app password as stored, JSON text>" ] } }
//! ```
//!
//! `account` is present when an account owns the repository: its record
//! and app passwords as the store keeps them (passwords as Argon2id
//! hashes, never in clear), carried as text this crate does not read; the
//! `accounts` crate restores them. Sessions are not carried.
//!
//! `keys` holds public keys only (private keys stay in their files); it is
//! absent in files written before it existed, which then say nothing about
//! keys. `current` is absent when the repository signs no next commit.
//!
//! `lexicon` is absent for a collection declared without one; `lexicons`
//! (the definitions record Lexicons refer to) is absent when there are
//! none, and files written before it existed read as having none. Lexicons
//! are kept as JSON text so that they round-trip byte for byte whatever
//! they hold.

use bytes::Bytes;
use foldhash::HashMap;
use serde::{Deserialize, Serialize};

use crate::{
    car::read::car_err, error::Error, keys::SigningKeys, repository::collection::CollectionInfo,
    signing::PublicKey,
};
use index::IndexKind;

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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) keys: Option<DeclaredKeys>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) account: Option<AccountBackup>,
}

/// The account that owns a repository, as a backup carries it: the stored
/// JSON of the account and of each of its app passwords (hashes only),
/// for the `accounts` crate to restore.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AccountBackup {
    /// The account's stored JSON.
    pub record: String,
    /// Each app password's stored JSON.
    #[serde(default)]
    pub app_passwords: Vec<String>,
}

/// The public signing keys: the one that signs the next commit, and every
/// one trusted to have signed the history (`did:key` strings).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct DeclaredKeys {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) current: Option<String>,
    #[serde(default)]
    pub(crate) known: Vec<String>,
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

/// A restore makes the repository's declarations the file's: what the file
/// declares is set, what it does not is removed. Known keys are the one
/// exception: they only grow (the history they signed stays), and the
/// file's keys are trusted only when the store knew none or the caller
/// said to.
impl Declarations {
    /// The collection entries that change when the file's declarations
    /// replace `stored`'s: each the file declares (as it declares it), and
    /// each `stored` declares that the file does not (undeclared: any key,
    /// no Lexicon). `stored` is updated to the result.
    pub(crate) fn collection_changes(
        &self,
        stored: &mut HashMap<String, CollectionInfo>,
    ) -> Result<Vec<(String, CollectionInfo)>, Error> {
        let mut changes = Vec::new();
        for c in &self.collections {
            rkey::Nsid::new(&c.nsid).map_err(|e| car_err(format!("declared collection: {e}")))?;
            let info = CollectionInfo {
                key: c
                    .key
                    .parse()
                    .map_err(|e| car_err(format!("declared collection {}: {e}", c.nsid)))?,
                declared: c.declared,
                lexicon: match &c.lexicon {
                    Some(text) => Some(serde_json::from_str(text).map_err(|e| {
                        car_err(format!("declared collection {}: Lexicon: {e}", c.nsid))
                    })?),
                    None => None,
                },
            };
            if stored.get(&c.nsid) != Some(&info) {
                changes.push((c.nsid.clone(), info));
            }
        }
        for (nsid, info) in stored.iter() {
            if info.declared && !self.collections.iter().any(|c| c.nsid == *nsid) {
                changes.push((nsid.clone(), CollectionInfo::undeclared()));
            }
        }
        for (nsid, info) in &changes {
            stored.insert(nsid.clone(), info.clone());
        }
        Ok(changes)
    }

    /// The field indexes declared: (collection, path, kind).
    pub(crate) fn parsed_indexes(&self) -> Result<Vec<(String, String, IndexKind)>, Error> {
        self.indexes
            .iter()
            .map(|i| {
                let kind = i.kind.parse().map_err(|e| {
                    car_err(format!("declared index {} {}: {e}", i.collection, i.path))
                })?;
                Ok((i.collection.clone(), i.path.clone(), kind))
            })
            .collect()
    }

    /// The definitions Lexicons declared, by NSID, as JSON text.
    pub(crate) fn parsed_lexicons(&self) -> Result<Vec<(String, Bytes)>, Error> {
        self.lexicons
            .iter()
            .map(|text| {
                let doc: serde_json::Value = serde_json::from_str(text)
                    .map_err(|e| car_err(format!("declared Lexicon: {e}")))?;
                let nsid = doc
                    .get("id")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or_default();
                rkey::Nsid::new(nsid).map_err(|e| car_err(format!("declared Lexicon: {e}")))?;
                Ok((nsid.to_owned(), Bytes::from(text.clone())))
            })
            .collect()
    }

    /// The signing keys the store keeps after the import, from `stored`,
    /// or `None` when the file says nothing of keys (written before it
    /// carried them).
    ///
    /// The file's keys become known when `trust_file` (the store knew no
    /// key for the repository, or the caller trusts new keys); `given`
    /// always do. The current key stays the store's when its public key
    /// is the file's current one (or the file names none); otherwise the
    /// store has no private key for the next commit, which a repository
    /// with known keys then refuses until one is given.
    pub(crate) fn keys_over(
        &self,
        mut stored: SigningKeys,
        given: &[PublicKey],
        trust_file: bool,
    ) -> Result<Option<SigningKeys>, Error> {
        let Some(declared) = &self.keys else {
            return Ok(None);
        };
        let parse = |did: &str| {
            PublicKey::from_did_key(did).map_err(|e| car_err(format!("declared key {did}: {e}")))
        };
        let current = declared.current.as_deref().map(parse).transpose()?;
        let known = declared
            .known
            .iter()
            .map(|d| parse(d))
            .collect::<Result<Vec<_>, _>>()?;
        if trust_file {
            for key in known.iter().chain(&current) {
                stored.trust(*key);
            }
        }
        for key in given {
            stored.trust(*key);
        }
        if let Some(key) = current
            && stored.current.as_ref().is_some_and(|c| c.key != key)
        {
            stored.current = None;
        }
        Ok(Some(stored))
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
            keys: Some(DeclaredKeys {
                current: Some(
                    "did:key:zQ3shokFTS3brHcDQrn82RUDfCZESWL1ZdCEJwekUDPQiYBme".to_owned(),
                ),
                known: vec!["did:key:zQ3shokFTS3brHcDQrn82RUDfCZESWL1ZdCEJwekUDPQiYBme".to_owned()],
            }),
            account: Some(AccountBackup {
                record: r#"{"did":"did:web:a.example","handle":"a.example"}"#.to_owned(),
                app_passwords: vec![r#"{"name":"bot"}"#.to_owned()],
            }),
        };
        let block = d.encode();
        assert_eq!(Declarations::decode(block.bytes()), Some(d.clone()));
        let mut other = d;
        other.kind = "app.example.record".to_owned();
        assert_eq!(Declarations::decode(other.encode().bytes()), None);
        assert_eq!(Declarations::decode(b"\xa0"), None);
    }
}
