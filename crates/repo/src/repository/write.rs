//! Writes as callers give them ([`Write`]), as checked before they meet
//! the repository's state, and what each did ([`WriteResult`],
//! [`CommitResult`]).

use std::sync::Arc;

use cid::Cid;
use lexicon::Lexicons;
use rkey::{Nsid, RecordKey, Tid};
use serde_json::Value;

use super::paths::record_uri;
use crate::{
    error::Error,
    record::Record,
    validation::{Validation, ValidationStatus, validate_write},
};

/// One change in [`Repository::apply_writes`](super::state::Repository::apply_writes).
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// Creates a record; fails with [`Error::RecordExists`] if it exists.
    /// Without an rkey, a fresh TID is used.
    Create {
        /// The collection (an NSID).
        collection: String,
        /// The record key, or `None` for a fresh TID.
        rkey: Option<String>,
        /// The record (AT Protocol JSON).
        value: Value,
    },
    /// Creates or replaces a record.
    Update {
        /// The collection (an NSID).
        collection: String,
        /// The record key.
        rkey: String,
        /// The record (AT Protocol JSON).
        value: Value,
        /// Fail with [`Error::InvalidSwap`] unless the record's current CID is this.
        swap_record: Option<Cid>,
    },
    /// Deletes a record; fails with [`Error::RecordNotFound`] if absent.
    Delete {
        /// The collection (an NSID).
        collection: String,
        /// The record key.
        rkey: String,
        /// Fail with [`Error::InvalidSwap`] unless the record's current CID is this.
        swap_record: Option<Cid>,
    },
}

impl Write {
    /// `$type` of an applyWrites create.
    pub const CREATE_TYPE: &'static str = "com.atproto.repo.applyWrites#create";
    /// `$type` of an applyWrites update.
    pub const UPDATE_TYPE: &'static str = "com.atproto.repo.applyWrites#update";
    /// `$type` of an applyWrites delete.
    pub const DELETE_TYPE: &'static str = "com.atproto.repo.applyWrites#delete";

    /// One write of `com.atproto.repo.applyWrites` (`{"$type", "collection",
    /// "rkey"?, "value"?}`).
    ///
    /// # Errors
    ///
    /// A message naming what is missing or wrong.
    pub fn from_apply_writes(w: Value) -> Result<Self, String> {
        #[derive(serde::Deserialize)]
        struct Fields {
            #[serde(rename = "$type")]
            kind: String,
            collection: String,
            rkey: Option<String>,
            value: Option<Value>,
        }
        let f: Fields = serde_json::from_value(w).map_err(|e| e.to_string())?;
        let rkey = |rkey: Option<String>| rkey.ok_or("rkey is required");
        let value = |value: Option<Value>| value.ok_or("value is required");
        Ok(match f.kind.as_str() {
            Self::CREATE_TYPE => Self::Create {
                collection: f.collection,
                rkey: f.rkey,
                value: value(f.value)?,
            },
            Self::UPDATE_TYPE => Self::Update {
                collection: f.collection,
                rkey: rkey(f.rkey)?,
                value: value(f.value)?,
                swap_record: None,
            },
            Self::DELETE_TYPE => Self::Delete {
                collection: f.collection,
                rkey: rkey(f.rkey)?,
                swap_record: None,
            },
            other => {
                return Err(format!(
                    "unknown $type {other:?} (expected {}, {} or {})",
                    Self::CREATE_TYPE,
                    Self::UPDATE_TYPE,
                    Self::DELETE_TYPE
                ));
            }
        })
    }

    /// The value a create or update writes.
    pub fn value(&self) -> Option<&Value> {
        match self {
            Self::Create { value, .. } | Self::Update { value, .. } => Some(value),
            Self::Delete { .. } => None,
        }
    }
}

/// What one write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteResult {
    /// The collection.
    pub collection: String,
    /// The record key (the generated TID for a create without one).
    pub rkey: String,
    /// The record's new CID (`None` for a delete).
    pub cid: Option<Cid>,
    /// Whether the record was validated against a Lexicon (`None` for a
    /// delete).
    pub validation: Option<crate::validation::ValidationStatus>,
}

impl WriteResult {
    /// This result as `com.atproto.repo.applyWrites` answers it, for a
    /// write to `repo` that was a create (`create`) or an update; a delete's
    /// is its `$type` alone.
    #[must_use]
    pub fn apply_writes_json(&self, repo: &str, create: bool) -> Value {
        let Some(cid) = self.cid else {
            return serde_json::json!({"$type": "com.atproto.repo.applyWrites#deleteResult"});
        };
        serde_json::json!({
            "$type": if create {
                "com.atproto.repo.applyWrites#createResult"
            } else {
                "com.atproto.repo.applyWrites#updateResult"
            },
            "uri": record_uri(repo, &self.collection, &self.rkey),
            "cid": cid.to_string(),
            "validationStatus": self.validation.map_or("unknown", crate::validation::ValidationStatus::as_str),
        })
    }
}

/// The commit made by a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitResult {
    /// The new commit's CID.
    pub commit: Cid,
    /// Its rev.
    pub rev: Tid,
    /// One result per write, in order.
    pub results: Vec<WriteResult>,
    /// The sequence number of the commit's firehose event.
    pub seq: Option<u64>,
    /// Whether this request is the first of those its commit answers
    /// (group commit): counting the results where it is true counts
    /// commits.
    pub first_in_commit: bool,
}

/// A write after validation, before it meets the repository's state.
pub(super) enum Checked {
    Put {
        collection: Nsid,
        rkey: Option<RecordKey>,
        record: Record,
        create: bool,
        swap: Option<Cid>,
        validation: ValidationStatus,
        /// How it was validated: the commit validates it again when the
        /// repository's Lexicons changed since (`Repository::try_apply`).
        mode: Validation,
        against: Arc<Lexicons>,
    },
    Delete {
        collection: Nsid,
        rkey: RecordKey,
        swap: Option<Cid>,
    },
}

pub(super) fn check(
    write: Write,
    lexicons: &Arc<Lexicons>,
    mode: Validation,
) -> Result<Checked, Error> {
    Ok(match write {
        Write::Create {
            collection,
            rkey,
            value,
        } => {
            let collection = Nsid::new(collection)?;
            let rkey = rkey.map(RecordKey::new).transpose()?;
            let record = Record::from_json_ref(collection.as_str(), &value)?;
            Checked::Put {
                validation: validate_write(lexicons, mode, collection.as_str(), &value)?,
                rkey,
                record,
                collection,
                create: true,
                swap: None,
                mode,
                against: Arc::clone(lexicons),
            }
        }
        Write::Update {
            collection,
            rkey,
            value,
            swap_record,
        } => {
            let collection = Nsid::new(collection)?;
            let rkey = RecordKey::new(rkey)?;
            let record = Record::from_json_ref(collection.as_str(), &value)?;
            Checked::Put {
                validation: validate_write(lexicons, mode, collection.as_str(), &value)?,
                rkey: Some(rkey),
                record,
                collection,
                create: false,
                swap: swap_record,
                mode,
                against: Arc::clone(lexicons),
            }
        }
        Write::Delete {
            collection,
            rkey,
            swap_record,
        } => Checked::Delete {
            collection: Nsid::new(collection)?,
            rkey: RecordKey::new(rkey)?,
            swap: swap_record,
        },
    })
}
