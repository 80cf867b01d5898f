//! Entry points for the fuzz targets in `fuzz/`: decoders of stored bytes
//! that are otherwise internal. Not a stable API.

/// Per path, its values (`None`: no answer).
pub type PathValues = Option<Vec<Vec<serde_json::Value>>>;

/// Decodes `bytes` as a packed column block and as a fence chunk;
/// whether each was accepted.
#[must_use]
pub fn packed_columns(bytes: &[u8]) -> (bool, bool) {
    crate::columns::fuzz_decode(bytes)
}

/// The values an index build reads at each of `paths` in a record's
/// dag-cbor `bytes`, straight from the bytes (`None`: left to the JSON
/// walk) and by the JSON walk (`None`: not dag-cbor); they must agree
/// when both answer.
#[must_use]
pub fn index_values(bytes: &[u8], paths: &[&str]) -> (PathValues, PathValues) {
    walked_and_json(bytes, paths)
}

/// See [`index_values`]: the walk's keepable leaves (strings,
/// booleans, `i64`s; `null` for anything else) and the JSON walk's values
/// mapped alike (`None` when the bytes are not dag-cbor).
fn walked_and_json(bytes: &[u8], paths: &[&str]) -> (PathValues, PathValues) {
    use serde_json::Value;
    let segments: Vec<Vec<&str>> = paths.iter().map(|p| p.split('.').collect()).collect();
    let mut outs = vec![Vec::new(); paths.len()];
    let walked = crate::cbor::leaves_at_each(bytes, &segments, &mut outs)
        .ok()
        .map(|()| {
            outs.iter()
                .map(|leaves| {
                    leaves
                        .iter()
                        .map(|l| match l {
                            crate::cbor::Leaf::Str(s) => Value::String((*s).to_owned()),
                            crate::cbor::Leaf::Bool(b) => Value::Bool(*b),
                            crate::cbor::Leaf::Int(i) => Value::from(*i),
                            crate::cbor::Leaf::Other => Value::Null,
                        })
                        .collect()
                })
                .collect()
        });
    let Ok(ipld) = serde_ipld_dagcbor::from_slice::<ipld_core::ipld::Ipld>(bytes) else {
        return (walked, None);
    };
    let json = datamodel::ipld_to_json(&ipld);
    let by_json = paths
        .iter()
        .map(|p| {
            crate::values::values_at(&json, p)
                .into_iter()
                .map(|v| match v {
                    Value::String(_) | Value::Bool(_) => v.clone(),
                    Value::Number(n) => n.as_i64().map_or(Value::Null, Value::from),
                    _ => Value::Null,
                })
                .collect()
        })
        .collect();
    (walked, Some(by_json))
}
