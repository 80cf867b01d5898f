//! AT Protocol JSON straight to canonical dag-cbor, checked on the way.
//!
//! The output is what `serde_ipld_dagcbor` writes for the same data as an
//! `Ipld` value (pinned by the `repo` crate's `tests/record_encoding_boundaries.rs`, and
//! by its `tests/records_vs_atproto.rs` against the npm reference): shortest-form
//! heads, map keys ordered by length and then bytewise, links as tag 42
//! over the CID bytes behind a zero byte. Writing it directly, rather than
//! building an `Ipld` tree and serializing that (which buffers every map
//! entry separately to sort them), makes one allocation per record plus one
//! per map (to sort its keys). The CBOR head writer repeats the dozen lines
//! of `pail`'s, which that crate keeps private.

use std::fmt::Write as _;

use base64::Engine as _;
use cid::Cid;
use serde_json::{Map, Value};

use crate::{BASE64, Invalid, kind};

const UNSIGNED: u8 = 0;
const NEGATIVE: u8 = 1;
const BYTES: u8 = 2;
const TEXT: u8 = 3;
const ARRAY: u8 = 4;
const MAP: u8 = 5;
const TAG: u8 = 6;
const CID_TAG: u64 = 42;
const FALSE: u8 = 0xf4;
const TRUE: u8 = 0xf5;
const NULL: u8 = 0xf6;

/// A head: major type and argument, in the shortest form.
fn head(out: &mut Vec<u8>, major: u8, n: u64) {
    let major = major << 5;
    if n < 24 {
        out.push(major | n as u8);
    } else if let Ok(n) = u8::try_from(n) {
        out.extend_from_slice(&[major | 24, n]);
    } else if let Ok(n) = u16::try_from(n) {
        out.push(major | 25);
        out.extend_from_slice(&n.to_be_bytes());
    } else if let Ok(n) = u32::try_from(n) {
        out.push(major | 26);
        out.extend_from_slice(&n.to_be_bytes());
    } else {
        out.push(major | 27);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn text(out: &mut Vec<u8>, s: &str) {
    head(out, TEXT, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

fn invalid(path: &str, what: std::fmt::Arguments<'_>) -> Invalid {
    Invalid(format!("{path}{what}"))
}

fn value(v: &Value, out: &mut Vec<u8>, path: &mut String) -> Result<(), Invalid> {
    match v {
        Value::Null => out.push(NULL),
        Value::Bool(b) => out.push(if *b { TRUE } else { FALSE }),
        // AT Protocol integers are signed 64-bit.
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) if i >= 0 => head(out, UNSIGNED, i as u64),
            // -1 - i for negative i fits in a u64.
            (Some(i), _, _) => head(out, NEGATIVE, !(i as u64)),
            (None, Some(_), _) => {
                return Err(invalid(
                    path,
                    format_args!(": {n} is out of range (integers are signed 64-bit)"),
                ));
            }
            // An integer literal beyond 64 bits parses as a whole float.
            (None, None, Some(f)) if f.fract() == 0.0 && f.abs() >= 9.223_372_036_854_775e18 => {
                return Err(invalid(
                    path,
                    format_args!(": {n} is out of range (integers are signed 64-bit)"),
                ));
            }
            _ => {
                return Err(invalid(
                    path,
                    format_args!(
                        ": {n} is not an integer (records allow integers only; store decimals as strings)"
                    ),
                ));
            }
        },
        Value::String(s) => text(out, s),
        Value::Array(items) => {
            head(out, ARRAY, items.len() as u64);
            let len = path.len();
            for (i, item) in items.iter().enumerate() {
                let _ = write!(path, "[{i}]");
                value(item, out, path)?;
                path.truncate(len);
            }
        }
        Value::Object(map) => {
            if !special(map, out, path)? {
                map_to_dag_cbor(map, None, out, path)?;
            }
        }
    }
    Ok(())
}

/// Writes a map in dag-cbor key order, with `extra_type` as its `$type`
/// when given (the caller has checked the map has none); `path` names the
/// map in errors (`$` for a record) and is left as it was.
///
/// # Errors
///
/// [`Invalid`] naming the path of the first value the data model does not
/// allow (in dag-cbor key order).
pub fn map_to_dag_cbor(
    map: &Map<String, Value>,
    extra_type: Option<&str>,
    out: &mut Vec<u8>,
    path: &mut String,
) -> Result<(), Invalid> {
    // `None`: the `$type` to fill in.
    let mut entries: Vec<(&str, Option<&Value>)> = Vec::with_capacity(map.len() + 1);
    entries.extend(map.iter().map(|(k, v)| (k.as_str(), Some(v))));
    if extra_type.is_some() {
        entries.push(("$type", None));
    }
    entries.sort_unstable_by(|(a, _), (b, _)| a.len().cmp(&b.len()).then_with(|| a.cmp(b)));
    head(out, MAP, entries.len() as u64);
    let len = path.len();
    for (k, v) in entries {
        text(out, k);
        match v {
            Some(v) => {
                path.push('.');
                path.push_str(k);
                value(v, out, path)?;
                path.truncate(len);
            }
            None => text(out, extra_type.unwrap_or_default()),
        }
    }
    Ok(())
}

/// Writes `{"$link": cid}` as a link and `{"$bytes": base64}` as bytes;
/// `false` for any other object.
fn special(map: &Map<String, Value>, out: &mut Vec<u8>, path: &str) -> Result<bool, Invalid> {
    let (key, v) = match (map.get("$link"), map.get("$bytes")) {
        (Some(v), None) => ("$link", v),
        (None, Some(v)) => ("$bytes", v),
        (None, None) => return Ok(false),
        (Some(_), Some(_)) => {
            return Err(invalid(
                path,
                format_args!(": an object cannot hold both $link and $bytes"),
            ));
        }
    };
    if map.len() != 1 {
        return Err(invalid(
            path,
            format_args!(": an object with {key} must have no other fields"),
        ));
    }
    let Value::String(s) = v else {
        return Err(invalid(
            path,
            format_args!(".{key}: must be a string, not {}", kind(v)),
        ));
    };
    if key == "$link" {
        let cid = Cid::try_from(s.as_str())
            .map_err(|e| invalid(path, format_args!(".$link: {s:?} is not a CID ({e})")))?;
        let bytes = cid.to_bytes();
        head(out, TAG, CID_TAG);
        head(out, BYTES, bytes.len() as u64 + 1);
        out.push(0);
        out.extend_from_slice(&bytes);
    } else {
        let bytes = BASE64
            .decode(s)
            .map_err(|e| invalid(path, format_args!(".$bytes: not standard base64 ({e})")))?;
        head(out, BYTES, bytes.len() as u64);
        out.extend_from_slice(&bytes);
    }
    Ok(true)
}
