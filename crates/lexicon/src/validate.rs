//! Records against definitions, in the order and with the messages of the
//! reference validator (`@atproto/lexicon`'s `validators/*.js`), so that a
//! record it rejects is rejected here with the same first error.
//!
//! Values are AT Protocol JSON: `{"$link": cid}` is a link, `{"$bytes":
//! base64}` is a byte string, and a blob is `{"$type": "blob", "ref":
//! link, "mimeType", "size"}` or the legacy `{"cid", "mimeType"}`, each
//! with exactly those keys (the reference's `jsonToLex` forms).
//!
//! Where this differs from the reference, it follows the Lexicon
//! specification (see `tests/divergences.rs`): an `object` or `unknown`
//! must be a map (the reference takes arrays, links and byte strings as
//! objects), and a blob's `accept` and `maxSize` are checked against its
//! `mimeType` and `size` (the reference leaves them to blob upload).

use base64::Engine as _;
use serde_json::{Map, Value};
use unicode_segmentation::UnicodeSegmentation as _;

use crate::{
    Lexicons, ValidationError, formats,
    schema::{Def, IntegerDef, KeyPrint, ObjectDef, StringDef, Target},
};

/// Where a value sits in the record, rendered only for an error message
/// (`Record/embed/images/0/alt`).
#[derive(Clone, Copy)]
pub(crate) enum Path<'a> {
    Root(&'a str),
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl std::fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Root(s) => f.write_str(s),
            Self::Key(p, k) => write!(f, "{p}/{k}"),
            Self::Index(p, i) => write!(f, "{p}/{i}"),
        }
    }
}

/// Why a value failed.
pub(crate) enum Fail {
    /// The value breaks a rule (the reference's `ValidationError` result).
    Invalid(String),
    /// The schema cannot be applied: a missing definition, an unusable
    /// `$type` (the reference throws these).
    Schema(String),
}

impl From<Fail> for ValidationError {
    fn from(f: Fail) -> Self {
        match f {
            Fail::Invalid(m) | Fail::Schema(m) => ValidationError(m),
        }
    }
}

type Res = Result<(), Fail>;

fn invalid(path: &Path<'_>, what: impl std::fmt::Display) -> Fail {
    Fail::Invalid(format!("{path} {what}"))
}

/// What a JSON value is in the data model.
enum Kind<'v> {
    Map(&'v Map<String, Value>),
    Link,
    Bytes(usize),
    Other,
}

fn kind(v: &Value) -> Kind<'_> {
    let Value::Object(m) = v else {
        return Kind::Other;
    };
    if m.len() == 1
        && let Some((k, Value::String(s))) = m.iter().next()
    {
        if k == "$link" && formats::cid_string(s) {
            return Kind::Link;
        }
        if k == "$bytes"
            && let Ok(bytes) = crate::BASE64.decode(s)
        {
            return Kind::Bytes(bytes.len());
        }
    }
    Kind::Map(m)
}

/// A blob reference: (mimeType, size, or `None` for the legacy form).
fn blob_ref(v: &Value) -> Option<(&str, Option<f64>)> {
    let m = v.as_object()?;
    match m.len() {
        4 if field(m, "$type").and_then(Value::as_str) == Some("blob") => {
            let ref_is_link = matches!(field(m, "ref").map(kind), Some(Kind::Link));
            let mime = field(m, "mimeType")?.as_str()?;
            let size = field(m, "size")?.as_f64()?;
            ref_is_link.then_some((mime, Some(size)))
        }
        2 => {
            let cid = field(m, "cid")?.as_str()?;
            let mime = field(m, "mimeType")?.as_str()?;
            formats::cid_string(cid).then_some((mime, None))
        }
        _ => None,
    }
}

/// The key of a definition in [`Lexicons`]: its `lex:` URI without `lex:`.
pub(crate) fn def_key(uri: &str) -> &str {
    uri.strip_prefix("lex:").unwrap_or(uri)
}

impl Lexicons {
    /// The definition a `lex:` URI (or the same without `lex:`) names.
    pub(crate) fn def(&self, uri: &str) -> Result<&Def, Fail> {
        let key = def_key(uri);
        let compiled = self.compiled();
        compiled
            .by_key
            .get(key)
            .map(|&i| &compiled.defs[i as usize])
            .ok_or_else(|| Fail::Schema(format!("Lexicon not found: lex:{key}")))
    }

