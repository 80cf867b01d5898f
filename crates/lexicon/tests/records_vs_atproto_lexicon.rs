//! Differential test: generated Lexicons and records, each record's verdict
//! and first error message compared with `@atproto/lexicon` (npm, pinned in
//! `tests/oracles`), which validates them as a PDS does
//! (`assertValidRecord(collection, jsonToLex(record))`).
//!
//! The generator covers every type and constraint a record can meet, with
//! values at and around each bound. It leaves out, by construction, the
//! inputs where datarepo follows the Lexicon specification rather than
//! the reference; `tests/divergences.rs` pins those instead:
//! non-map values (arrays, links, byte strings) where an object or
//! `unknown` is expected, blob `accept` / `maxSize`, and `$type` spelled
//! `lex:…`. Datetimes have a differential test of their own
//! (`tests/datetimes_vs_atproto_lexicon.rs`).

use crate::common;
use lexicon::{Document, Lexicons};
use serde_json::{Map, Value, json};
use testkit::Rng;

const SCHEMAS: usize = 2000;
const RECORDS_PER_SCHEMA: usize = 5;

/// Text pieces: ASCII, precomposed and combining accents, emoji with
/// modifiers and ZWJ sequences, flags, Hangul jamo, Indic conjuncts, CRLF.
const PIECES: &[&str] = &[
    "a",
    "Z",
    " ",
    "é",
    "e\u{301}",
    "a\u{301}\u{302}",
    "👍",
    "👍🏽",
    "👨\u{200d}👩\u{200d}👧\u{200d}👦",
    "🇫🇷",
    "🇫",
    "한",
    "\u{1100}\u{1161}\u{11a8}",
    "क्ष",
    "क\u{94d}\u{200d}ष",
    "\r\n",
    "\u{200d}",
    "❤\u{fe0f}",
    "日",
    "ß",
    "\u{1f3f3}\u{fe0f}\u{200d}\u{1f308}",
    "\u{0}",
    "𝓐",
];

fn text(rng: &mut Rng, pieces: usize) -> String {
    (0..pieces).map(|_| rng.pick(PIECES)).collect()
}

