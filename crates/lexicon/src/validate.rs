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
    schema::{Def, IntegerDef, ObjectDef, StringDef},
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
    if m.len() == 1 {
        if let Some(Value::String(s)) = m.get("$link")
            && formats::cid_string(s).is_some()
        {
            return Kind::Link;
        }
        if let Some(Value::String(s)) = m.get("$bytes")
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
        4 if m.get("$type").and_then(Value::as_str) == Some("blob") => {
            let ref_is_link = matches!(m.get("ref").map(kind), Some(Kind::Link));
            let mime = m.get("mimeType")?.as_str()?;
            let size = m.get("size")?.as_f64()?;
            ref_is_link.then_some((mime, Some(size)))
        }
        2 => {
            let cid = m.get("cid")?.as_str()?;
            let mime = m.get("mimeType")?.as_str()?;
            formats::cid_string(cid).map(|_| (mime, None))
        }
        _ => None,
    }
}

impl Lexicons {
    pub(crate) fn def(&self, uri: &str) -> Result<&Def, Fail> {
        self.defs
            .get(uri)
            .ok_or_else(|| Fail::Schema(format!("Lexicon not found: {uri}")))
    }

    /// A property's, item's or ref's value (`None`: absent).
    pub(crate) fn one_of(&self, path: &Path<'_>, def: &Def, value: Option<&Value>) -> Res {
        match def {
            Def::Union { refs, closed } => {
                let ty = match value.map(kind) {
                    Some(Kind::Map(m)) => match m.get("$type") {
                        Some(Value::String(t)) => t,
                        _ => None.ok_or_else(|| union_needs_type(path))?,
                    },
                    _ => return Err(union_needs_type(path)),
                };
                let uri = crate::schema::to_lex_uri(ty, None).map_err(Fail::Schema)?;
                if !refs_contain(refs, &uri) {
                    return if *closed {
                        Err(invalid(
                            path,
                            format_args!("$type must be one of {}", refs.join(", ")),
                        ))
                    } else {
                        Ok(())
                    };
                }
                let concrete = self.def(&uri)?;
                self.value(path, concrete, value)
            }
            Def::Ref(uri) => {
                let concrete = self.def(uri)?;
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
        for (key, prop) in &def.properties {
            let v = map.get(key);
            if matches!(v, Some(Value::Null)) && def.nullable.iter().any(|n| n == key) {
                continue;
            }
            let required = def.required.iter().any(|r| r == key);
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

/// Whether a union's refs name `uri`, with `#main` implicit either way.
fn refs_contain(refs: &[String], uri: &str) -> bool {
    if refs.iter().any(|r| r == uri) {
        return true;
    }
    match uri.strip_suffix("#main") {
        Some(bare) => refs.iter().any(|r| r == bare),
        None => !uri.contains('#') && refs.iter().any(|r| r.strip_suffix("#main") == Some(uri)),
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
            let graphemes = s.graphemes(true).count() as i64;
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
