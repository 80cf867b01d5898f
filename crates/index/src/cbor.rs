//! The values at a path read straight from a record's dag-cbor bytes, for
//! index builds: the same values, in the same order, as [`super::values`]
//! finds in the record's JSON, without building either tree.
//!
//! The walk reads item headers only, except for the strings it keeps (whose
//! UTF-8 it checks) and the map keys it compares. Whatever it does not
//! mirror exactly — a link or byte string where the path continues (their
//! JSON forms are `{"$link"}` / `{"$bytes"}` objects), an integer below
//! `i64::MIN` (a JSON string), a map with the path's key twice, anything
//! that is not well-formed dag-cbor — answers [`Fallback`], and the caller
//! decodes the record to JSON instead. Records are checked to be dag-cbor
//! when written, so the fallback is for the unusual, not for damage.

/// A value at the end of a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Leaf<'a> {
    Str(&'a str),
    Bool(bool),
    Int(i64),
    /// Anything no index keeps (null, floats, large integers, maps, links, bytes).
    Other,
}

/// The walk cannot answer for these bytes; decode them to JSON instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fallback;

/// The leaves at `path` (segments) in `record`, in the order the JSON walk
/// reaches them (arrays followed into at every step, the last included).
#[cfg(test)]
pub(crate) fn leaves_at<'a>(
    record: &'a [u8],
    path: &[&str],
    out: &mut Vec<Leaf<'a>>,
) -> Result<(), Fallback> {
    let mut outs = [std::mem::take(out)];
    let result = leaves_at_each(record, &[path], &mut outs);
    let [leaves] = outs;
    *out = leaves;
    result
}