const FORMATS: &[(&str, &[&str], &[&str])] = &[
    (
        "datetime",
        &[
            "1985-04-12T23:20:50.123Z",
            "1985-04-12T23:20:50.123456Z",
            "1985-04-12T23:20:50Z",
            "1985-04-12T23:20:50.12345678912345Z",
            "1985-04-12T23:20:50.123+00:00",
            "1985-04-12T23:20:50.123-07:00",
            "2024-02-29T00:00:00Z",
            "0001-01-01T00:00:00Z",
            "1985-04-12T23:20:60Z",
        ],
        &[
            "1985-04-12T23:20:50.123-00:00",
            "1985-04-12",
            "1985-04-12T23:20Z",
            "1985-04-12T23:20:50.Z",
            "1985-04-12T25:20:50Z",
            "1985-13-12T23:20:50Z",
            "",
            "now",
            "85-04-12T23:20:50Z",
        ],
    ),
    (
        "uri",
        &[
            "https://example.com",
            "at://did:plc:abc/x",
            "mailto:a@b.c",
            "a:b",
            "did:web:x",
        ],
        &["example.com", "https:// x", "https:///", "", ":x", "a b:c"],
    ),
    (
        "at-uri",
        &[
            "at://did:plc:z72i7hdynmk6r22z27h6tvur",
            "at://did:plc:z72i7hdynmk6r22z27h6tvur/app.bsky.feed.post/3jui7kd54zh2y",
            "at://alice.example.com/app.bsky.feed.post",
            "at://did:web:a.example/com.example.x/self#/a/b",
        ],
        &[
            "at://did:plc:abc/app.bsky.feed.post/3jui7kd54zh2y/extra",
            "at://did:plc:abc/",
            "at://did:plc:abc?x=1",
            "at://did:plc:abc/not_an_nsid",
            "https://example.com",
            "at://",
            "at://bad handle",
            "at://did:plc:abc/app.bsky.feed.post/..",
            "at://did:plc:abc#nopointer",
            "at://did:plc:abc#/%zz",
        ],
    ),
    (
        "did",
        &[
            "did:plc:z72i7hdynmk6r22z27h6tvur",
            "did:web:example.com",
            "did:method:a:b%20c",
        ],
        &[
            "did:Web:x",
            "did:web:",
            "did:web:x:",
            "did:web:x%",
            "plc:abc",
            "did::x",
        ],
    ),
    (
        "handle",
        &["alice.example.com", "xn--ls8h.test", "a.b", "john.test"],
        &[
            "alice",
            "-a.example.com",
            "a..b",
            "alice.example.com.",
            "a.b.123",
            "al ice.com",
        ],
    ),
    (
        "at-identifier",
        &["alice.example.com", "did:plc:z72i7hdynmk6r22z27h6tvur"],
        &["alice", "did:x", "at://alice.example.com"],
    ),
    (
        "nsid",
        &["app.bsky.feed.post", "com.example.fooBar", "a.b.c"],
        &[
            "app.bsky",
            "com.example.3",
            "com..x",
            "com.example.foo-bar",
            "Com.example",
        ],
    ),
    (
        "cid",
        &[
            "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm",
            "QmQg1v4o9xdT3Q14wh4S7dxZkDjyZ9ssFzFzyep1YrVJBY",
            "bafkreibme22gw2h7y2h7tg2fhqotaqjucnbc24deqo72b6mkl2egezxhvy",
        ],
        &[
            "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hp",
            "BAFYREIE5737GDXLW5I64VZICHCALBA3Z2V5N6ICIFVX5XYTVSKE7MR3HPM",
            "Qm",
            "",
            "not a cid",
            "mAXASIJ7lRkqOH9kw",
        ],
    ),
    (
        "language",
        &[
            "en",
            "en-US",
            "pt-BR",
            "zh-Hant-TW",
            "i-klingon",
            "x-private",
            "sgn-BE-FR",
            "de-1996",
        ],
        &["", "english-language", "en_US", "e", "en-", "123"],
    ),
    (
        "tid",
        &["3jui7kd54zh2y", "2222222222222"],
        &[
            "3jui7kd54zh2",
            "3JUI7KD54ZH2Y",
            "kzzzzzzzzzzzz",
            "3jui7kd54zh2y0",
        ],
    ),
    (
        "record-key",
        &["self", "3jui7kd54zh2y", "a:b~c.d-e_f"],
        &["", ".", "..", "a/b", "a b", "a#b"],
    ),
];

const CIDS: &[&str] = &[
    "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm",
    "bafkreibme22gw2h7y2h7tg2fhqotaqjucnbc24deqo72b6mkl2egezxhvy",
];

/// A generated type, with what the generator needs to make values for it.
#[derive(Clone)]
enum Ty {
    Str {
        schema: Value,
        min: Option<i64>,
        max: Option<i64>,
        min_g: Option<i64>,
        max_g: Option<i64>,
        enumeration: Option<Vec<String>>,
        constant: Option<String>,
        format: Option<usize>,
    },
    Int {
        schema: Value,
        lo: i64,
        hi: i64,
        enumeration: Option<Vec<i64>>,
    },
    Bool(Value),
    Bytes {
        schema: Value,
        min: Option<u8>,
        max: Option<u8>,
    },
    CidLink,
    Blob,
    Unknown,
    Array {
        items: Box<Ty>,
        min: Option<i64>,
        max: Option<i64>,
    },
    /// A ref to an object definition (`uri`, as written) with its fields.
    Ref {
        uri: String,
        object: Box<Obj>,
    },
    /// A ref to a definition that no document has.
    Missing {
        uri: String,
    },
    /// Variants as (ref, `$type` naming it, fields).
    Union {
        variants: Vec<(String, String, Obj)>,
        closed: bool,
    },
}

