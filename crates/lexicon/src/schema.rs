//! Lexicon documents: the JSON of a document to the definitions records
//! are validated against.
//!
//! Parsing is as strict as the reference's `parseLexiconDoc`
//! (`@atproto/lexicon`) for everything a record can reach: unknown
//! definition types, fields of the wrong type, `required` names without a
//! property and non-`main` records are errors. XRPC definitions (`query`,
//! `procedure`, `subscription`) and `permission-set`s are kept but not
//! examined: no record can be validated against them.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::LexiconError;

/// A string format (`format` of a `string`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    AtIdentifier,
    AtUri,
    Cid,
    Datetime,
    Did,
    Handle,
    Language,
    Nsid,
    RecordKey,
    Tid,
    Uri,
}

impl Format {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "at-identifier" => Self::AtIdentifier,
            "at-uri" => Self::AtUri,
            "cid" => Self::Cid,
            "datetime" => Self::Datetime,
            "did" => Self::Did,
            "handle" => Self::Handle,
            "language" => Self::Language,
            "nsid" => Self::Nsid,
            "record-key" => Self::RecordKey,
            "tid" => Self::Tid,
            "uri" => Self::Uri,
            _ => return None,
        })
    }
}

/// A `string` definition.
#[derive(Debug, Clone, Default)]
pub(crate) struct StringDef {
    pub(crate) format: Option<Format>,
    pub(crate) default: Option<String>,
    pub(crate) min_length: Option<i64>,
    pub(crate) max_length: Option<i64>,
    pub(crate) min_graphemes: Option<i64>,
    pub(crate) max_graphemes: Option<i64>,
    pub(crate) enumeration: Option<Vec<String>>,
    pub(crate) constant: Option<String>,
}

/// An `integer` definition.
#[derive(Debug, Clone, Default)]
pub(crate) struct IntegerDef {
    pub(crate) default: Option<i64>,
    pub(crate) minimum: Option<i64>,
    pub(crate) maximum: Option<i64>,
    pub(crate) enumeration: Option<Vec<i64>>,
    pub(crate) constant: Option<i64>,
}

/// An `object` definition (also a record's `record`).
#[derive(Debug, Clone, Default)]
pub(crate) struct ObjectDef {
    /// In the order the reference visits them (see [`js_key_order`]).
    pub(crate) properties: Vec<Property>,
    /// Each property name's [`KeyPrint`], in the same order.
    pub(crate) prints: Vec<KeyPrint>,
}

/// A key's length and its first and last eight bytes (overlapping when
/// shorter; a key under four bytes is its first, middle and last byte).
/// Equal keys have equal prints, and keys of at most [`KeyPrint::EXACT`]
/// bytes with equal prints are equal, so matching a record's keys against
/// an object's properties (whose names are short) reads each key once,
/// with no string comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeyPrint {
    len: usize,
    head: u64,
    tail: u64,
}

impl KeyPrint {
    /// The longest key that a print identifies.
    pub(crate) const EXACT: usize = 16;

    pub(crate) fn of(key: &str) -> Self {
        let b = key.as_bytes();
        let len = b.len();
        let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
        let half = |at: usize| {
            u64::from(u32::from_le_bytes(
                b[at..at + 4].try_into().expect("4 bytes"),
            ))
        };
        let (head, tail) = match len {
            8.. => (word(0), word(len - 8)),
            4..8 => (half(0), half(len - 4)),
            1..4 => (
                u64::from(b[0]) | u64::from(b[len / 2]) << 8 | u64::from(b[len - 1]) << 16,
                0,
            ),
            0 => (0, 0),
        };
        Self { len, head, tail }
    }

    /// Whether equal prints mean equal keys.
    pub(crate) fn is_exact(self) -> bool {
        self.len <= Self::EXACT
    }
}

/// One property of an object, with what `required` and `nullable` say of
/// it.
#[derive(Debug, Clone)]
pub(crate) struct Property {
    pub(crate) name: String,
    pub(crate) def: Def,
    pub(crate) required: bool,
    pub(crate) nullable: bool,
}

/// What a `ref` (or one of a union's refs) names: its `lex:` URI, and
/// once the documents are compiled, the definition's place among them
/// (`None`: no document defines it).
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub(crate) uri: String,
    pub(crate) index: Option<u32>,
}