    /// The definition a resolved reference names.
    fn target(&self, target: &Target) -> Result<&Def, Fail> {
        match target.index {
            Some(i) => Ok(&self.compiled().defs[i as usize]),
            None => Err(Fail::Schema(format!(
                "Lexicon not found: lex:{}",
                def_key(&target.uri)
            ))),
        }
    }

    /// A property's, item's or ref's value (`None`: absent).
    pub(crate) fn one_of(&self, path: &Path<'_>, def: &Def, value: Option<&Value>) -> Res {
        match def {
            Def::Union { refs, closed } => {
                let ty = match value.map(kind) {
                    Some(Kind::Map(m)) => match field(m, "$type") {
                        Some(Value::String(t)) => t.as_str(),
                        _ => return Err(union_needs_type(path)),
                    },
                    _ => return Err(union_needs_type(path)),
                };
                crate::schema::check_lex_uri(ty).map_err(Fail::Schema)?;
                let key = def_key(ty);
                let Some(target) = matching_ref(refs, key) else {
                    return if *closed {
                        let uris: Vec<&str> = refs.iter().map(|t| t.uri.as_str()).collect();
                        Err(invalid(
                            path,
                            format_args!("$type must be one of {}", uris.join(", ")),
                        ))
                    } else {
                        Ok(())
                    };
                };
                // The reference looks the definition up by the value's
                // `$type`, which names the same one (`#main` or not).
                let concrete = match target.index {
                    Some(_) => self.target(target)?,
                    None => self.def(key)?,
                };
                self.value(path, concrete, value)
            }
            Def::Ref(target) => {
                let concrete = self.target(target)?;
                self.value(path, concrete, value)
            }
            _ => self.value(path, def, value),
        }
    }

    fn value(&self, path: &Path<'_>, def: &Def, value: Option<&Value>) -> Res {
        match def {
            Def::Object(o) => self.object(path, o, value),
            Def::Array {
                items,
                min_length,
                max_length,
            } => {
                let Some(Value::Array(list)) = value else {
                    return Err(invalid(path, "must be an array"));
                };
                if let Some(max) = max_length
                    && list.len() as i64 > *max
                {
                    return Err(invalid(
                        path,
                        format_args!("must not have more than {max} elements"),
                    ));
                }
                if let Some(min) = min_length
                    && (list.len() as i64) < *min
                {
                    return Err(invalid(
                        path,
                        format_args!("must not have fewer than {min} elements"),
                    ));
                }
                for (i, item) in list.iter().enumerate() {
                    self.one_of(&Path::Index(path, i), items, Some(item))?;
                }
                Ok(())
            }
            Def::Blob { accept, max_size } => {
                let Some((mime, size)) = value.and_then(blob_ref) else {
                    return Err(invalid(path, "should be a blob ref"));
                };
                if let Some(accept) = accept
                    && !accepts(accept, mime)
                {
                    return Err(invalid(
                        path,
                        format_args!(
                            "has mimeType {mime}, which is not one of {}",
                            accept.join(", ")
                        ),
                    ));
                }
                if let (Some(max), Some(size)) = (max_size, size)
                    && size > *max
                {
                    return Err(invalid(
                        path,
                        format_args!("must not be larger than {max} bytes"),
                    ));
                }
                Ok(())
            }
            Def::Boolean { default, constant } => {
                let b = match value {
                    None if default.is_some() => return Ok(()),
                    Some(Value::Bool(b)) => *b,
                    _ => return Err(invalid(path, "must be a boolean")),
                };
                match constant {
                    Some(c) if *c != b => Err(invalid(path, format_args!("must be {c}"))),
                    _ => Ok(()),
                }
            }
            Def::Integer(i) => integer(path, i, value),
            Def::String(s) => string(path, s, value),
            Def::Bytes {
                min_length,
                max_length,
            } => {
                let Some(Kind::Bytes(len)) = value.map(kind) else {
                    return Err(invalid(path, "must be a byte array"));
                };
                if let Some(max) = max_length
                    && len as f64 > *max
                {
                    return Err(invalid(
                        path,
                        format_args!("must not be larger than {max} bytes"),
                    ));
                }
                if let Some(min) = min_length
                    && (len as f64) < *min
                {
                    return Err(invalid(
                        path,
                        format_args!("must not be smaller than {min} bytes"),
                    ));
                }
                Ok(())
            }
            Def::CidLink => match value.map(kind) {
                Some(Kind::Link) => Ok(()),
                _ => Err(invalid(path, "must be a CID")),
            },
            Def::Unknown => match value.map(kind) {
                Some(Kind::Map(_)) => Ok(()),
                _ => Err(invalid(path, "must be an object")),
            },
            Def::Record(_) | Def::Token | Def::Ref(_) | Def::Union { .. } | Def::Other(_) => Err(
                Fail::Invalid(format!("Unexpected lexicon type: {}", def.type_name())),
            ),
        }
    }

