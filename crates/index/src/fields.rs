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
    /// arrays that hold them, keys in the record's order. An array on a
    /// path keeps its length, an element holding nothing of the path
    /// being `null` (so positions still line up: the alt text of the
    /// second image is the second element); a path the record lacks adds
    /// nothing.
    #[must_use]
    pub fn select(&self, record: &Value) -> Value {
        let mut out = Value::Object(Map::new());
        for path in &self.paths {
            let segments: Vec<&str> = path.split('.').collect();
            if let Some(picked) = pick(record, &segments) {
                merge(&mut out, picked);
            }
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

/// What of `src` lies at `segments`, in the objects and arrays holding it.
fn pick(src: &Value, segments: &[&str]) -> Option<Value> {
    let Some((first, rest)) = segments.split_first() else {
        return Some(src.clone());
    };
    match src {
        Value::Object(map) => {
            let child = pick(map.get(*first)?, rest)?;
            let mut out = Map::new();
            out.insert((*first).to_owned(), child);
            Some(Value::Object(out))
        }
        Value::Array(items) => {
            let picked: Vec<Option<Value>> = items.iter().map(|i| pick(i, segments)).collect();
            picked.iter().any(Option::is_some).then(|| {
                Value::Array(
                    picked
                        .into_iter()
                        .map(|p| p.unwrap_or(Value::Null))
                        .collect(),
                )
            })
        }
        _ => None,
    }
}

/// Adds `from` (another path's pick of the same record) to `into`.
fn merge(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, value) in b {
                match a.get_mut(&key) {
                    Some(existing) => merge(existing, value),
                    None => {
                        a.insert(key, value);
                    }
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (x, y) in a.iter_mut().zip(b) {
                if x.is_null() {
                    *x = y;
                } else if !y.is_null() {
                    merge(x, y);
                }
            }
        }
        (into, from) => *into = from,
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

/// The value at `path` of a record as one table cell's text: a string as
/// it is, any other value (a number, a boolean, an array, an object) as
/// JSON, several values (arrays entered on the way) as a JSON array of
/// them, nothing (or `null`) as the empty string. What `--format csv` and
/// the server's CSV export write.
#[must_use]
pub fn field_text(value: &Value, path: &str) -> String {
    let mut current = vec![value];
    for segment in path.split('.') {
        let mut next = Vec::new();
        for v in current {
            match v {
                Value::Object(o) => next.extend(o.get(segment)),
                Value::Array(items) => next.extend(
                    items
                        .iter()
                        .filter_map(|i| i.as_object().and_then(|o| o.get(segment))),
                ),
                _ => {}
            }
        }
        current = next;
    }
    match current.as_slice() {
        [] | [Value::Null] => String::new(),
        [Value::String(s)] => s.clone(),
        [one] => one.to_string(),
        many => Value::Array(many.iter().map(|v| (*v).clone()).collect()).to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn cells_are_text_or_json() {
        let v = serde_json::json!({"a": "x,y", "n": 3, "t": [1, 2], "o": {"k": "v"}, "z": null,
                       "imgs": [{"alt": "p"}, {"alt": "q"}, {}]});
        assert_eq!(super::field_text(&v, "a"), "x,y");
        assert_eq!(super::field_text(&v, "n"), "3");
        assert_eq!(super::field_text(&v, "t"), "[1,2]");
        assert_eq!(super::field_text(&v, "o"), r#"{"k":"v"}"#);
        assert_eq!(super::field_text(&v, "o.k"), "v");
        assert_eq!(super::field_text(&v, "z"), "");
        assert_eq!(super::field_text(&v, "missing"), "");
        assert_eq!(super::field_text(&v, "imgs.alt"), r#"["p","q"]"#);
    }

    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn paths_keep_their_objects_and_arrays() {
        let record = json!({"text": "hi", "langs": ["en"],
            "embed": {"images": [{"alt": "a", "image": 1}, {"image": 2}]}, "n": 3});
        let f = |list: &str| RecordFields::parse(list).unwrap().select(&record);
        assert_eq!(
            f("embed.images.alt,text,missing.x,langs.x").to_string(),
            json!({"text": "hi", "embed": {"images": [{"alt": "a"}, null]}}).to_string()
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

    /// A step from a value to one inside it.
    #[derive(Debug, Clone)]
    enum Step {
        Key(String),
        Index(usize, usize),
    }

    /// Every leaf (a scalar, an empty object or array) with its steps.
    fn leaves(v: &Value, at: &mut Vec<Step>, out: &mut Vec<(Vec<Step>, Value)>) {
        match v {
            Value::Object(m) if !m.is_empty() => {
                for (k, x) in m {
                    at.push(Step::Key(k.clone()));
                    leaves(x, at, out);
                    at.pop();
                }
            }
            Value::Array(a) if !a.is_empty() => {
                for (i, x) in a.iter().enumerate() {
                    at.push(Step::Index(i, a.len()));
                    leaves(x, at, out);
                    at.pop();
                }
            }
            leaf => out.push((at.clone(), leaf.clone())),
        }
    }

    /// The model: the leaves whose keys (indices dropped) are a path or lie
    /// under one, put back where they were; arrays at their length, null
    /// where nothing was kept.
    fn model(record: &Value, paths: &[String]) -> Value {
        let mut all = Vec::new();
        leaves(record, &mut Vec::new(), &mut all);
        let mut out = json!({});
        for (steps, leaf) in all {
            let keys: Vec<&str> = steps
                .iter()
                .filter_map(|s| match s {
                    Step::Key(k) => Some(k.as_str()),
                    Step::Index(..) => None,
                })
                .collect();
            let key_path = keys.join(".");
            if !paths
                .iter()
                .any(|p| key_path == *p || key_path.starts_with(&format!("{p}.")))
            {
                continue;
            }
            let mut slot = &mut out;
            for step in &steps {
                slot = match step {
                    Step::Key(k) => {
                        if !slot.is_object() {
                            *slot = json!({});
                        }
                        slot.as_object_mut()
                            .unwrap()
                            .entry(k.clone())
                            .or_insert(Value::Null)
                    }
                    Step::Index(i, len) => {
                        if !slot.is_array() {
                            *slot = Value::Array(vec![Value::Null; *len]);
                        }
                        &mut slot.as_array_mut().unwrap()[*i]
                    }
                };
            }
            *slot = leaf;
        }
        out
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (-5i64..5).prop_map(Value::from),
            "[a-c]{0,2}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 40, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(("[a-c]", inner), 0..4)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn select_matches_the_model(
            record in prop::collection::vec(("[a-c]", value()), 0..5)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            paths in prop::collection::vec("[a-c](\\.[a-c]){0,2}", 1..4),
        ) {
            let selected = RecordFields::new(paths.clone()).unwrap().select(&record);
            let want = model(&record, &paths);
            prop_assert_eq!(selected.to_string(), want.to_string(), "{} with {:?}", record, paths);
        }
    }
}