impl Target {
    fn new(uri: String) -> Self {
        Self { uri, index: None }
    }
}

/// One definition, or the type of one property or array item.
#[derive(Debug, Clone)]
pub(crate) enum Def {
    Record(Arc<ObjectDef>),
    Object(Arc<ObjectDef>),
    Array {
        items: Box<Def>,
        min_length: Option<i64>,
        max_length: Option<i64>,
    },
    Boolean {
        default: Option<bool>,
        constant: Option<bool>,
    },
    Integer(IntegerDef),
    String(Box<StringDef>),
    Bytes {
        min_length: Option<f64>,
        max_length: Option<f64>,
    },
    CidLink,
    Blob {
        accept: Option<Vec<String>>,
        max_size: Option<f64>,
    },
    Unknown,
    Token,
    /// A reference.
    Ref(Target),
    /// A union of references.
    Union {
        refs: Vec<Target>,
        closed: bool,
    },
    /// `query`, `procedure`, `subscription` or `permission-set`.
    Other(&'static str),
}

impl Def {
    /// The `type` the reference names in "Unexpected lexicon type" errors.
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Self::Record(_) => "record",
            Self::Object(_) => "object",
            Self::Array { .. } => "array",
            Self::Boolean { .. } => "boolean",
            Self::Integer(_) => "integer",
            Self::String(_) => "string",
            Self::Bytes { .. } => "bytes",
            Self::CidLink => "cid-link",
            Self::Blob { .. } => "blob",
            Self::Unknown => "unknown",
            Self::Token => "token",
            Self::Ref(_) => "ref",
            Self::Union { .. } => "union",
            Self::Other(t) => t,
        }
    }
}

impl Def {
    /// Fills in every reference's place among the compiled definitions.
    pub(crate) fn resolve(&mut self, find: &impl Fn(&str) -> Option<u32>) {
        match self {
            Self::Record(o) | Self::Object(o) => {
                for p in &mut Arc::make_mut(o).properties {
                    p.def.resolve(find);
                }
            }
            Self::Array { items, .. } => items.resolve(find),
            Self::Ref(t) => t.index = find(&t.uri),
            Self::Union { refs, .. } => {
                for t in refs {
                    t.index = find(&t.uri);
                }
            }
            _ => {}
        }
    }
}

/// A parsed Lexicon document.
#[derive(Debug, Clone)]
pub struct Document {
    id: String,
    main: Option<&'static str>,
    record_key: Option<String>,
    pub(crate) defs: Vec<(String, Def)>,
    json: Value,
}

