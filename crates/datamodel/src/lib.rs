//! The AT Protocol data model as datarepo reads and writes it.
//!
//! Records travel as AT Protocol JSON and are stored as canonical dag-cbor.
//! In the JSON form `{"$link": "<cid>"}` is a link, `{"$bytes": "<base64>"}`
//! is a byte string, and numbers are signed 64-bit integers (floats are
//! rejected). This crate converts between the two forms:
//!
//! - [`map_to_dag_cbor`]: a JSON object straight to canonical dag-cbor,
//!   checked on the way, naming the path of the first value it refuses;
//! - [`dag_cbor_to_json`] and [`ipld_to_json`]: stored bytes back to JSON;
//! - [`check_data_model`]: whether decoded dag-cbor (an import's record)
//!   keeps to the rules the JSON form needs to read back unchanged.
//!
//! It knows nothing of records, collections or storage: the `repo` crate
//! builds records from it, the `index` crate reads indexed values with it.

mod decode;
mod encode;

pub use decode::{check_data_model, dag_cbor_to_json, ipld_to_json};
pub use encode::map_to_dag_cbor;

/// A value the data model does not allow, with the path that names it
/// (`$.text`, `$.tags[2]`) leading the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid(pub String);

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Invalid {}

/// Standard base64; padding is accepted on input and never written.
const BASE64: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    base64::engine::GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
);

/// What kind of JSON value `v` is, with its article, for messages ("a
/// string", "an array").
#[must_use]
pub fn kind(v: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