#[derive(Clone)]
struct Obj {
    props: Vec<(String, Ty)>,
    required: Vec<String>,
    nullable: Vec<String>,
}

struct Gen {
    rng: Rng,
    /// Extra definitions of the current defs document.
    defs: Map<String, Value>,
    defs_nsid: String,
    /// Extra definitions of the record document.
    local_defs: Map<String, Value>,
    depth: usize,
}

impl Gen {
    fn chance(&mut self, percent: u64) -> bool {
        self.rng.below(100) < percent
    }

    fn bound(&mut self) -> i64 {
        self.rng.pick(&[0, 1, 2, 3, 5, 8, 13])
    }

    fn schema_of(&self, ty: &Ty) -> Value {
        match ty {
            Ty::Str { schema, .. } | Ty::Int { schema, .. } | Ty::Bytes { schema, .. } => {
                schema.clone()
            }
            Ty::Bool(s) => s.clone(),
            Ty::CidLink => json!({"type": "cid-link"}),
            Ty::Blob => json!({"type": "blob"}),
            Ty::Unknown => json!({"type": "unknown"}),
            Ty::Array { items, min, max } => {
                let mut s = json!({"type": "array", "items": self.schema_of(items)});
                if let Some(m) = min {
                    s["minLength"] = json!(m);
                }
                if let Some(m) = max {
                    s["maxLength"] = json!(m);
                }
                s
            }
            Ty::Ref { uri, .. } | Ty::Missing { uri } => json!({"type": "ref", "ref": uri}),
            Ty::Union { variants, closed } => {
                let refs: Vec<&String> = variants.iter().map(|(u, _, _)| u).collect();
                let mut s = json!({"type": "union", "refs": refs});
                if *closed {
                    s["closed"] = json!(true);
                }
                s
            }
        }
    }

    fn string_ty(&mut self) -> Ty {
        let mut schema = json!({"type": "string"});
        let mut ty_min = None;
        let mut ty_max = None;
        let (mut min_g, mut max_g) = (None, None);
        let mut enumeration = None;
        let mut constant = None;
        let mut format = None;
        match self.rng.below(6) {
            0 => {
                let f = self.rng.index(FORMATS.len());
                schema["format"] = json!(FORMATS[f].0);
                format = Some(f);
            }
            1 => {
                let list: Vec<String> = (0..1 + self.rng.below(3))
                    .map(|_| {
                        let n = 1 + self.rng.below(3) as usize;
                        text(&mut self.rng, n)
                    })
                    .collect();
                schema["enum"] = json!(list);
                enumeration = Some(list);
            }
            2 => {
                let n = 1 + self.rng.below(3) as usize;
                let c = text(&mut self.rng, n);
                schema["const"] = json!(c);
                constant = Some(c);
            }
            _ => {}
        }
        if self.chance(40) {
            let m = self.bound();
            schema["minLength"] = json!(m);
            ty_min = Some(m);
        }
        if self.chance(40) {
            let m = ty_min.unwrap_or(0) + self.bound() * 3;
            schema["maxLength"] = json!(m);
            ty_max = Some(m);
        }
        if self.chance(40) {
            let m = self.bound();
            schema["minGraphemes"] = json!(m);
            min_g = Some(m);
        }
        if self.chance(40) {
            let m = min_g.unwrap_or(0) + self.bound();
            schema["maxGraphemes"] = json!(m);
            max_g = Some(m);
        }
        if self.chance(10) {
            schema["default"] = json!("d");
        }
        if self.chance(10) {
            schema["knownValues"] = json!(["x", "com.example.defs#token"]);
        }
        Ty::Str {
            schema,
            min: ty_min,
            max: ty_max,
            min_g,
            max_g,
            enumeration,
            constant,
            format,
        }
    }