impl Document {
    /// Parses a Lexicon document.
    ///
    /// # Errors
    ///
    /// [`LexiconError::Invalid`] naming the field at fault.
    pub fn parse(json: Value) -> Result<Self, LexiconError> {
        let doc = json
            .as_object()
            .ok_or_else(|| invalid("", "a Lexicon document must be a JSON object"))?;
        if doc.get("lexicon").and_then(Value::as_f64) != Some(1.0) {
            return Err(invalid("lexicon", "must be 1"));
        }
        let id = doc
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("id", "must be a string (the document's NSID)"))?;
        rkey::validate_nsid(id).map_err(|e| invalid("id", &format!("must be an NSID: {e}")))?;
        opt_number(doc, "revision", "revision")?;
        opt_string(doc, "description", "description")?;
        let defs = doc
            .get("defs")
            .and_then(Value::as_object)
            .ok_or_else(|| invalid("defs", "must be an object"))?;
        let base = format!("lex:{id}");
        let mut parsed = Vec::with_capacity(defs.len());
        let mut main = None;
        let mut record_key = None;
        for name in js_key_order(defs) {
            let def = &defs[name];
            let at = format!("defs.{name}");
            let parsed_def = parse_user_type(def, &at, &base)?;
            if let Def::Record(_) | Def::Other(_) = parsed_def
                && name != "main"
            {
                return Err(invalid(
                    &at,
                    "records, permission sets, procedures, queries and subscriptions must be the main definition",
                ));
            }
            if name == "main" {
                main = Some(parsed_def.type_name());
                if let Def::Record(_) = parsed_def {
                    record_key = def.get("key").and_then(Value::as_str).map(str::to_owned);
                }
            }
            parsed.push((name.to_owned(), parsed_def));
        }
        Ok(Self {
            id: id.to_owned(),
            main,
            record_key,
            defs: parsed,
            json,
        })
    }

    /// The document's NSID (`id`).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The `type` of its `main` definition, if it has one.
    pub fn main_type(&self) -> Option<&'static str> {
        self.main
    }

    /// Whether its `main` definition is a record (the document declares a
    /// collection).
    pub fn is_record(&self) -> bool {
        self.main == Some("record")
    }

    /// The record key type its record definition declares (`key`), if any.
    pub fn record_key(&self) -> Option<&str> {
        self.record_key.as_deref()
    }

    /// The document as given.
    pub fn json(&self) -> &Value {
        &self.json
    }

    /// What the document says that no record could satisfy, or that
    /// cannot mean what it says: no definitions, a negative length or size,
    /// a lower bound above its upper bound, a default outside its bounds.
    /// The reference accepts such documents (its schema checks types, not
    /// sense); datarepo refuses them when they are added, one line each,
    /// naming the field.
    pub fn contradictions(&self) -> Vec<String> {
        fn bounds<T: PartialOrd + std::fmt::Display + Default>(
            at: &str,
            (lo_name, lo): (&str, Option<T>),
            (hi_name, hi): (&str, Option<T>),
            non_negative: bool,
            out: &mut Vec<String>,
        ) {
            for (name, v) in [(lo_name, &lo), (hi_name, &hi)] {
                if let Some(v) = v
                    && non_negative
                    && *v < T::default()
                {
                    out.push(format!("{at}.{name} is {v}, below 0"));
                }
            }
            if let (Some(lo), Some(hi)) = (lo, hi)
                && lo > hi
            {
                out.push(format!(
                    "{at}.{lo_name} is {lo}, above {hi_name} {hi}: no value fits"
                ));
            }
        }
        fn walk(def: &Def, at: &str, out: &mut Vec<String>) {
            match def {
                Def::Record(o) | Def::Object(o) => {
                    let at = if matches!(def, Def::Record(_)) {
                        format!("{at}.record")
                    } else {
                        at.to_owned()
                    };
                    for p in &o.properties {
                        walk(&p.def, &format!("{at}.properties.{}", p.name), out);
                    }
                }
                Def::Array {
                    items,
                    min_length,
                    max_length,
                } => {
                    bounds(
                        at,
                        ("minLength", *min_length),
                        ("maxLength", *max_length),
                        true,
                        out,
                    );
                    walk(items, &format!("{at}.items"), out);
                }
                Def::Integer(i) => {
                    bounds(
                        at,
                        ("minimum", i.minimum),
                        ("maximum", i.maximum),
                        false,
                        out,
                    );
                    if let Some(d) = i.default
                        && (i.minimum.is_some_and(|m| d < m) || i.maximum.is_some_and(|m| d > m))
                    {
                        out.push(format!("{at}.default is {d}, outside minimum and maximum"));
                    }
                }
                Def::String(s) => {
                    bounds(
                        at,
                        ("minLength", s.min_length),
                        ("maxLength", s.max_length),
                        true,
                        out,
                    );
                    bounds(
                        at,
                        ("minGraphemes", s.min_graphemes),
                        ("maxGraphemes", s.max_graphemes),
                        true,
                        out,
                    );
                }
                Def::Bytes {
                    min_length,
                    max_length,
                } => bounds(
                    at,
                    ("minLength", *min_length),
                    ("maxLength", *max_length),
                    true,
                    out,
                ),
                Def::Blob {
                    max_size: Some(m), ..
                } if *m < 0.0 => out.push(format!("{at}.maxSize is {m}, below 0")),
                _ => {}
            }
        }
        let mut out = Vec::new();
        if self.defs.is_empty() {
            out.push("defs is empty: the document defines nothing".to_owned());
        }
        for (name, def) in &self.defs {
            walk(def, &format!("defs.{name}"), &mut out);
        }
        out
    }

    /// Every `lex:` URI its refs and unions name outside this document.
    pub fn external_refs(&self) -> Vec<String> {
        fn walk(def: &Def, own: &str, out: &mut Vec<String>) {
            let mut push = |target: &Target| {
                let uri = &target.uri;
                let nsid = uri.trim_start_matches("lex:");
                let nsid = nsid.split('#').next().unwrap_or(nsid);
                if nsid != own && !out.contains(uri) {
                    out.push(uri.clone());
                }
            };
            match def {
                Def::Record(o) | Def::Object(o) => {
                    for p in &o.properties {
                        walk(&p.def, own, out);
                    }
                }
                Def::Array { items, .. } => walk(items, own, out),
                Def::Ref(r) => push(r),
                Def::Union { refs, .. } => refs.iter().for_each(push),
                _ => {}
            }
        }
        let mut out = Vec::new();
        for (_, def) in &self.defs {
            walk(def, &self.id, &mut out);
        }
        out
    }
}

