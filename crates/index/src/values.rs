//! What an index keeps of a record: the values at a path, by kind.

use serde_json::Value;

use crate::cbor::Leaf;

/// The kind of a field index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IndexKind {
    /// Strings and booleans, one bitmap row per distinct value.
    Keyword,
    /// JSON integers, bit-sliced.
    Integer,
    /// AT Protocol datetimes, bit-sliced as microseconds since the epoch.
    Datetime,
    /// The words of strings (`words`), one bitmap row per distinct word,
    /// laid out as a keyword index's rows.
    Text,
}

impl IndexKind {
    /// The name used on the command line and in JSON.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Keyword => "keyword",
            Self::Integer => "integer",
            Self::Datetime => "datetime",
            Self::Text => "text",
        }
    }

    /// The name with its indefinite article, for sentences: `an integer`,
    /// `a keyword`.
    #[must_use]
    pub const fn with_article(self) -> &'static str {
        match self {
            Self::Keyword => "a keyword",
            Self::Integer => "an integer",
            Self::Datetime => "a datetime",
            Self::Text => "a text",
        }
    }
}

impl std::fmt::Display for IndexKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for IndexKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "keyword" => Ok(Self::Keyword),
            "integer" => Ok(Self::Integer),
            "datetime" => Ok(Self::Datetime),
            "text" => Ok(Self::Text),
            other => Err(format!(
                "unknown index kind {other:?} (use keyword, integer, datetime or text)"
            )),
        }
    }
}

/// A keyword index's value. Orders as `--top` reports ties: strings (by
/// their bytes) before booleans, `false` before `true`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Keyword {
    /// A JSON string.
    Str(String),
    /// A JSON boolean.
    Bool(bool),
}

impl Keyword {
    /// The dictionary's bytes for this value: `01` ‖ UTF-8, or `02` ‖ `00|01`.
    pub fn tagged(&self) -> Vec<u8> {
        match self {
            Self::Str(s) => {
                let mut out = Vec::with_capacity(1 + s.len());
                out.push(1);
                out.extend_from_slice(s.as_bytes());
                out
            }
            Self::Bool(b) => vec![2, u8::from(*b)],
        }
    }

    /// A keyword from its tagged stored form (`None`: not one).
    pub fn from_tagged(bytes: &[u8]) -> Option<Self> {
        match bytes.split_first()? {
            (1, s) => std::str::from_utf8(s).ok().map(|s| Self::Str(s.to_owned())),
            (2, [0]) => Some(Self::Bool(false)),
            (2, [1]) => Some(Self::Bool(true)),
            _ => None,
        }
    }

    /// The value as JSON.
    #[must_use]
    pub fn to_json(&self) -> Value {
        match self {
            Self::Str(s) => Value::String(s.clone()),
            Self::Bool(b) => Value::Bool(*b),
        }
    }
}

/// Every value at `path` (segments separated by `.`): object keys from the
/// record, continuing into each element of every array reached, the last
/// step included.
pub(crate) fn values_at<'a>(record: &'a Value, path: &str) -> Vec<&'a Value> {
    fn flatten<'a>(v: &'a Value, out: &mut Vec<&'a Value>) {
        match v {
            Value::Array(items) => items.iter().for_each(|i| flatten(i, out)),
            other => out.push(other),
        }
    }
    let mut current = vec![record];
    for segment in path.split('.') {
        let mut next = Vec::new();
        for v in current {
            if let Some(child) = v.as_object().and_then(|o| o.get(segment)) {
                flatten(child, &mut next);
            }
        }
        current = next;
    }
    current
}

/// Strings longer than this many bytes are not indexed (each distinct
/// value is part of a storage key, which SlateDB bounds).
pub(crate) const MAX_KEYWORD_BYTES: usize = 1024;

/// Whether a string is at `path` (a text index's `exists`).
pub(crate) fn has_string(record: &Value, path: &str) -> bool {
    values_at(record, path).iter().any(|v| v.is_string())
}