    fn int_ty(&mut self) -> Ty {
        let mut schema = json!({"type": "integer"});
        let (mut lo, mut hi) = (-20, 20);
        let mut enumeration = None;
        if self.chance(40) {
            lo = self.rng.below(10) as i64 - 5;
            schema["minimum"] = json!(lo);
        }
        if self.chance(40) {
            hi = lo + self.rng.below(10) as i64;
            schema["maximum"] = json!(hi);
        }
        if self.chance(15) {
            let list: Vec<i64> = (0..1 + self.rng.below(3))
                .map(|_| self.rng.below(10) as i64 - 3)
                .collect();
            schema["enum"] = json!(list);
            enumeration = Some(list);
        }
        if self.chance(10) {
            let c = self.rng.below(5) as i64;
            schema["const"] = json!(c);
        }
        if self.chance(10) {
            schema["default"] = json!(1);
        }
        Ty::Int {
            schema,
            lo,
            hi,
            enumeration,
        }
    }

    fn obj(&mut self, props: usize) -> Obj {
        let mut out = Obj {
            props: Vec::new(),
            required: Vec::new(),
            nullable: Vec::new(),
        };
        for i in 0..props {
            let name = match self.rng.below(10) {
                0 => format!("{i}"),
                1 => format!("p-{i}"),
                _ => format!("p{i}"),
            };
            let ty = self.ty();
            if self.chance(40) {
                out.required.push(name.clone());
            }
            if self.chance(15) {
                out.nullable.push(name.clone());
            }
            out.props.push((name, ty));
        }
        out
    }

    fn obj_schema(&self, o: &Obj) -> Value {
        let props: Map<String, Value> = o
            .props
            .iter()
            .map(|(n, t)| (n.clone(), self.schema_of(t)))
            .collect();
        let mut s = json!({"type": "object", "properties": props});
        if !o.required.is_empty() {
            s["required"] = json!(o.required);
        }
        if !o.nullable.is_empty() {
            s["nullable"] = json!(o.nullable);
        }
        s
    }

    /// A new object definition in the defs document; returns how a ref
    /// from the record document names it and the `$type` naming it.
    fn object_def(&mut self) -> (String, String, Obj) {
        let mut name = format!("o{}", self.defs.len());
        if !self.defs.contains_key("main") && self.chance(15) {
            name = "main".to_owned();
        }
        // Reserve the name before nested definitions take theirs.
        self.defs.insert(name.clone(), Value::Null);
        self.depth += 1;
        let n = self.rng.below(4) as usize;
        let obj = self.obj(n);
        self.depth -= 1;
        let schema = self.obj_schema(&obj);
        self.defs.insert(name.clone(), schema);
        let full = format!("{}#{name}", self.defs_nsid);
        if name == "main" {
            // `nsid` and `nsid#main` name the same definition, in refs and
            // in `$type`s alike.
            let bare = self.defs_nsid.clone();
            let r = if self.chance(50) {
                bare.clone()
            } else {
                full.clone()
            };
            let t = if self.chance(50) { bare } else { full };
            return (r, t, obj);
        }
        (full.clone(), full, obj)
    }