fn invalid(at: &str, what: &str) -> LexiconError {
    LexiconError::Invalid(if at.is_empty() {
        what.to_owned()
    } else {
        format!("{at} {what}")
    })
}

/// The keys of a JSON object in the order JavaScript enumerates them:
/// canonical array indexes (`"0"`, `"17"`, below 2^32 - 1) ascending, then
/// the others in document order. The reference validates properties in
/// that order, so the first error it reports depends on it.
pub(crate) fn js_key_order(map: &Map<String, Value>) -> Vec<&str> {
    fn index(key: &str) -> Option<u32> {
        let n: u32 = key.parse().ok()?;
        (n != u32::MAX && n.to_string() == key).then_some(n)
    }
    let mut indexes: Vec<(u32, &str)> = map
        .keys()
        .filter_map(|k| index(k).map(|n| (n, k.as_str())))
        .collect();
    indexes.sort_unstable();
    let mut out: Vec<&str> = indexes.into_iter().map(|(_, k)| k).collect();
    out.extend(
        map.keys()
            .map(String::as_str)
            .filter(|k| index(k).is_none()),
    );
    out
}

/// A `ref` string as a `lex:` URI, resolved against the document's own
/// (`#name` → `lex:<doc id>#name`), as the reference's `toLexUri`.
pub(crate) fn to_lex_uri(s: &str, base: Option<&str>) -> Result<String, String> {
    match base {
        Some(base) if s.starts_with('#') => {
            at_most_one_hash(s)?;
            Ok(format!("{base}{s}"))
        }
        _ => {
            check_lex_uri(s)?;
            Ok(if s.starts_with("lex:") {
                s.to_owned()
            } else {
                format!("lex:{s}")
            })
        }
    }
}

/// The errors [`to_lex_uri`] gives for `s` without a base, without
/// building the URI.
pub(crate) fn check_lex_uri(s: &str) -> Result<(), String> {
    at_most_one_hash(s)?;
    if s.starts_with('#') {
        return Err(format!("Unable to resolve uri without anchor: {s}"));
    }
    Ok(())
}

fn at_most_one_hash(s: &str) -> Result<(), String> {
    if s.bytes().filter(|b| *b == b'#').count() > 1 {
        return Err("Uri can only have one hash segment".to_owned());
    }
    Ok(())
}

type Obj = Map<String, Value>;

fn as_obj<'a>(v: &'a Value, at: &str) -> Result<&'a Obj, LexiconError> {
    v.as_object()
        .ok_or_else(|| invalid(at, "must be an object"))
}

fn opt_string(o: &Obj, key: &str, at: &str) -> Result<Option<String>, LexiconError> {
    match o.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(invalid(at, "must be a string")),
    }
}

fn opt_bool(o: &Obj, key: &str, at: &str) -> Result<Option<bool>, LexiconError> {
    match o.get(key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(invalid(&format!("{at}.{key}"), "must be a boolean")),
    }
}

fn opt_number(o: &Obj, key: &str, at: &str) -> Result<Option<f64>, LexiconError> {
    match o.get(key) {
        None => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(_) => Err(invalid(at, "must be a number")),
    }
}

fn int(v: &Value, at: &str) -> Result<i64, LexiconError> {
    match v {
        Value::Number(n) => n.as_i64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15)
                .map(|f| f as i64)
        }),
        _ => None,
    }
    .ok_or_else(|| invalid(at, "must be an integer"))
}

fn opt_int(o: &Obj, key: &str, at: &str) -> Result<Option<i64>, LexiconError> {
    o.get(key)
        .map(|v| int(v, &format!("{at}.{key}")))
        .transpose()
}

