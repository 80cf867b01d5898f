//! dag-cbor back to AT Protocol JSON, and the data-model rules a stored
//! record must keep to so that its JSON reads back unchanged.

use std::fmt::Write as _;

use base64::Engine as _;
use ipld_core::ipld::Ipld;
use serde_json::{Map, Value};

use crate::{BASE64, Invalid};

/// A record's dag-cbor bytes as JSON (`null` for bytes that do not decode:
/// records are checked when built, so an undecodable one is a bug).
#[must_use]
pub fn dag_cbor_to_json(bytes: &[u8]) -> Value {
    match serde_ipld_dagcbor::from_slice::<Ipld>(bytes) {
        Ok(ipld) => ipld_to_json(&ipld),
        Err(_) => Value::Null,
    }
}

/// `ipld` as AT Protocol JSON: links as `{"$link"}`, bytes as `{"$bytes"}`,
/// integers beyond 64 bits as strings.
#[must_use]
pub fn ipld_to_json(ipld: &Ipld) -> Value {
    match ipld {
        Ipld::Null => Value::Null,
        Ipld::Bool(b) => Value::Bool(*b),
        Ipld::Integer(i) => i64::try_from(*i)
            .map(Value::from)
            .or_else(|_| u64::try_from(*i).map(Value::from))
            .unwrap_or_else(|_| Value::String(i.to_string())),
        Ipld::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
        Ipld::String(s) => Value::String(s.clone()),
        Ipld::Bytes(b) => {
            let mut m = Map::new();
            m.insert("$bytes".into(), Value::String(BASE64.encode(b)));
            Value::Object(m)
        }
        Ipld::List(items) => Value::Array(items.iter().map(ipld_to_json).collect()),
        Ipld::Map(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), ipld_to_json(v)))
                .collect(),
        ),
        Ipld::Link(cid) => {
            let mut m = Map::new();
            m.insert("$link".into(), Value::String(cid.to_string()));
            Value::Object(m)
        }
    }
}

/// Checks that `ipld`, at `path`, keeps to the data model the write API
/// accepts: no floats, integers in the signed 64-bit range, no map with a
/// `$link` or `$bytes` key (its JSON would read back as a link or bytes).
///
/// # Errors
///
/// [`Invalid`] naming the path of the first value that does not (in
/// dag-cbor key order).
pub fn check_data_model(ipld: &Ipld, path: &mut String) -> Result<(), Invalid> {
    match ipld {
        Ipld::Float(f) => Err(Invalid(format!(
            "{path}: {f} is a float (records allow integers only)"
        ))),
        Ipld::Integer(i) if i64::try_from(*i).is_err() => Err(Invalid(format!(
            "{path}: {i} is out of range (integers are signed 64-bit)"
        ))),
        Ipld::List(items) => {
            let len = path.len();
            for (i, item) in items.iter().enumerate() {
                let _ = write!(path, "[{i}]");
                check_data_model(item, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        Ipld::Map(map) => {
            if let Some(key) = ["$link", "$bytes"]
                .into_iter()
                .find(|k| map.contains_key(*k))
            {
                return Err(Invalid(format!(
                    "{path}: a map with a {key} key, which the JSON form reads back as a {}",
                    if key == "$link" {
                        "link"
                    } else {
                        "byte string"
                    }
                )));
            }
            let len = path.len();
            for (k, v) in map {
                path.push('.');
                path.push_str(k);
                check_data_model(v, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}