    fn ty(&mut self) -> Ty {
        let deep = self.depth >= 2;
        match self.rng.below(if deep { 8 } else { 13 }) {
            0 | 1 => self.string_ty(),
            2 => self.int_ty(),
            3 => {
                let mut s = json!({"type": "boolean"});
                if self.chance(30) {
                    s["const"] = json!(self.chance(50));
                }
                if self.chance(10) {
                    s["default"] = json!(true);
                }
                Ty::Bool(s)
            }
            4 => {
                let mut s = json!({"type": "bytes"});
                let (mut min, mut max) = (None, None);
                if self.chance(40) {
                    let m = self.rng.below(4) as u8;
                    s["minLength"] = json!(m);
                    min = Some(m);
                }
                if self.chance(40) {
                    let m = min.unwrap_or(0) + self.rng.below(6) as u8;
                    s["maxLength"] = json!(m);
                    max = Some(m);
                }
                Ty::Bytes {
                    schema: s,
                    min,
                    max,
                }
            }
            5 => Ty::CidLink,
            6 => Ty::Blob,
            7 => Ty::Unknown,
            8 | 9 => {
                self.depth += 1;
                let items = self.ty();
                self.depth -= 1;
                let items = match items {
                    Ty::Array { .. } => Ty::Unknown,
                    other => other,
                };
                let min = self.chance(30).then(|| self.rng.below(3) as i64);
                let max = self
                    .chance(30)
                    .then(|| min.unwrap_or(0) + self.rng.below(3) as i64);
                Ty::Array {
                    items: Box::new(items),
                    min,
                    max,
                }
            }
            10 => {
                let (uri, _, object) = self.object_def();
                Ty::Ref {
                    uri,
                    object: Box::new(object),
                }
            }
            11 => {
                if self.chance(10) {
                    return Ty::Missing {
                        uri: "com.example.missing#nothing".to_owned(),
                    };
                }
                let variants = (0..1 + self.rng.below(3))
                    .map(|_| self.object_def())
                    .collect();
                Ty::Union {
                    variants,
                    closed: self.chance(50),
                }
            }
            _ => {
                // A ref to a definition of the record's own document.
                let name = format!("l{}", self.local_defs.len());
                self.local_defs.insert(name.clone(), Value::Null);
                let mut def = self.string_ty();
                if self.chance(50) {
                    let n = self.rng.below(3) as usize;
                    let obj = self.obj(n);
                    self.local_defs.insert(name.clone(), self.obj_schema(&obj));
                    return Ty::Ref {
                        uri: format!("#{name}"),
                        object: Box::new(obj),
                    };
                }
                self.local_defs.insert(name.clone(), self.schema_of(&def));
                if let Ty::Str { schema, .. } = &mut def {
                    *schema = json!({"type": "ref", "ref": format!("#{name}")});
                }
                def
            }
        }
    }

    // ---- values ----

    /// A value for `ty`, usually valid, sometimes at or past a bound,
    /// sometimes of another type.
    fn value(&mut self, ty: &Ty) -> Value {
        if self.chance(8) {
            return self.wrong_type(ty);
        }
        match ty {
            Ty::Str {
                min,
                max,
                min_g,
                max_g,
                enumeration,
                constant,
                format,
                ..
            } => {
                if let Some(f) = format {
                    let (_, good, bad) = FORMATS[*f];
                    return json!(if self.chance(70) {
                        self.rng.pick(good)
                    } else {
                        self.rng.pick(bad)
                    });
                }
                if let Some(list) = enumeration
                    && self.chance(70)
                {
                    return json!(list[self.rng.index(list.len())]);
                }
                if let Some(c) = constant
                    && self.chance(70)
                {
                    return json!(c);
                }
                let target = [*min, *max, *min_g, *max_g]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>();
                let n = if target.is_empty() {
                    self.rng.below(6) as i64
                } else {
                    let t = target[self.rng.index(target.len())];
                    (t + self.rng.below(3) as i64 - 1).max(0)
                };
                let s = if self.chance(50) {
                    "a".repeat(n as usize)
                } else {
                    text(&mut self.rng, n as usize)
                };
                json!(s)
            }
            Ty::Int {
                lo,
                hi,
                enumeration,
                ..
            } => {
                if let Some(list) = enumeration
                    && self.chance(60)
                {
                    return json!(list[self.rng.index(list.len())]);
                }
                let span = (hi - lo + 3) as u64;
                json!(lo - 1 + self.rng.below(span) as i64)
            }
            Ty::Bool(_) => json!(self.chance(50)),
            Ty::Bytes { min, max, .. } => {
                let t = [*min, *max].into_iter().flatten().collect::<Vec<_>>();
                let n = if t.is_empty() {
                    self.rng.below(5) as usize
                } else {
                    (t[self.rng.index(t.len())] as usize + self.rng.below(3) as usize)
                        .saturating_sub(1)
                };
                let b64 = [
                    "",
                    "AA",
                    "AAE",
                    "AAEC",
                    "AAECAw",
                    "AAECAwQ",
                    "AAECAwQF",
                    "AAECAwQFBg",
                ];
                json!({"$bytes": b64[n.min(b64.len() - 1)]})
            }
            Ty::CidLink => json!({"$link": self.rng.pick(CIDS)}),
            Ty::Blob => {
                if self.chance(20) {
                    json!({"cid": self.rng.pick(CIDS), "mimeType": "image/png"})
                } else if self.chance(10) {
                    // Not quite a blob: an extra key.
                    json!({"$type": "blob", "ref": {"$link": CIDS[0]}, "mimeType": "image/png", "size": 3, "x": 1})
                } else {
                    json!({"$type": "blob", "ref": {"$link": self.rng.pick(CIDS)}, "mimeType": "image/jpeg", "size": self.rng.below(5000)})
                }
            }
            Ty::Unknown => json!({"anything": [1, "x"], "$type": "com.example.whatever"}),
            Ty::Array { items, min, max } => {
                let t = [*min, *max].into_iter().flatten().collect::<Vec<_>>();
                let n = if t.is_empty() {
                    self.rng.below(4) as i64
                } else {
                    (t[self.rng.index(t.len())] + self.rng.below(3) as i64 - 1).max(0)
                };
                Value::Array((0..n).map(|_| self.value(items)).collect())
            }
            Ty::Ref { object, .. } => self.object_value(object, None),
            Ty::Missing { .. } => json!({"a": 1}),
            Ty::Union {
                variants,
                closed: _,
            } => {
                if self.chance(15) {
                    return json!({"$type": "com.example.other#thing", "a": 1});
                }
                if self.chance(5) {
                    return json!({"a": 1});
                }
                let (_, ty, obj) = variants[self.rng.index(variants.len())].clone();
                self.object_value(&obj, Some(ty))
            }
        }
    }