/// The keyword values at `path`, each once, in order.
pub(crate) fn keywords(record: &Value, path: &str) -> Vec<Keyword> {
    let mut out: Vec<Keyword> = values_at(record, path)
        .into_iter()
        .filter_map(|v| match v {
            Value::String(s) if s.len() <= MAX_KEYWORD_BYTES => Some(Keyword::Str(s.clone())),
            Value::Bool(b) => Some(Keyword::Bool(*b)),
            _ => None,
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// [`numbers`] from the leaves a dag-cbor walk found (`super::cbor`).
pub(crate) fn numbers_of_leaves(leaves: &[Leaf<'_>], kind: IndexKind) -> Vec<i64> {
    leaves
        .iter()
        .filter_map(|l| match (kind, l) {
            (IndexKind::Integer, Leaf::Int(i)) => Some(*i),
            (IndexKind::Datetime, Leaf::Str(s)) => datetime_micros(s),
            _ => None,
        })
        .collect()
}

/// The integer (or datetime, as microseconds) values at `path`, in the
/// order reached, repeats kept: each fills one slot of the bit-sliced index.
pub(crate) fn numbers(record: &Value, path: &str, kind: IndexKind) -> Vec<i64> {
    values_at(record, path)
        .into_iter()
        .filter_map(|v| match (kind, v) {
            (IndexKind::Integer, Value::Number(n)) => n.as_i64(),
            (IndexKind::Datetime, Value::String(s)) => datetime_micros(s),
            _ => None,
        })
        .collect()
}

/// An AT Protocol datetime as microseconds since the Unix epoch (digits
/// past the microsecond dropped): exactly the strings the reference's
/// strict check accepts (`YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`, not
/// `-00:00`, a UTC year 0 to 9999), so that indexes, query literals and
/// the Lexicon validator agree on which datetimes are instants.
pub(crate) fn datetime_micros(s: &str) -> Option<i64> {
    lexicon::strict_instant_micros(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_continue_into_arrays_at_every_step() {
        let r = json!({"a": [{"b": 1}, {"b": [2, [3]]}, {"c": 4}], "d": "x"});
        let got: Vec<_> = values_at(&r, "a.b").into_iter().cloned().collect();
        assert_eq!(got, vec![json!(1), json!(2), json!(3)]);
        assert_eq!(values_at(&r, "d"), vec![&json!("x")]);
        assert!(values_at(&r, "d.e").is_empty());
        assert!(values_at(&r, "zz").is_empty());
    }

    #[test]
    fn keyword_values_are_strings_and_booleans_once_each() {
        let r = json!({"t": ["b", "a", "b", true, 1, null, {"x": 1}]});
        assert_eq!(
            keywords(&r, "t"),
            vec![
                Keyword::Str("a".into()),
                Keyword::Str("b".into()),
                Keyword::Bool(true)
            ]
        );
    }

    #[test]
    fn datetimes_follow_the_atproto_syntax() {
        // Microseconds derived by hand: 2024-01-01T00:00:00Z is 1704067200 s.
        assert_eq!(
            datetime_micros("2024-01-01T00:00:00Z"),
            Some(1_704_067_200_000_000)
        );
        assert_eq!(
            datetime_micros("2024-01-01T00:00:00.1234567Z"),
            Some(1_704_067_200_123_456)
        );
        assert_eq!(
            datetime_micros("2024-01-01T01:00:00+01:00"),
            Some(1_704_067_200_000_000)
        );
        // Years before 1000 and the last day of 9999 are instants too
        // (10000-01-01T00:00:00Z is 253,402,300,800 s after the epoch).
        assert_eq!(
            datetime_micros("9999-12-31T23:59:59Z"),
            Some(253_402_300_799_000_000)
        );
        assert!(datetime_micros("0999-01-01T00:00:00Z").is_some_and(|m| m < 0));
        for bad in [
            "2024-01-01",
            "2024-01-01T00:00:00",
            "2024-01-01t00:00:00Z",
            "2024-01-01T00:00:00-00:00",
            "2024-13-01T00:00:00Z",
            "2024-01-01T00:00:00.Z",
            "2024-01-01T00:00:00+0100",
        ] {
            assert_eq!(datetime_micros(bad), None, "{bad}");
        }
    }

    #[test]
    fn keyword_tags_round_trip_and_order_as_values() {
        let mut vals = vec![
            Keyword::Bool(true),
            Keyword::Str("b".into()),
            Keyword::Bool(false),
            Keyword::Str("a".into()),
        ];
        for v in &vals {
            assert_eq!(Keyword::from_tagged(&v.tagged()).as_ref(), Some(v));
        }
        let mut by_tag = vals.clone();
        by_tag.sort_by_key(Keyword::tagged);
        vals.sort();
        assert_eq!(vals, by_tag);
    }
}
