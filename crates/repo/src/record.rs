//! Records: AT Protocol JSON in, dag-cbor blocks stored, JSON out.
//!
//! The JSON form follows the AT Protocol data model: `{"$link": "<cid>"}`
//! is a link, `{"$bytes": "<base64>"}` is a byte string, numbers are
//! integers (floats are rejected), and every record is an object whose
//! `$type` is its collection.

use bytes::Bytes;
use cid::Cid;
use ipld_core::ipld::Ipld;
use serde_json::Value;

use crate::error::Error;

const DAG_CBOR: u64 = 0x71;
const SHA2_256: u64 = 0x12;

/// A record: its dag-cbor block and that block's CID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    block: store::Block,
}

impl Record {
    /// Validates `value` as a record of `collection` and encodes it.
    ///
    /// `$type` is set to `collection` when absent and must equal it when
    /// present.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRecord`] naming the path of the first invalid value.
    pub fn from_json(collection: &str, value: Value) -> Result<Self, Error> {
        Self::from_json_ref(collection, &value)
    }

    /// [`Record::from_json`] of a borrowed value.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRecord`] naming the path of the first invalid value
    /// (in dag-cbor key order).
    pub fn from_json_ref(collection: &str, value: &Value) -> Result<Self, Error> {
        let Value::Object(map) = value else {
            return Err(Error::InvalidRecord(format!(
                "a record must be a JSON object, not {}",
                datamodel::kind(value)
            )));
        };
        let fill_type = match map.get("$type") {
            None => Some(collection),
            Some(Value::String(t)) if t == collection => None,
            Some(other) => {
                return Err(Error::InvalidRecord(format!(
                    "$type is {other}, but the record is written to collection {collection}"
                )));
            }
        };
        let mut out = Vec::with_capacity(128);
        let mut path = String::from("$");
        datamodel::map_to_dag_cbor(map, fill_type, &mut out, &mut path)
            .map_err(|e| Error::InvalidRecord(e.0))?;
        Ok(Self {
            block: store::Block::new(DAG_CBOR, Bytes::from(out)),
        })
    }

    /// The record's block.
    pub fn block(&self) -> &store::Block {
        &self.block
    }

    /// A record from a block, checked to be a canonical dag-cbor map.
    ///
    /// # Errors
    ///
    /// [`Error::MalformedBlock`] when it is not.
    pub fn from_block(block: store::Block) -> Result<Self, Error> {
        Self::check_encoding(block.cid(), block.bytes())?;
        Ok(Self { block })
    }

    /// Checks that `bytes`, the block `cid`, is a record: a canonical
    /// dag-cbor map under a dag-cbor CID.
    pub(crate) fn check_encoding(cid: Cid, bytes: &[u8]) -> Result<(), Error> {
        let malformed = |reason: String| Error::MalformedBlock { cid, reason };
        if cid.codec() != DAG_CBOR {
            return Err(malformed(format!(
                "codec 0x{:x} is not dag-cbor",
                cid.codec()
            )));
        }
        let ipld: Ipld = serde_ipld_dagcbor::from_slice(bytes)
            .map_err(|e| malformed(format!("not dag-cbor: {e}")))?;
        if !matches!(ipld, Ipld::Map(_)) {
            return Err(malformed("a record must be a map".into()));
        }
        let canonical = serde_ipld_dagcbor::to_vec(&ipld)
            .map_err(|e| malformed(format!("cannot re-encode: {e}")))?;
        if canonical != bytes {
            return Err(malformed("not canonical dag-cbor".into()));
        }
        Ok(())
    }

    /// Checks that the record `bytes` (a canonical dag-cbor map, see
    /// [`Record::check_encoding`]) keeps to the data model the write API
    /// accepts, so that it reads back through the JSON the API serves
    /// unchanged: no floats, integers in the signed 64-bit range, no map
    /// with a `$link` or `$bytes` key that is not a link or bytes (its JSON
    /// would read back as one), and a `$type` equal to `collection`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRecord`] naming the path of the first value that
    /// does not (in dag-cbor key order).
    pub(crate) fn check_data_model(collection: &str, bytes: &[u8]) -> Result<(), Error> {
        let ipld: Ipld = serde_ipld_dagcbor::from_slice(bytes)
            .map_err(|e| Error::InvalidRecord(format!("not dag-cbor: {e}")))?;
        let Ipld::Map(map) = &ipld else {
            return Err(Error::InvalidRecord("a record must be a map".into()));
        };
        match map.get("$type") {
            Some(Ipld::String(t)) if t == collection => {}
            Some(Ipld::String(t)) => {
                return Err(Error::InvalidRecord(format!(
                    "$type is {t:?}, but the record is in collection {collection}"
                )));
            }
            Some(_) => {
                return Err(Error::InvalidRecord("$type must be a string".into()));
            }
            None => {
                return Err(Error::InvalidRecord(format!(
                    "the record has no $type (it must be {collection:?})"
                )));
            }
        }
        let mut path = String::from("$");
        datamodel::check_data_model(&ipld, &mut path).map_err(|e| Error::InvalidRecord(e.0))
    }

    /// A record from a stored block, without re-checking its encoding
    /// (records are checked when they are written or imported).
    pub(crate) fn stored(block: store::Block) -> Self {
        Self { block }
    }

    /// The record's CID.
    pub fn cid(&self) -> Cid {
        self.block.cid()
    }

    /// The record's dag-cbor bytes.
    pub fn bytes(&self) -> &Bytes {
        self.block.bytes()
    }

    /// The record as AT Protocol JSON.
    pub fn to_json(&self) -> Value {
        datamodel::dag_cbor_to_json(self.bytes())
    }

    /// The record as AT Protocol JSON, only `fields` of it when given
    /// (`--fields`, `fields=`).
    pub fn to_json_fields(&self, fields: Option<&index::RecordFields>) -> Value {
        let value = self.to_json();
        match fields {
            Some(f) => f.select(&value),
            None => value,
        }
    }
}

/// Whether `cid` is a CIDv1 with sha2-256 (the only hash the store verifies).
pub(crate) fn is_supported(cid: &Cid) -> bool {
    cid.hash().code() == SHA2_256
}