    fn wrong_type(&mut self, ty: &Ty) -> Value {
        let object_position = matches!(
            ty,
            Ty::Ref { .. } | Ty::Unknown | Ty::Union { .. } | Ty::Missing { .. }
        );
        let choices: Vec<Value> = if object_position {
            vec![json!("s"), json!(3), json!(true)]
        } else {
            vec![
                json!("s"),
                json!(3),
                json!(true),
                json!([]),
                json!({"a": 1}),
                json!({"$link": CIDS[0]}),
                json!({"$bytes": "AAE"}),
            ]
        };
        choices[self.rng.index(choices.len())].clone()
    }

    fn object_value(&mut self, o: &Obj, type_name: Option<String>) -> Value {
        let mut m = Map::new();
        if let Some(t) = type_name {
            m.insert("$type".to_owned(), json!(t));
        }
        for (name, ty) in &o.props {
            let roll = self.rng.below(100);
            if roll < 12 {
                continue;
            }
            if roll < 18 {
                m.insert(name.clone(), Value::Null);
                continue;
            }
            let v = self.value(ty);
            m.insert(name.clone(), v);
        }
        if self.chance(20) {
            m.insert("extra".to_owned(), json!("unknown properties are allowed"));
        }
        Value::Object(m)
    }
}

/// A phrase of each of the reference's messages.
const RULES: &[&str] = &[
    "must be a string",
    "must be an integer",
    "must be a boolean",
    "must be an array",
    "must be an object",
    "must be a byte array",
    "must be a CID",
    "should be a blob ref",
    "must have the property",
    "characters",
    "graphemes",
    "must be one of (",
    "$type must be one of",
    "includes the \"$type\" property",
    "can not be greater than",
    "can not be less than",
    "must not have more than",
    "must not have fewer than",
    "must not be larger than",
    "must not be smaller than",
    "Lexicon not found",
    "Invalid $type",
    "must be true",
    "must be false",
];