    pub(crate) fn object(&self, path: &Path<'_>, def: &ObjectDef, value: Option<&Value>) -> Res {
        let Some(Kind::Map(map)) = value.map(kind) else {
            return Err(invalid(path, "must be an object"));
        };
        // The record's values by property, in one pass over its keys.
        let mut found = [None; 16];
        let by_print = def.properties.len() <= found.len();
        if by_print {
            for (k, v) in map {
                let print = KeyPrint::of(k);
                for (i, &p) in def.prints.iter().enumerate() {
                    if p == print && (p.is_exact() || def.properties[i].name == *k) {
                        found[i] = Some(v);
                        break;
                    }
                }
            }
        }
        for (i, property) in def.properties.iter().enumerate() {
            let (key, prop, required) = (&property.name, &property.def, property.required);
            let v = if by_print { found[i] } else { field(map, key) };
            if property.nullable && matches!(v, Some(Value::Null)) {
                continue;
            }
            if v.is_none() && !required && !has_default(prop) {
                continue;
            }
            match self.one_of(&Path::Key(path, key), prop, v) {
                Ok(()) => {}
                Err(Fail::Invalid(_)) if v.is_none() => {
                    if required {
                        return Err(invalid(
                            path,
                            format_args!("must have the property \"{key}\""),
                        ));
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

fn union_needs_type(path: &Path<'_>) -> Fail {
    invalid(
        path,
        "must be an object which includes the \"$type\" property",
    )
}

/// The union ref that names the definition `key` (a `lex:` URI without
/// `lex:`), with `#main` implicit either way.
fn matching_ref<'r>(refs: &'r [Target], key: &str) -> Option<&'r Target> {
    if let Some(t) = refs.iter().find(|t| def_key(&t.uri) == key) {
        return Some(t);
    }
    match key.strip_suffix("#main") {
        Some(bare) => refs.iter().find(|t| def_key(&t.uri) == bare),
        None if !key.contains('#') => refs
            .iter()
            .find(|t| def_key(&t.uri).strip_suffix("#main") == Some(key)),
        None => None,
    }
}

/// A map's value for `key`: a scan for the few keys records' objects have
/// (the map's own index hashes with SipHash, slower than comparing them).
pub(crate) fn field<'v>(m: &'v Map<String, Value>, key: &str) -> Option<&'v Value> {
    if m.len() <= 16 {
        // Length and first byte before the bytes: most keys differ there.
        let (len, first) = (key.len(), key.as_bytes().first());
        m.iter()
            .find(|(k, _)| k.len() == len && k.as_bytes().first() == first && k.as_str() == key)
            .map(|(_, v)| v)
    } else {
        m.get(key)
    }
}

/// Whether an absent value of this type takes a default.
fn has_default(def: &Def) -> bool {
    match def {
        Def::Boolean { default, .. } => default.is_some(),
        Def::Integer(i) => i.default.is_some(),
        Def::String(s) => s.default.is_some(),
        _ => false,
    }
}

/// A MIME type against `accept` (`*/*`, `type/*` or exact), as the
/// reference PDS matches uploaded blobs.
fn accepts(accept: &[String], mime: &str) -> bool {
    accept.iter().any(|a| {
        a == "*/*"
            || a == mime
            || a.strip_suffix('*')
                .is_some_and(|prefix| prefix.ends_with('/') && mime.starts_with(prefix))
    })
}

/// Extended grapheme clusters in `s` (UAX #29, `unicode-segmentation`),
/// segmenting only around non-ASCII text: between two ASCII characters
/// there is always a boundary, except inside CR LF (no ASCII character
/// extends, joins or prepends, and the rules that look further back, for
/// emoji ZWJ sequences, regional indicators and Indic conjuncts, see only
/// non-ASCII characters).
pub(crate) fn grapheme_count(s: &str) -> usize {
    let b = s.as_bytes();
    let mut count = 0;
    let mut start = 0;
    for i in 1..=b.len() {
        let boundary = i == b.len()
            || (b[i - 1] < 0x80 && b[i] < 0x80 && !(b[i - 1] == b'\r' && b[i] == b'\n'));
        if boundary {
            count += if i - start == 1 {
                1
            } else {
                s[start..i].graphemes(true).count()
            };
            start = i;
        }
    }
    count
}

fn integer(path: &Path<'_>, def: &IntegerDef, value: Option<&Value>) -> Res {
    let n = match value {
        None if def.default.is_some() => return Ok(()),
        // JavaScript's Number.isInteger, on the number JSON.parse makes.
        Some(Value::Number(n)) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i as f64,
            (None, Some(u), _) => u as f64,
            (None, None, Some(f)) if f.is_finite() && f.fract() == 0.0 => f,
            _ => return Err(invalid(path, "must be an integer")),
        },
        _ => return Err(invalid(path, "must be an integer")),
    };
    if let Some(c) = def.constant
        && n != c as f64
    {
        return Err(invalid(path, format_args!("must be {c}")));
    }
    if let Some(e) = &def.enumeration
        && !e.iter().any(|x| *x as f64 == n)
    {
        let list: Vec<String> = e.iter().map(i64::to_string).collect();
        return Err(invalid(
            path,
            format_args!("must be one of ({})", list.join("|")),
        ));
    }
    if let Some(max) = def.maximum
        && n > max as f64
    {
        return Err(invalid(path, format_args!("can not be greater than {max}")));
    }
    if let Some(min) = def.minimum
        && n < min as f64
    {
        return Err(invalid(path, format_args!("can not be less than {min}")));
    }
    Ok(())
}

fn string(path: &Path<'_>, def: &StringDef, value: Option<&Value>) -> Res {
    let s = match value {
        None if def.default.is_some() => return Ok(()),
        Some(Value::String(s)) => s.as_str(),
        _ => return Err(invalid(path, "must be a string")),
    };
    if let Some(c) = &def.constant
        && s != c
    {
        return Err(invalid(path, format_args!("must be {c}")));
    }
    if let Some(e) = &def.enumeration
        && !e.iter().any(|x| x == s)
    {
        return Err(invalid(
            path,
            format_args!("must be one of ({})", e.join("|")),
        ));
    }
    // Lengths are UTF-8 bytes.
    let len = s.len() as i64;
    if let Some(max) = def.max_length
        && len > max
    {
        return Err(invalid(
            path,
            format_args!("must not be longer than {max} characters"),
        ));
    }
    if let Some(min) = def.min_length
        && len < min
    {
        return Err(invalid(
            path,
            format_args!("must not be shorter than {min} characters"),
        ));
    }
    if def.min_graphemes.is_some() || def.max_graphemes.is_some() {
        // A string has no more graphemes than UTF-16 units, and no more of
        // those than UTF-8 bytes: count only when the bounds could bite.
        let utf16 = || s.encode_utf16().count() as i64;
        if let Some(min) = def.min_graphemes
            && (len < min || utf16() < min)
        {
            return Err(invalid(
                path,
                format_args!("must not be shorter than {min} graphemes"),
            ));
        }
        let need_count = def.min_graphemes.is_some()
            || def
                .max_graphemes
                .is_some_and(|max| len > max && utf16() > max);
        if need_count {
            let graphemes = grapheme_count(s) as i64;
            if let Some(max) = def.max_graphemes
                && graphemes > max
            {
                return Err(invalid(
                    path,
                    format_args!("must not be longer than {max} graphemes"),
                ));
            }
            if let Some(min) = def.min_graphemes
                && graphemes < min
            {
                return Err(invalid(
                    path,
                    format_args!("must not be shorter than {min} graphemes"),
                ));
            }
        }
    }
    match def.format {
        Some(format) => formats::check(format, s).map_err(|m| invalid(path, m)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use unicode_segmentation::UnicodeSegmentation as _;

    /// Characters around every rule that could cross an ASCII character:
    /// CR LF, combining marks, ZWJ, emoji and modifiers, regional
    /// indicators, Hangul jamo, Indic consonants and virama, a prepend.
    const PIECES: &[&str] = &[
        "a",
        " ",
        "1",
        "#",
        "\r",
        "\n",
        "\u{301}",
        "\u{200d}",
        "👍",
        "\u{1f3fd}",
        "\u{fe0f}",
        "🇫",
        "🇷",
        "\u{1100}",
        "\u{1161}",
        "\u{11a8}",
        "क",
        "\u{94d}",
        "ष",
        "\u{600}",
        "é",
        "日",
    ];

    proptest! {
        #[test]
        fn grapheme_count_agrees_with_segmenting_everything(
            picks in proptest::collection::vec(0..PIECES.len(), 0..40)
        ) {
            let s: String = picks.iter().map(|&i| PIECES[i]).collect();
            prop_assert_eq!(super::grapheme_count(&s), s.graphemes(true).count(), "{:?}", s);
        }
    }
}
