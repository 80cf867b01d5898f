//! Choosing what is shown of a record: `--fields a,b.c` (`query`, `ls`,
//! `get`, `queryRecords`, `listRecords`, the stream's `fields=`).

use serde_json::{Map, Value};

/// Record paths to keep of each record, in the `--where` language's path
/// syntax (segments of `[A-Za-z0-9_$]` joined by dots).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordFields {
    paths: Vec<String>,
}

impl RecordFields {
    /// Most paths one list may name.
    pub const MAX_PATHS: usize = 64;

    /// The paths of a comma-separated list (`text,embed.images.alt`).
    ///
    /// # Errors
    ///
    /// A message naming a path that is not one, or saying there are too
    /// many or none.
    pub fn parse(list: &str) -> Result<Self, String> {
        Self::new(
            list.split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(str::to_owned)
                .collect(),
        )
    }

    /// These paths.
    ///
    /// # Errors
    ///
    /// As [`RecordFields::parse`].
    pub fn new(paths: Vec<String>) -> Result<Self, String> {
        if paths.is_empty() {
            return Err("fields names no path".into());
        }
        if paths.len() > Self::MAX_PATHS {
            return Err(format!(
                "fields names {} paths; at most {}",
                paths.len(),
                Self::MAX_PATHS
            ));
        }
        if let Some(bad) = paths.iter().find(|p| !valid_path(p)) {
            return Err(format!(
                "fields: {bad:?} is not a record path (segments of letters, digits, _ and $, joined by .)"
            ));
        }
        Ok(Self { paths })
    }

    /// The paths, as given.
    #[must_use]
    pub fn paths(&self) -> &[String] {
        &self.paths
    }

    /// `record` with only the values at the paths, inside the objects and
    /// arrays that hold them: an object keeps the keys on a path, in the
    /// record's order; an array keeps its length, an element holding none
    /// of a path becoming `{}`. A path the record lacks adds nothing.
    #[must_use]
    pub fn select(&self, record: &Value) -> Value {
        let mut out = Value::Object(Map::new());
        for path in &self.paths {
            let segments: Vec<&str> = path.split('.').collect();
            copy(record, &segments, &mut out);
        }
        if let (Value::Object(selected), Value::Object(original)) = (&mut out, record) {
            reorder(selected, original);
        }
        out
    }
}

/// A path: segments of `[A-Za-z0-9_$]` joined by dots, at most 256 bytes.
fn valid_path(path: &str) -> bool {
    path.len() <= 256
        && path.split('.').all(|s| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$')
        })
}

fn copy(src: &Value, segments: &[&str], dst: &mut Value) {
    let Some((first, rest)) = segments.split_first() else {
        *dst = src.clone();
        return;
    };
    match src {
        Value::Object(map) => {
            if !dst.is_object() {
                *dst = Value::Object(Map::new());
            }
            if let (Some(child), Value::Object(out)) = (map.get(*first), dst) {
                let slot = out.entry(*first).or_insert(Value::Null);
                copy(child, rest, slot);
            }
        }
        Value::Array(items) => {
            if dst.as_array().is_none_or(|a| a.len() != items.len()) {
                *dst = Value::Array(vec![Value::Null; items.len()]);
            }
            if let Value::Array(out) = dst {
                for (item, slot) in items.iter().zip(out) {
                    copy(item, segments, slot);
                }
            }
        }
        _ => {}
    }
}

/// Puts `selected`'s keys (and those of the objects inside it) in
/// `original`'s order, whatever order the paths came in.
fn reorder(selected: &mut Map<String, Value>, original: &Map<String, Value>) {
    let mut ordered = Map::new();
    for (key, value) in original {
        if let Some(mut kept) = selected.remove(key) {
            reorder_value(&mut kept, value);
            ordered.insert(key.clone(), kept);
        }
    }
    *selected = ordered;
}

fn reorder_value(selected: &mut Value, original: &Value) {
    match (selected, original) {
        (Value::Object(s), Value::Object(o)) => reorder(s, o),
        (Value::Array(s), Value::Array(o)) => {
            for (s, o) in s.iter_mut().zip(o) {
                reorder_value(s, o);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_keep_their_objects_and_arrays() {
        let record = json!({"text": "hi", "langs": ["en"],
            "embed": {"images": [{"alt": "a", "image": 1}, {"image": 2}]}, "n": 3});
        let f = |list: &str| RecordFields::parse(list).unwrap().select(&record);
        assert_eq!(
            f("embed.images.alt,text,missing.x"),
            json!({"text": "hi", "embed": {"images": [{"alt": "a"}, {}]}})
        );
        assert_eq!(
            f("embed.images.image,embed.images.alt").to_string(),
            json!({"embed": {"images": [{"alt": "a", "image": 1}, {"image": 2}]}}).to_string()
        );
        assert!(RecordFields::parse("a..b").is_err());
        assert!(RecordFields::parse("a b").is_err());
        assert!(RecordFields::parse(" , ").is_err());
        assert!(RecordFields::parse("$type,a.b_c").is_ok());
    }
}