/// [`leaves_at`] for several paths in one pass over the record: `outs[i]`
/// receives the leaves at `paths[i]`. A fallback is for all of them.
pub(crate) fn leaves_at_each<'a, 'p, P: AsRef<[&'p str]>>(
    record: &'a [u8],
    paths: &[P],
    outs: &mut [Vec<Leaf<'a>>],
) -> Result<(), Fallback> {
    let mut r = Reader {
        bytes: record,
        at: 0,
        depth: 0,
    };
    // The root is not followed into when it is an array: only a map has keys.
    match r.head()? {
        Head::Map(n) => {
            let mut found = vec![false; paths.len()];
            for _ in 0..n {
                let key = r.key()?;
                let start = r.at;
                let head = r.head()?;
                let mut matched = false;
                for (i, path) in paths.iter().enumerate() {
                    let Some((first, rest)) = path.as_ref().split_first() else {
                        continue;
                    };
                    if key != first.as_bytes() {
                        continue;
                    }
                    if std::mem::replace(&mut found[i], true) {
                        return Err(Fallback);
                    }
                    // Each path matching this key walks the value anew.
                    r.at = start;
                    let head = r.head()?;
                    r.value(head, rest, &mut outs[i])?;
                    matched = true;
                }
                if !matched {
                    r.skip_rest(head)?;
                }
            }
        }
        ref head if paths.iter().any(|p| json_form_has(head, p.as_ref())) => {
            return Err(Fallback);
        }
        other => r.skip_rest(other)?,
    }
    if r.at == record.len() {
        Ok(())
    } else {
        Err(Fallback)
    }
}

/// Whether `path` continues into the JSON form of `head`'s item: a link or
/// byte string is a `{"$link"}` / `{"$bytes"}` object there, which the walk
/// leaves to the JSON walk.
fn json_form_has(head: &Head, path: &[&str]) -> bool {
    matches!(head, Head::Link | Head::Bytes(_)) && path.first().is_some_and(|s| s.starts_with('$'))
}

enum Head {
    Uint(u64),
    /// `-1 - n`.
    Neg(u64),
    Bytes(usize),
    Text(usize),
    Array(u64),
    Map(u64),
    /// Tag 42 (a CID link); dag-cbor allows no other tag.
    Link,
    Bool(bool),
    Null,
    Float64,
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    /// Arrays and maps entered and not left.
    depth: u32,
}

/// Deeper nesting falls back (the JSON decoder has its own, lower limit),
/// so the walk's recursion stays bounded on any bytes.
const MAX_DEPTH: u32 = 512;

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Fallback> {
        let end = self.at.checked_add(n).ok_or(Fallback)?;
        let s = self.bytes.get(self.at..end).ok_or(Fallback)?;
        self.at = end;
        Ok(s)
    }

    fn arg(&mut self, info: u8) -> Result<u64, Fallback> {
        Ok(match info {
            0..=23 => u64::from(info),
            24 => u64::from(self.take(1)?[0]),
            25 => u64::from(u16::from_be_bytes(
                self.take(2)?.try_into().map_err(|_| Fallback)?,
            )),
            26 => u64::from(u32::from_be_bytes(
                self.take(4)?.try_into().map_err(|_| Fallback)?,
            )),
            27 => u64::from_be_bytes(self.take(8)?.try_into().map_err(|_| Fallback)?),
            // Indefinite lengths and reserved values are not dag-cbor.
            _ => return Err(Fallback),
        })
    }

    fn len(&mut self, info: u8) -> Result<usize, Fallback> {
        usize::try_from(self.arg(info)?).map_err(|_| Fallback)
    }

    fn head(&mut self) -> Result<Head, Fallback> {
        let first = self.take(1)?[0];
        let (major, info) = (first >> 5, first & 0x1F);
        Ok(match major {
            0 => Head::Uint(self.arg(info)?),
            1 => Head::Neg(self.arg(info)?),
            2 => Head::Bytes(self.len(info)?),
            3 => Head::Text(self.len(info)?),
            4 => Head::Array(self.arg(info)?),
            5 => Head::Map(self.arg(info)?),
            6 if self.arg(info)? == 42 => Head::Link,
            7 => match info {
                20 => Head::Bool(false),
                21 => Head::Bool(true),
                22 => Head::Null,
                27 => {
                    self.take(8)?;
                    Head::Float64
                }
                _ => return Err(Fallback),
            },
            _ => return Err(Fallback),
        })
    }

    fn enter(&mut self) -> Result<(), Fallback> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            Err(Fallback)
        } else {
            Ok(())
        }
    }

    /// Skips the rest of an item whose head was read.
    fn skip_rest(&mut self, head: Head) -> Result<(), Fallback> {
        match head {
            Head::Bytes(n) | Head::Text(n) => {
                self.take(n)?;
            }
            Head::Array(n) => {
                self.enter()?;
                for _ in 0..n {
                    let h = self.head()?;
                    self.skip_rest(h)?;
                }
                self.depth -= 1;
            }
            Head::Map(n) => {
                self.enter()?;
                for _ in 0..n {
                    self.key()?;
                    let h = self.head()?;
                    self.skip_rest(h)?;
                }
                self.depth -= 1;
            }
            Head::Link => match self.head()? {
                Head::Bytes(n) => {
                    self.take(n)?;
                }
                _ => return Err(Fallback),
            },
            Head::Uint(_) | Head::Neg(_) | Head::Bool(_) | Head::Null | Head::Float64 => {}
        }
        Ok(())
    }

    /// A map key (dag-cbor keys are strings), unchecked UTF-8.
    fn key(&mut self) -> Result<&'a [u8], Fallback> {
        match self.head()? {
            Head::Text(n) => self.take(n),
            _ => Err(Fallback),
        }
    }

    /// The entries of a map whose head was read: the value under `path[0]`
    /// is followed, the others skipped.
    fn map(&mut self, n: u64, path: &[&str], out: &mut Vec<Leaf<'a>>) -> Result<(), Fallback> {
        let Some((first, rest)) = path.split_first() else {
            // Unreachable through `value`; a map at the path's end is kept as Other.
            return self.skip_rest(Head::Map(n));
        };
        self.enter()?;
        let mut found = false;
        for _ in 0..n {
            let key = self.key()?;
            let h = self.head()?;
            if key == first.as_bytes() {
                if found {
                    return Err(Fallback);
                }
                found = true;
                self.value(h, rest, out)?;
            } else {
                self.skip_rest(h)?;
            }
        }
        self.depth -= 1;
        Ok(())
    }

    /// A value reached by the walk, with what is left of the path.
    fn value(
        &mut self,
        head: Head,
        path: &[&str],
        out: &mut Vec<Leaf<'a>>,
    ) -> Result<(), Fallback> {
        match head {
            Head::Array(n) => {
                self.enter()?;
                for _ in 0..n {
                    let h = self.head()?;
                    self.value(h, path, out)?;
                }
                self.depth -= 1;
                Ok(())
            }
            Head::Map(n) if !path.is_empty() => self.map(n, path, out),
            ref head if json_form_has(head, path) => Err(Fallback),
            head if !path.is_empty() => self.skip_rest(head),
            // Below i64::MIN: its JSON form is a string.
            Head::Neg(n) if i64::try_from(n).is_err() => Err(Fallback),
            Head::Text(n) => {
                let s = std::str::from_utf8(self.take(n)?).map_err(|_| Fallback)?;
                out.push(Leaf::Str(s));
                Ok(())
            }
            Head::Bool(b) => {
                out.push(Leaf::Bool(b));
                Ok(())
            }
            Head::Uint(n) => {
                out.push(i64::try_from(n).map_or(Leaf::Other, Leaf::Int));
                Ok(())
            }
            Head::Neg(n) => {
                out.push(Leaf::Int(-1 - i64::try_from(n).map_err(|_| Fallback)?));
                Ok(())
            }
            other => {
                out.push(Leaf::Other);
                self.skip_rest(other)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use ipld_core::{cid::Cid, ipld::Ipld};
    use proptest::prelude::*;

    use super::*;

    fn below_i64(v: &Ipld) -> bool {
        match v {
            Ipld::Integer(i) => *i < i128::from(i64::MIN),
            Ipld::List(items) => items.iter().any(below_i64),
            Ipld::Map(m) => m.values().any(below_i64),
            _ => false,
        }
    }

    fn key() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("a".to_owned()),
            Just("b".to_owned()),
            Just("$link".to_owned()),
            Just("$bytes".to_owned()),
            "[a-c$]{0,3}",
        ]
    }

    fn ipld() -> impl Strategy<Value = Ipld> {
        let cid: Cid = "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm"
            .parse()
            .unwrap();
        let leaf = prop_oneof![
            Just(Ipld::Null),
            any::<bool>().prop_map(Ipld::Bool),
            any::<i64>().prop_map(|i| Ipld::Integer(i.into())),
            prop_oneof![Just(u64::MAX), Just(1 << 63), Just(i64::MAX as u64)]
                .prop_map(|u| Ipld::Integer(u.into())),
            Just(Ipld::Integer(-(1i128 << 64))),
            Just(Ipld::Integer(i128::from(i64::MIN) - 1)),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Ipld::Float),
            "\\PC{0,6}".prop_map(Ipld::String),
            prop::collection::vec(any::<u8>(), 0..4).prop_map(Ipld::Bytes),
            Just(Ipld::Link(cid)),
        ];
        leaf.prop_recursive(4, 40, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Ipld::List),
                prop::collection::btree_map(key(), inner, 0..5).prop_map(Ipld::Map),
            ]
        })
    }

    fn record() -> impl Strategy<Value = Ipld> {
        prop::collection::btree_map(key(), ipld(), 0..6)
            .prop_map(|m: BTreeMap<String, Ipld>| Ipld::Map(m))
    }

    fn path() -> impl Strategy<Value = String> {
        prop::collection::vec(key().prop_filter("a segment", |k| !k.is_empty()), 1..4)
            .prop_map(|s| s.join("."))
    }

    proptest! {
        /// Any bytes: the walk answers (values or a fallback) without panicking.
        #[test]
        fn any_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..128)) {
            let mut out = Vec::new();
            let _ = leaves_at(&bytes, &["a", "b"], &mut out);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// The walk finds what the JSON walk finds, in order, or falls back.
        #[test]
        fn the_walk_agrees_with_the_json_walk(record in record(), path in path()) {
            let bytes = serde_ipld_dagcbor::to_vec(&record).unwrap();
            // Both walks' keepable values (strings, booleans, i64s; null for
            // anything else), the JSON one over the decoded record.
            let (walked, by_json) = crate::fuzzing::index_values(&bytes, &[path.as_str()]);
            let by_json = by_json.expect("an encoded record decodes");
            match walked {
                Some(walked) => prop_assert_eq!(walked, by_json, "{:?}", path),
                None => {
                    // Only for what the walk does not mirror: a `$` segment
                    // on a link or bytes, or an integer below i64::MIN.
                    let unusual = path.split('.').any(|s| s.starts_with('$'))
                        || below_i64(&record);
                    prop_assert!(unusual, "fell back on {:?} at {}", record, path);
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// A record's bytes with one byte changed: whenever the walk answers
        /// and the bytes still decode as dag-cbor, the two walks agree.
        #[test]
        fn damaged_bytes_never_give_other_values(
            record in record(),
            path in path(),
            at in any::<prop::sample::Index>(),
            byte in any::<u8>(),
        ) {
            let mut bytes = serde_ipld_dagcbor::to_vec(&record).unwrap();
            let i = at.index(bytes.len());
            bytes[i] = byte;
            let (walked, by_json) = crate::fuzzing::index_values(&bytes, &[path.as_str()]);
            if let (Some(walked), Some(by_json)) = (walked, by_json) {
                prop_assert_eq!(walked, by_json, "{:?} at {}", bytes, path);
            }
        }
    }

    proptest! {
        /// One pass over several paths finds what one walk per path finds.
        #[test]
        fn one_pass_over_several_paths_is_one_walk_each(
            record in record(),
            paths in prop::collection::vec(path(), 1..4),
        ) {
            let bytes = serde_ipld_dagcbor::to_vec(&record).unwrap();
            let segments: Vec<Vec<&str>> = paths.iter().map(|p| p.split('.').collect()).collect();
            let mut outs = vec![Vec::new(); paths.len()];
            let together = leaves_at_each(&bytes, &segments, &mut outs);
            let mut alone = Vec::new();
            let mut fell_back = false;
            for s in &segments {
                let mut out = Vec::new();
                fell_back |= leaves_at(&bytes, s, &mut out).is_err();
                alone.push(out);
            }
            prop_assert_eq!(together.is_err(), fell_back);
            if !fell_back {
                prop_assert_eq!(outs, alone);
            }
        }
    }

    #[test]
    fn nesting_past_the_limit_falls_back_without_deep_recursion() {
        // {"a": [[[…]]]} nested a million deep: a fallback, not an overflow.
        let mut bytes = vec![0xa1, 0x61, b'a'];
        bytes.extend(std::iter::repeat_n(0x81, 1 << 20));
        bytes.push(0x01);
        for path in [&["a"][..], &["b"]] {
            let mut out = Vec::new();
            assert_eq!(leaves_at(&bytes, path, &mut out), Err(Fallback));
        }
    }

    #[test]
    fn values_of_a_post_like_record() {
        let v = serde_json::json!({
            "$type": "app.bsky.feed.post",
            "text": "hi",
            "langs": ["en", "pt"],
            "likes": -3,
            "reply": {"root": {"uri": "at://x", "cid": "c"}},
            "createdAt": "2024-01-01T00:00:00Z",
        });
        let bytes = serde_ipld_dagcbor::to_vec(&v).unwrap();
        let mut out = Vec::new();
        leaves_at(&bytes, &["langs"], &mut out).unwrap();
        assert_eq!(out, vec![Leaf::Str("en"), Leaf::Str("pt")]);
        out.clear();
        leaves_at(&bytes, &["likes"], &mut out).unwrap();
        assert_eq!(out, vec![Leaf::Int(-3)]);
        out.clear();
        leaves_at(&bytes, &["reply", "root", "uri"], &mut out).unwrap();
        assert_eq!(out, vec![Leaf::Str("at://x")]);
        out.clear();
        leaves_at(&bytes, &["reply"], &mut out).unwrap();
        assert_eq!(out, vec![Leaf::Other]);
        out.clear();
        assert_eq!(
            leaves_at(&bytes[..bytes.len() - 1], &["text"], &mut out),
            Err(Fallback)
        );
    }
}