fn opt_strings(o: &Obj, key: &str, at: &str) -> Result<Option<Vec<String>>, LexiconError> {
    let Some(v) = o.get(key) else {
        return Ok(None);
    };
    let at = format!("{at}.{key}");
    let list = v
        .as_array()
        .ok_or_else(|| invalid(&at, "must be an array of strings"))?;
    list.iter()
        .map(|s| {
            s.as_str()
                .map(str::to_owned)
                .ok_or_else(|| invalid(&at, "must be an array of strings"))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

fn type_of<'a>(o: &'a Obj, at: &str) -> Result<&'a str, LexiconError> {
    match o.get("type") {
        None => Err(invalid(at, "must have a type")),
        Some(Value::String(t)) => Ok(t),
        Some(_) => Err(invalid(&format!("{at}.type"), "must be a string")),
    }
}

/// A top-level definition (`defs.<name>`).
fn parse_user_type(v: &Value, at: &str, base: &str) -> Result<Def, LexiconError> {
    let o = as_obj(v, at)?;
    match type_of(o, at)? {
        "record" => {
            opt_string(o, "key", &format!("{at}.key"))?;
            opt_string(o, "description", &format!("{at}.description"))?;
            let record = o
                .get("record")
                .ok_or_else(|| invalid(&format!("{at}.record"), "is required"))?;
            let at = format!("{at}.record");
            let ro = as_obj(record, &at)?;
            if type_of(ro, &at)? != "object" {
                return Err(invalid(&format!("{at}.type"), "must be \"object\""));
            }
            Ok(Def::Record(Arc::new(parse_object(ro, &at, base)?)))
        }
        "query" => Ok(Def::Other("query")),
        "procedure" => Ok(Def::Other("procedure")),
        "subscription" => Ok(Def::Other("subscription")),
        "permission-set" => Ok(Def::Other("permission-set")),
        "token" => Ok(Def::Token),
        "ref" | "union" => Err(invalid(
            &format!("{at}.type"),
            "must be one of: record, query, procedure, subscription, blob, array, token, object, boolean, integer, string, bytes, cid-link, unknown",
        )),
        _ => parse_field(o, at, base),
    }
}

/// A property, array item or non-primary definition.
fn parse_field(o: &Obj, at: &str, base: &str) -> Result<Def, LexiconError> {
    opt_string(o, "description", &format!("{at}.description"))?;
    let ty = type_of(o, at)?;
    Ok(match ty {
        "object" => Def::Object(Arc::new(parse_object(o, at, base)?)),
        "array" => {
            let items = o
                .get("items")
                .ok_or_else(|| invalid(&format!("{at}.items"), "is required"))?;
            let items_at = format!("{at}.items");
            let io = as_obj(items, &items_at)?;
            let items = match type_of(io, &items_at)? {
                "object" | "array" => {
                    return Err(invalid(
                        &format!("{items_at}.type"),
                        "must be a primitive, bytes, cid-link, ref, union or blob",
                    ));
                }
                _ => parse_field(io, &items_at, base)?,
            };
            Def::Array {
                items: Box::new(items),
                min_length: opt_int(o, "minLength", at)?,
                max_length: opt_int(o, "maxLength", at)?,
            }
        }
        "boolean" => Def::Boolean {
            default: opt_bool(o, "default", at)?,
            constant: opt_bool(o, "const", at)?,
        },
        "integer" => Def::Integer(IntegerDef {
            default: opt_int(o, "default", at)?,
            minimum: opt_int(o, "minimum", at)?,
            maximum: opt_int(o, "maximum", at)?,
            enumeration: match o.get("enum") {
                None => None,
                Some(Value::Array(items)) => Some(
                    items
                        .iter()
                        .map(|v| int(v, &format!("{at}.enum")))
                        .collect::<Result<_, _>>()?,
                ),
                Some(_) => return Err(invalid(&format!("{at}.enum"), "must be an array")),
            },
            constant: opt_int(o, "const", at)?,
        }),
        "string" => {
            let format = match o.get("format") {
                None => None,
                Some(Value::String(f)) => Some(Format::parse(f).ok_or_else(|| {
                    invalid(
                        &format!("{at}.format"),
                        &format!("{f:?} is not a string format"),
                    )
                })?),
                Some(_) => return Err(invalid(&format!("{at}.format"), "must be a string")),
            };
            opt_strings(o, "knownValues", at)?;
            Def::String(Box::new(StringDef {
                format,
                default: opt_string(o, "default", &format!("{at}.default"))?,
                min_length: opt_int(o, "minLength", at)?,
                max_length: opt_int(o, "maxLength", at)?,
                min_graphemes: opt_int(o, "minGraphemes", at)?,
                max_graphemes: opt_int(o, "maxGraphemes", at)?,
                enumeration: opt_strings(o, "enum", at)?,
                constant: opt_string(o, "const", &format!("{at}.const"))?,
            }))
        }
        "unknown" => Def::Unknown,
        "bytes" => Def::Bytes {
            min_length: opt_number(o, "minLength", &format!("{at}.minLength"))?,
            max_length: opt_number(o, "maxLength", &format!("{at}.maxLength"))?,
        },
        "cid-link" => Def::CidLink,
        "blob" => Def::Blob {
            accept: opt_strings(o, "accept", at)?,
            max_size: opt_number(o, "maxSize", &format!("{at}.maxSize"))?,
        },
        "ref" => {
            let r = o
                .get("ref")
                .and_then(Value::as_str)
                .ok_or_else(|| invalid(&format!("{at}.ref"), "must be a string"))?;
            Def::Ref(Target::new(
                to_lex_uri(r, Some(base)).map_err(|e| invalid(&format!("{at}.ref"), &e))?,
            ))
        }
        "union" => {
            let refs = opt_strings(o, "refs", at)?
                .ok_or_else(|| invalid(&format!("{at}.refs"), "is required"))?;
            let refs = refs
                .iter()
                .map(|r| to_lex_uri(r, Some(base)).map(Target::new))
                .collect::<Result<_, _>>()
                .map_err(|e| invalid(&format!("{at}.refs"), &e))?;
            Def::Union {
                refs,
                closed: opt_bool(o, "closed", at)?.unwrap_or(false),
            }
        }
        "token" | "record" | "query" | "procedure" | "subscription" | "permission-set" => {
            return Err(invalid(
                &format!("{at}.type"),
                &format!("{ty:?} can only be a top-level definition"),
            ));
        }
        other => {
            return Err(invalid(
                &format!("{at}.type"),
                &format!("{other:?} is not a Lexicon type"),
            ));
        }
    })
}

fn parse_object(o: &Obj, at: &str, base: &str) -> Result<ObjectDef, LexiconError> {
    opt_string(o, "description", &format!("{at}.description"))?;
    let required = opt_strings(o, "required", at)?.unwrap_or_default();
    let nullable = opt_strings(o, "nullable", at)?.unwrap_or_default();
    let props = match o.get("properties") {
        None => None,
        Some(p) => Some(as_obj(p, &format!("{at}.properties"))?),
    };
    let Some(props) = props else {
        if !required.is_empty() {
            return Err(invalid(
                &format!("{at}.required"),
                "names fields but no properties are defined",
            ));
        }
        return Ok(ObjectDef::default());
    };
    for field in &required {
        if !props.contains_key(field) {
            return Err(invalid(
                &format!("{at}.required"),
                &format!("names {field:?}, which is not a property"),
            ));
        }
    }
    let mut properties = Vec::with_capacity(props.len());
    for name in js_key_order(props) {
        let pat = format!("{at}.properties.{name}");
        let po = as_obj(&props[name], &pat)?;
        properties.push(Property {
            name: name.to_owned(),
            def: parse_field(po, &pat, base)?,
            required: required.iter().any(|r| r == name),
            nullable: nullable.iter().any(|n| n == name),
        });
    }
    let prints = properties.iter().map(|p| KeyPrint::of(&p.name)).collect();
    Ok(ObjectDef { properties, prints })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::KeyPrint;

    proptest! {
        /// Keys from a two-letter alphabet, so that many share a length,
        /// ends or middles: prints are equal exactly when the keys are, up
        /// to `KeyPrint::EXACT` bytes, and equal keys always print equal.
        #[test]
        fn prints_identify_short_keys(a in "[ab]{0,20}", b in "[ab]{0,20}") {
            let (pa, pb) = (KeyPrint::of(&a), KeyPrint::of(&b));
            if a == b {
                prop_assert_eq!(pa, pb);
            } else if a.len() <= KeyPrint::EXACT {
                prop_assert_ne!(pa, pb, "{:?} {:?}", a, b);
            }
            prop_assert_eq!(pa.is_exact(), a.len() <= KeyPrint::EXACT);
        }
    }
}