#[test]
fn verdicts_and_messages_match_the_reference() {
    let mut g = Gen {
        rng: Rng(0x1e81c0),
        defs: Map::new(),
        defs_nsid: String::new(),
        local_defs: Map::new(),
        depth: 0,
    };
    let mut input = String::new();
    let mut ours: Vec<(String, Value, Result<(), String>)> = Vec::new();
    for i in 0..SCHEMAS {
        g.defs = Map::new();
        g.defs_nsid = format!("com.example.defs{i}");
        g.local_defs = Map::new();
        g.depth = 0;
        let collection = format!("com.example.record{i}");
        let n = 1 + g.rng.below(6) as usize;
        let record = g.obj(n);
        if g.chance(20) {
            g.defs.insert("token".to_owned(), json!({"type": "token"}));
        }
        let mut record_defs = g.local_defs.clone();
        record_defs.insert(
            "main".to_owned(),
            json!({"type": "record", "key": "tid", "record": g.obj_schema(&record)}),
        );
        let record_doc = json!({"lexicon": 1, "id": collection, "defs": record_defs});
        let mut docs = vec![record_doc.clone()];
        if !g.defs.is_empty() {
            docs.push(json!({"lexicon": 1, "id": g.defs_nsid, "defs": g.defs.clone()}));
        }
        let mut lexicons = Lexicons::new();
        for d in &docs {
            let doc = Document::parse(d.clone())
                .unwrap_or_else(|e| panic!("generated document must parse: {e}\n{d}"));
            lexicons.insert(doc);
        }
        input.push_str(&json!({ "docs": docs }).to_string());
        input.push('\n');
        for _ in 0..RECORDS_PER_SCHEMA {
            let mut value = g.object_value(&record, None);
            match g.rng.below(40) {
                0 => {}
                1 => {
                    value["$type"] = json!("com.example.elsewhere");
                }
                _ => {
                    value["$type"] = json!(collection);
                }
            }
            let verdict = lexicons
                .validate_record(&collection, &value)
                .map_err(|e| e.to_string());
            input.push_str(&json!({"collection": collection, "record": value}).to_string());
            input.push('\n');
            ours.push((collection.clone(), value, verdict));
        }
    }
    let answers = common::reference_verdicts(&input);
    assert_eq!(answers.len(), ours.len(), "one answer per record");
    let mut valid = 0;
    let mut mismatches = Vec::new();
    for ((collection, record, verdict), answer) in ours.iter().zip(&answers) {
        let theirs = if answer["valid"] == json!(true) {
            Ok(())
        } else {
            Err(answer["error"].as_str().unwrap_or_default().to_owned())
        };
        if theirs.is_ok() {
            valid += 1;
        }
        if &theirs != verdict {
            mismatches.push(format!(
                "{collection}: {record}\n  ours:      {verdict:?}\n  reference: {theirs:?}"
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} records differ from @atproto/lexicon; the first:\n{}",
        mismatches.len(),
        ours.len(),
        mismatches
            .iter()
            .take(8)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    // Every rule must have been broken somewhere in the corpus.
    let errors: Vec<&str> = ours
        .iter()
        .filter_map(|(_, _, v)| v.as_ref().err().map(String::as_str))
        .collect();
    for rule in RULES.iter().chain(FORMATS.iter().map(|f| &f.0)) {
        let rule = match *rule {
            "datetime" => "datetime",
            "uri" => "must be a uri",
            "at-uri" => "at-uri",
            "did" => "must be a valid did",
            "handle" => "must be a valid handle",
            "at-identifier" => "did or a handle",
            "nsid" => "must be a valid nsid",
            "cid" => "cid string",
            "language" => "BCP 47",
            "tid" => "valid TID",
            "record-key" => "Record Key",
            other => other,
        };
        assert!(
            errors.iter().any(|e| e.contains(rule)),
            "no record broke {rule:?}: the generator misses a rule"
        );
    }
    // The corpus must exercise both verdicts in earnest.
    let total = ours.len();
    assert!(
        valid * 5 > total && valid * 5 < total * 4,
        "{valid} of {total} records valid: the generator is lopsided"
    );
}
