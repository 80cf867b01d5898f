//! Field-index queries against a plain evaluation of the `--where`
//! semantics over the records themselves: random commits (creates, updates
//! that change indexed values, deletes, batches), indexes added and dropped
//! along the way, and after every commit random queries compared by count,
//! every page both ways, `--top` and `--stats`; and the same after a build
//! over hundreds of records (packed column blocks) already there. Each
//! query's answer is also compared, record by record, with the verdict of
//! the same expression evaluated on the record alone (`RecordCondition`,
//! the stream's `where` filter), on every record whose values have the
//! kinds of the indexes at their paths.

use crate::common;

use std::collections::BTreeMap;

use proptest::prelude::*;
use repo::{IndexKind, Repository, Write};
use serde_json::{Value, json};
use store::MemoryKv;

const COLLECTION: &str = "app.test.post";
const DID: &str = "did:example:model";

/// A small deterministic generator (the case's seed comes from proptest).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())].clone()
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

const LANGS: [&str; 4] = ["en", "fr", "de", "pt-BR"];
const TAGS: [&str; 4] = ["a", "b", "c", "d"];
const NUMBERS: [i64; 10] = [-3, -1, 0, 1, 2, 7, 1 << 40, -(1 << 40), i64::MIN, i64::MAX];
/// Datetimes with their instants in microseconds, written by hand from the
/// calendar (2024-01-01T00:00:00Z is 1,704,067,200 s after the epoch).
const DATETIMES: [(&str, i64); 6] = [
    ("2024-01-01T00:00:00Z", 1_704_067_200_000_000),
    ("2024-01-01T01:00:00+01:00", 1_704_067_200_000_000),
    ("2024-01-01T00:00:00.000001Z", 1_704_067_200_000_001),
    ("2023-12-31T23:59:59.999999Z", 1_704_067_199_999_999),
    ("1970-01-01T00:00:00Z", 0),
    ("1969-12-31T23:59:59Z", -1_000_000),
];

fn record(rng: &mut Rng) -> Value {
    let mut r = serde_json::Map::new();
    r.insert("$type".into(), json!(COLLECTION));
    if rng.chance(80) {
        let v = if rng.chance(10) {
            json!(true)
        } else {
            json!(rng.pick(&LANGS))
        };
        r.insert("lang".into(), v);
    }
    if rng.chance(70) {
        let n = rng.below(4);
        let tags: Vec<Value> = (0..n).map(|_| json!(rng.pick(&TAGS))).collect();
        r.insert(
            "tags".into(),
            if n == 1 && rng.chance(50) {
                tags[0].clone()
            } else {
                json!(tags)
            },
        );
    }
    if rng.chance(80) {
        let v = match rng.below(4) {
            0 => json!(
                (0..rng.below(4))
                    .map(|_| rng.pick(&NUMBERS))
                    .collect::<Vec<_>>()
            ),
            1 => json!("not a number"),
            _ => json!(rng.pick(&NUMBERS)),
        };
        r.insert("n".into(), v);
    }
    if rng.chance(75) {
        let v = if rng.chance(15) {
            json!(rng.pick(&["yesterday", "2024-01-01", "2024-01-01T00:00:00"]))
        } else {
            json!(rng.pick(&DATETIMES).0)
        };
        r.insert("at".into(), v);
    }
    if rng.chance(50) {
        let items: Vec<Value> = (0..rng.below(3))
            .map(|_| json!({"score": rng.pick(&NUMBERS)}))
            .collect();
        r.insert("meta".into(), json!(items));
    }
    if rng.chance(75) {
        let v = match rng.below(10) {
            0 => json!(7),
            1 => json!([sentence(rng), sentence(rng)]),
            _ => json!(sentence(rng)),
        };
        r.insert("text".into(), v);
    }
    Value::Object(r)
}

/// Words as written in a text, each with its word as a text index keeps
/// it, written by hand from the rules (`docs/indexes.md`: NFKC, lowercase,
/// diacritics kept).
const VOCABULARY: [(&str, &str); 12] = [
    ("Rust", "rust"),
    ("rust", "rust"),
    ("ＲＵＳＴ", "rust"),
    ("storage", "storage"),
    ("STORE", "store"),
    ("Störage", "störage"),
    ("café", "café"),
    ("CAFÉ", "café"),
    ("ﬁle", "file"),
    ("don't", "don't"),
    ("3.14", "3.14"),
    ("Ωmega", "ωmega"),
];

/// Separators between words (never part of one).
const SEPARATORS: [&str; 4] = [" ", ", ", "; ", " — "];

/// A text of 0 to 6 words: from the vocabulary, or `w0`…`w99` (enough
/// words with one prefix to take the many-words path).
fn sentence(rng: &mut Rng) -> String {
    let mut out = String::new();
    if rng.chance(5) {
        return "!!".into();
    }
    for i in 0..rng.below(7) {
        if i > 0 {
            out.push_str(rng.pick(&SEPARATORS));
        }
        if rng.chance(40) {
            out.push_str(&format!("W{}", rng.below(100)));
        } else {
            out.push_str(rng.pick(&VOCABULARY).0);
        }
    }
    out
}

/// The model's words of the texts at `path`: each written word mapped
/// through the vocabulary (or `wN` lowercased).
fn text_words(v: &Value, path: &str) -> Vec<String> {
    let mut out = Vec::new();
    for text in values(v, path).into_iter().filter_map(Value::as_str) {
        for written in text
            .split([' ', ',', ';', '—'])
            .filter(|w| !w.is_empty() && *w != "!!")
        {
            match VOCABULARY.iter().find(|(w, _)| *w == written) {
                Some((_, word)) => out.push((*word).to_owned()),
                None => {
                    assert!(written.starts_with('W'), "{written:?}");
                    out.push(written.to_lowercase());
                }
            }
        }
    }
    out
}

/// The indexes the test may declare.
const INDEXES: [(&str, IndexKind); 6] = [
    ("lang", IndexKind::Keyword),
    ("tags", IndexKind::Keyword),
    ("n", IndexKind::Integer),
    ("at", IndexKind::Datetime),
    ("meta.score", IndexKind::Integer),
    ("text", IndexKind::Text),
];

/// Every value at `path`, arrays entered at every step (the model's own
/// reading of the semantics).
fn values<'a>(v: &'a Value, path: &str) -> Vec<&'a Value> {
    fn push<'a>(v: &'a Value, out: &mut Vec<&'a Value>) {
        if let Value::Array(a) = v {
            a.iter().for_each(|x| push(x, out));
        } else {
            out.push(v);
        }
    }
    let mut cur = vec![v];
    for seg in path.split('.') {
        let mut next = Vec::new();
        for c in cur {
            if let Some(x) = c.get(seg).filter(|_| c.is_object()) {
                push(x, &mut next);
            }
        }
        cur = next;
    }
    cur
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Kw {
    S(String),
    B(bool),
}

fn keywords(v: &Value, path: &str) -> Vec<Kw> {
    values(v, path)
        .into_iter()
        .filter_map(|x| match x {
            Value::String(s) => Some(Kw::S(s.clone())),
            Value::Bool(b) => Some(Kw::B(*b)),
            _ => None,
        })
        .collect()
}

fn numbers(v: &Value, path: &str, kind: IndexKind) -> Vec<i64> {
    values(v, path)
        .into_iter()
        .filter_map(|x| match (kind, x) {
            (IndexKind::Integer, Value::Number(n)) => n.as_i64(),
            (IndexKind::Datetime, Value::String(s)) => {
                DATETIMES.iter().find(|(t, _)| t == s).map(|(_, m)| *m)
            }
            _ => None,
        })
        .collect()
}

#[derive(Debug, Clone)]
enum Q {
    Or(Vec<Q>),
    And(Vec<Q>),
    Not(Box<Q>),
    Exists(&'static str),
    KwIn(&'static str, Vec<Kw>, bool),
    Cmp(&'static str, IndexKind, &'static str, i64, String),
    /// `matches`: the terms as written, and each as (word, is a prefix).
    Matches(&'static str, String, Vec<(String, bool)>),
}

fn kw_literal(k: &Kw) -> String {
    match k {
        Kw::S(s) => serde_json::to_string(s).unwrap(),
        Kw::B(b) => b.to_string(),
    }
}

fn render(q: &Q) -> String {
    match q {
        Q::Or(items) => format!(
            "({})",
            items.iter().map(render).collect::<Vec<_>>().join(" or ")
        ),
        Q::And(items) => format!(
            "({})",
            items.iter().map(render).collect::<Vec<_>>().join(" and ")
        ),
        Q::Not(inner) => format!("not {}", render(inner)),
        Q::Exists(p) => format!("{p} exists"),
        Q::KwIn(p, vals, negate) if vals.len() == 1 => {
            format!(
                "{p} {} {}",
                if *negate { "!=" } else { "=" },
                kw_literal(&vals[0])
            )
        }
        Q::KwIn(p, vals, _) => format!(
            "{p} in [{}]",
            vals.iter().map(kw_literal).collect::<Vec<_>>().join(", ")
        ),
        Q::Cmp(p, _, op, _, lit) => format!("{p} {op} {lit}"),
        Q::Matches(p, written, _) => {
            format!("{p} matches {}", serde_json::to_string(written).unwrap())
        }
    }
}

fn matches(q: &Q, r: &Value) -> bool {
    match q {
        Q::Or(items) => items.iter().any(|i| matches(i, r)),
        Q::And(items) => items.iter().all(|i| matches(i, r)),
        Q::Not(inner) => !matches(inner, r),
        Q::Exists(p) => {
            let kind = INDEXES.iter().find(|(x, _)| x == p).unwrap().1;
            match kind {
                IndexKind::Keyword => !keywords(r, p).is_empty(),
                IndexKind::Text => values(r, p).iter().any(|v| v.is_string()),
                k => !numbers(r, p, k).is_empty(),
            }
        }
        Q::Matches(p, _, asked) => {
            let have = text_words(r, p);
            asked.iter().all(|(w, prefix)| {
                have.iter().any(|h| {
                    if *prefix {
                        h.starts_with(w.as_str())
                    } else {
                        h == w
                    }
                })
            })
        }
        Q::KwIn(p, vals, negate) => keywords(r, p).iter().any(|k| vals.contains(k)) != *negate,
        Q::Cmp(p, kind, op, c, _) => {
            let vals = numbers(r, p, *kind);
            match *op {
                "!=" => !vals.contains(c),
                "=" => vals.contains(c),
                "<" => vals.iter().any(|v| v < c),
                "<=" => vals.iter().any(|v| v <= c),
                ">" => vals.iter().any(|v| v > c),
                ">=" => vals.iter().any(|v| v >= c),
                _ => unreachable!(),
            }
        }
    }
}

fn query(rng: &mut Rng, declared: &[(&'static str, IndexKind)], depth: u32) -> Q {
    if depth > 0 && rng.chance(40) {
        let n = 2 + rng.below(2);
        let items = (0..n).map(|_| query(rng, declared, depth - 1)).collect();
        return match rng.below(3) {
            0 => Q::Or(items),
            1 => Q::And(items),
            _ => Q::Not(Box::new(query(rng, declared, depth - 1))),
        };
    }
    let (path, kind) = rng.pick(declared);
    if rng.chance(15) {
        return Q::Exists(path);
    }
    match kind {
        IndexKind::Text => {
            // Terms as a user writes them, with the words they ask for.
            const TERMS: [(&str, &str, bool); 12] = [
                ("RUST", "rust", false),
                ("Storage", "storage", false),
                ("stor*", "stor", true),
                ("STÖR*", "stör", true),
                ("Café", "café", false),
                ("caf*", "caf", true),
                ("ﬁle", "file", false),
                ("DON'T", "don't", false),
                ("w*", "w", true),
                ("w1*", "w1", true),
                ("w42", "w42", false),
                ("zz", "zz", false),
            ];
            let n = 1 + rng.below(3);
            let picked: Vec<(&str, &str, bool)> = (0..n).map(|_| rng.pick(&TERMS)).collect();
            let written = picked.iter().map(|t| t.0).collect::<Vec<_>>().join(" ");
            Q::Matches(
                path,
                written,
                picked.iter().map(|t| (t.1.to_owned(), t.2)).collect(),
            )
        }
        IndexKind::Keyword => {
            let domain: Vec<Kw> = LANGS
                .iter()
                .chain(TAGS.iter())
                .map(|s| Kw::S((*s).to_owned()))
                .chain([Kw::B(true), Kw::B(false), Kw::S("zz".into())])
                .collect();
            let n = if rng.chance(30) { 1 + rng.below(3) } else { 1 };
            let vals = (0..n).map(|_| rng.pick(&domain)).collect::<Vec<_>>();
            let negate = vals.len() == 1 && rng.chance(30);
            Q::KwIn(path, vals, negate)
        }
        kind => {
            let op = rng.pick(&["=", "!=", "<", "<=", ">", ">="]);
            let (c, lit) = if kind == IndexKind::Integer {
                let c = if rng.chance(20) {
                    rng.pick(&[5, -2, 3])
                } else {
                    rng.pick(&NUMBERS)
                };
                (c, c.to_string())
            } else {
                let (s, m) = rng.pick(&DATETIMES);
                (m, serde_json::to_string(s).unwrap())
            };
            Q::Cmp(path, kind, op, c, lit)
        }
    }
}

type Model = BTreeMap<String, Value>;

async fn check_query(repo: &Repository<MemoryKv>, model: &Model, q: &Q, rng: &mut Rng) {
    let text = render(q);
    let want: Vec<&String> = model
        .iter()
        .filter(|(_, r)| matches(q, r))
        .map(|(k, _)| k)
        .collect();
    let count = repo.count(COLLECTION, Some(&text)).await.unwrap();
    let mut answered = std::collections::BTreeSet::new();
    assert_eq!(count, want.len() as u64, "count of {text}");
    for reverse in [false, true] {
        // Short pages, or longer ones through a large collection.
        let limit = if model.len() < 200 {
            1 + rng.below(6)
        } else {
            20 + rng.below(60)
        };
        let mut got = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = repo
                .query(COLLECTION, Some(&text), cursor.as_deref(), reverse, limit)
                .await
                .unwrap();
            for (rkey, record) in &page.records {
                assert_eq!(&record.to_json(), &model[rkey], "{rkey} of {text}");
                got.push(rkey.clone());
            }
            assert!(page.records.len() <= limit);
            match page.cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        if !reverse {
            answered.extend(got.iter().cloned());
        }
        let mut want: Vec<String> = want.iter().map(|s| (*s).clone()).collect();
        if reverse {
            want.reverse();
        }
        assert_eq!(
            got, want,
            "pages of {text} (reverse {reverse}, limit {limit})"
        );
    }
    let condition = repo::RecordCondition::parse(&text).unwrap();
    for (rkey, r) in model.iter().filter(|(_, r)| of_the_indexes_kinds(r)) {
        assert_eq!(
            condition.matches(r),
            answered.contains(rkey),
            "{text} on record {rkey} alone: {r}"
        );
    }
}

/// `query --sort` by a random declared path, both ways, paged, against
/// the model: records by their smallest value ascending (largest
/// descending), ties by record key, records without a value last.
async fn check_sorted(
    repo: &Repository<MemoryKv>,
    model: &Model,
    q: &Q,
    declared: &[(&'static str, IndexKind)],
    rng: &mut Rng,
) {
    let text = render(q);
    let sortable: Vec<(&'static str, IndexKind)> = declared
        .iter()
        .filter(|(_, k)| *k != IndexKind::Text)
        .copied()
        .collect();
    if sortable.is_empty() {
        return;
    }
    let (path, kind) = rng.pick(&sortable);
    let descending = rng.chance(50);
    #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
    enum V {
        N(i64),
        K(Kw),
    }
    let mut want: Vec<(Option<V>, &String)> = model
        .iter()
        .filter(|(_, r)| matches(q, r))
        .map(|(rkey, r)| {
            let values: Vec<V> = match kind {
                IndexKind::Keyword => keywords(r, path).into_iter().map(V::K).collect(),
                IndexKind::Text => unreachable!("text indexes are not sortable"),
                k => numbers(r, path, k).into_iter().map(V::N).collect(),
            };
            let value = if descending {
                values.into_iter().max()
            } else {
                values.into_iter().min()
            };
            (value, rkey)
        })
        .collect();
    want.sort_by(|a, b| {
        let by_value = match (&a.0, &b.0) {
            (Some(x), Some(y)) if descending => y.cmp(x),
            (Some(x), Some(y)) => x.cmp(y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        };
        by_value.then_with(|| a.1.cmp(b.1))
    });
    let want: Vec<&String> = want.into_iter().map(|(_, k)| k).collect();
    let limit = 1 + rng.below(7);
    let mut got = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = repo
            .query_sorted(
                COLLECTION,
                Some(&text),
                path,
                descending,
                cursor.as_deref(),
                limit,
            )
            .await
            .unwrap();
        for (rkey, record) in &page.records {
            assert_eq!(&record.to_json(), &model[rkey]);
            got.push(rkey.clone());
        }
        // Pages that repeat records would never end: past every match,
        // the answer is wrong already.
        assert!(
            got.len() <= want.len(),
            "sort by {path} (descending {descending}, pages of {limit}) where {text}: \
             more records than match: {got:?}"
        );
        match page.cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(
        got.iter().collect::<Vec<_>>(),
        want,
        "sort by {path} (descending {descending}, pages of {limit}) where {text}"
    );
}

/// Whether every value at an integer or datetime index's path is one
/// (a keyword index takes strings and booleans, which `record` always
/// writes there): what a filter with no index cannot tell apart.
fn of_the_indexes_kinds(r: &Value) -> bool {
    ["n", "meta.score"]
        .iter()
        .all(|p| values(r, p).iter().all(|v| v.as_i64().is_some()))
        && values(r, "at")
            .iter()
            .all(|v| DATETIMES.iter().any(|(t, _)| v.as_str() == Some(t)))
        && values(r, "text").iter().all(|v| v.is_string())
}

async fn check_aggregates(
    repo: &Repository<MemoryKv>,
    model: &Model,
    declared: &[(&'static str, IndexKind)],
    q: Option<&Q>,
) {
    let text = q.map(render);
    let matching: Vec<&Value> = model
        .values()
        .filter(|r| q.is_none_or(|q| matches(q, r)))
        .collect();
    for (path, kind) in declared {
        match kind {
            IndexKind::Keyword => {
                let mut counts: BTreeMap<Kw, u64> = BTreeMap::new();
                for r in &matching {
                    let mut ks = keywords(r, path);
                    ks.sort();
                    ks.dedup();
                    for k in ks {
                        *counts.entry(k).or_default() += 1;
                    }
                }
                let mut want: Vec<(Kw, u64)> = counts.into_iter().collect();
                want.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                want.truncate(3);
                let got = repo
                    .top_values(COLLECTION, path, text.as_deref(), 3)
                    .await
                    .unwrap();
                let got: Vec<(Kw, u64)> = got
                    .into_iter()
                    .map(|t| {
                        let k = match t.value {
                            repo::Keyword::Str(s) => Kw::S(s),
                            repo::Keyword::Bool(b) => Kw::B(b),
                        };
                        (k, t.count)
                    })
                    .collect();
                assert_eq!(got, want, "top {path} where {text:?}");
            }
            IndexKind::Integer => {
                let vals: Vec<i64> = matching
                    .iter()
                    .flat_map(|r| numbers(r, path, IndexKind::Integer))
                    .collect();
                let got = repo.stats(COLLECTION, path, text.as_deref()).await.unwrap();
                assert_eq!(
                    got.count,
                    vals.len() as u64,
                    "stats count {path} where {text:?}"
                );
                assert_eq!(
                    got.sum,
                    vals.iter().map(|v| i128::from(*v)).sum::<i128>(),
                    "sum {path}"
                );
                assert_eq!(
                    got.min,
                    vals.iter().min().copied(),
                    "min {path} where {text:?}"
                );
                assert_eq!(
                    got.max,
                    vals.iter().max().copied(),
                    "max {path} where {text:?}"
                );
                // The mean: the exact quotient by long division to 24
                // decimals, read as the nearest double.
                let want = (!vals.is_empty()).then(|| {
                    let sum: i128 = vals.iter().map(|v| i128::from(*v)).sum();
                    let count = vals.len() as u128;
                    let (whole, mut rest) =
                        (sum.unsigned_abs() / count, sum.unsigned_abs() % count);
                    let mut text = format!("{}{whole}.", if sum < 0 { "-" } else { "" });
                    for _ in 0..24 {
                        rest *= 10;
                        text.push(char::from(b'0' + (rest / count) as u8));
                        rest %= count;
                    }
                    text.parse::<f64>().unwrap()
                });
                match (got.avg(), want) {
                    (Some(avg), Some(want)) => assert!(
                        (avg - want).abs() <= 4.0 * f64::EPSILON * want.abs(),
                        "avg {path} where {text:?}: {avg} vs {want}"
                    ),
                    (got, want) => assert_eq!(got, want, "avg {path} where {text:?}"),
                }
            }
            IndexKind::Text => {
                // `--top` of a text index: the most frequent words.
                let mut counts: BTreeMap<String, u64> = BTreeMap::new();
                for r in &matching {
                    let mut ws = text_words(r, path);
                    ws.sort();
                    ws.dedup();
                    for w in ws {
                        *counts.entry(w).or_default() += 1;
                    }
                }
                let mut want: Vec<(String, u64)> = counts.into_iter().collect();
                want.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                want.truncate(3);
                let got: Vec<(String, u64)> = repo
                    .top_values(COLLECTION, path, text.as_deref(), 3)
                    .await
                    .unwrap()
                    .into_iter()
                    .map(|t| match t.value {
                        repo::Keyword::Str(s) => (s, t.count),
                        repo::Keyword::Bool(b) => panic!("a word that is a boolean: {b}"),
                    })
                    .collect();
                assert_eq!(got, want, "top words of {path} where {text:?}");
            }
            IndexKind::Datetime => {}
        }
    }
    check_groups(repo, &matching, declared, text.as_deref()).await;
    check_histograms(repo, &matching, declared, text.as_deref()).await;
}

/// `--histogram` of every declared integer path, with a width giving about
/// 40 buckets over the matching values, against the model: each record
/// counted once in each bucket `[k·w, (k+1)·w)` it has a value in, every
/// bucket from the first to the last (the lowest one's start clamped to
/// the smallest 64-bit integer).
async fn check_histograms(
    repo: &Repository<MemoryKv>,
    matching: &[&Value],
    declared: &[(&'static str, IndexKind)],
    text: Option<&str>,
) {
    for (path, _) in declared.iter().filter(|(_, k)| *k == IndexKind::Integer) {
        let all: Vec<i64> = matching
            .iter()
            .flat_map(|r| numbers(r, path, IndexKind::Integer))
            .collect();
        let (Some(lo), Some(hi)) = (all.iter().min(), all.iter().max()) else {
            continue;
        };
        let span = i128::from(*hi) - i128::from(*lo);
        let width = i64::try_from((span / 40 + 1).max(3)).unwrap_or(i64::MAX);
        let w = i128::from(width);
        let mut counts: BTreeMap<i128, u64> = BTreeMap::new();
        for r in matching {
            let mut starts: Vec<i128> = numbers(r, path, IndexKind::Integer)
                .into_iter()
                .map(|v| i128::from(v).div_euclid(w) * w)
                .collect();
            starts.sort_unstable();
            starts.dedup();
            for s in starts {
                *counts.entry(s).or_default() += 1;
            }
        }
        let (first, last) = (
            *counts.keys().next().unwrap(),
            *counts.keys().next_back().unwrap(),
        );
        let mut want = Vec::new();
        let mut start = first;
        while start <= last {
            let shown = i64::try_from(start.max(i128::from(i64::MIN))).unwrap();
            want.push((shown, counts.get(&start).copied().unwrap_or(0)));
            start += w;
        }
        let (_, buckets) = repo
            .histogram(COLLECTION, path, text, &width.to_string(), None, None)
            .await
            .unwrap();
        let got: Vec<(i64, u64)> = buckets.iter().map(|b| (b.start, b.count)).collect();
        assert_eq!(got, want, "histogram {path} width {width} where {text:?}");
    }
}

/// `--group-by` every declared keyword path (with `--stats` of the first
/// integer one) against the model: each matching record counted in every
/// combination of its values, once.
async fn check_groups(
    repo: &Repository<MemoryKv>,
    matching: &[&Value],
    declared: &[(&'static str, IndexKind)],
    text: Option<&str>,
) {
    let paths: Vec<String> = declared
        .iter()
        .filter(|(_, k)| *k == IndexKind::Keyword)
        .map(|(p, _)| (*p).to_owned())
        .collect();
    if paths.is_empty() {
        return;
    }
    let stats_path = declared
        .iter()
        .find(|(_, k)| *k == IndexKind::Integer)
        .map(|(p, _)| *p);
    let mut model: BTreeMap<Vec<Kw>, (u64, Vec<i64>)> = BTreeMap::new();
    for r in matching {
        let mut combos: Vec<Vec<Kw>> = vec![Vec::new()];
        for p in &paths {
            let mut values = keywords(r, p);
            values.sort();
            values.dedup();
            combos = combos
                .iter()
                .flat_map(|c| {
                    values.iter().map(move |k| {
                        let mut c = c.clone();
                        c.push(k.clone());
                        c
                    })
                })
                .collect();
        }
        for c in combos {
            let entry = model.entry(c).or_default();
            entry.0 += 1;
            if let Some(p) = stats_path {
                entry.1.extend(numbers(r, p, IndexKind::Integer));
            }
        }
    }
    type Summary = (u64, i128, Option<i64>, Option<i64>);
    let mut want: Vec<(Vec<Kw>, u64, Option<Summary>)> = model
        .into_iter()
        .map(|(key, (count, values))| {
            let stats = stats_path.map(|_| {
                (
                    values.len() as u64,
                    values.iter().map(|v| i128::from(*v)).sum(),
                    values.iter().min().copied(),
                    values.iter().max().copied(),
                )
            });
            (key, count, stats)
        })
        .collect();
    want.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let got: Vec<(Vec<Kw>, u64, Option<Summary>)> = repo
        .group_by(COLLECTION, &paths, text, stats_path)
        .await
        .unwrap()
        .into_iter()
        .map(|g| {
            let key = g
                .key
                .into_iter()
                .map(|k| match k {
                    repo::Keyword::Str(s) => Kw::S(s),
                    repo::Keyword::Bool(b) => Kw::B(b),
                })
                .collect();
            let stats = g.stats.map(|s| (s.count, s.sum, s.min, s.max));
            (key, g.count, stats)
        })
        .collect();
    assert_eq!(got, want, "group by {paths:?} where {text:?}");
}

/// `initial` records are written before the first index is added, so its
/// build numbers them all (a build packs its columns 256 to a block).
fn run(seed: u64, ordered_keys: bool, initial: usize) {
    let mut rng = Rng(seed | 1);
    // Unordered keys are drawn from a pool small enough to be reused.
    let pool = 60 + 2 * initial;
    common::rt().block_on(async {
        let repos = common::repos();
        let repo = repos.create(DID).await.unwrap();
        let mut model: Model = BTreeMap::new();
        let mut declared: Vec<(&'static str, IndexKind)> = Vec::new();
        let mut next_key = 0u32;
        let mut key = |rng: &mut Rng| {
            if ordered_keys {
                next_key += 1;
                format!("k{next_key:06}")
            } else {
                format!("k{:04}", rng.below(pool))
            }
        };
        let mut writes = Vec::new();
        while model.len() < initial {
            let rkey = key(&mut rng);
            if model.contains_key(&rkey) {
                continue;
            }
            let value = record(&mut rng);
            writes.push(Write::Create {
                collection: COLLECTION.into(),
                rkey: Some(rkey.clone()),
                value: value.clone(),
            });
            model.insert(rkey, value);
        }
        if !writes.is_empty() {
            repo.apply_writes(writes, None).await.unwrap();
        }
        for step in 0..40 {
            // Indexes come and go, some over records already there.
            if step % 8 == 0 || (step % 5 == 0 && rng.chance(50)) {
                let (path, kind) = rng.pick(&INDEXES);
                if declared.iter().any(|(p, _)| *p == path) {
                    if rng.chance(30) {
                        repo.drop_index(COLLECTION, path).await.unwrap();
                        declared.retain(|(p, _)| *p != path);
                    }
                } else {
                    let n = repo
                        .add_index(COLLECTION, path, kind, |_| {})
                        .await
                        .unwrap();
                    assert_eq!(n, model.len() as u64);
                    declared.push((path, kind));
                }
            }
            let mut writes = Vec::new();
            let mut staged = model.clone();
            for _ in 0..1 + rng.below(4) {
                let existing: Vec<String> = staged.keys().cloned().collect();
                let choice = rng.below(10);
                if choice < 5 || existing.is_empty() {
                    let rkey = key(&mut rng);
                    let value = record(&mut rng);
                    if staged.contains_key(&rkey) {
                        writes.push(Write::Update {
                            collection: COLLECTION.into(),
                            rkey: rkey.clone(),
                            value: value.clone(),
                            swap_record: None,
                        });
                    } else {
                        writes.push(Write::Create {
                            collection: COLLECTION.into(),
                            rkey: Some(rkey.clone()),
                            value: value.clone(),
                        });
                    }
                    staged.insert(rkey, value);
                } else if choice < 8 {
                    let rkey = rng.pick(&existing);
                    let value = record(&mut rng);
                    writes.push(Write::Update {
                        collection: COLLECTION.into(),
                        rkey: rkey.clone(),
                        value: value.clone(),
                        swap_record: None,
                    });
                    staged.insert(rkey, value);
                } else {
                    let rkey = rng.pick(&existing);
                    writes.push(Write::Delete {
                        collection: COLLECTION.into(),
                        rkey: rkey.clone(),
                        swap_record: None,
                    });
                    staged.remove(&rkey);
                }
            }
            repo.apply_writes(writes, None).await.unwrap();
            model = staged;
            if declared.is_empty() {
                continue;
            }
            assert_eq!(
                repo.count(COLLECTION, None).await.unwrap(),
                model.len() as u64
            );
            for _ in 0..4 {
                let q = query(&mut rng, &declared, 2);
                check_query(&repo, &model, &q, &mut rng).await;
            }
            let q = query(&mut rng, &declared, 1);
            check_sorted(&repo, &model, &q, &declared, &mut rng).await;
            let q = query(&mut rng, &declared, 1);
            check_aggregates(
                &repo,
                &model,
                &declared,
                if rng.chance(30) { None } else { Some(&q) },
            )
            .await;
        }
        assert_eq!(
            repo.index_differences().await.unwrap(),
            Vec::<String>::new()
        );
    });
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Record keys in any order: pages are walked by rkey.
    #[test]
    fn queries_match_the_model(seed in any::<u64>()) {
        run(seed, false, 0);
    }

    /// Record keys in creation order (as TIDs are): pages are walked by column.
    #[test]
    fn queries_match_the_model_with_ordered_keys(seed in any::<u64>()) {
        run(seed, true, 0);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2, ..ProptestConfig::default() })]

    /// A build over a collection of several packed column blocks, then
    /// commits that update, delete and create records again around them.
    #[test]
    fn queries_over_a_built_collection_match_the_model(seed in any::<u64>()) {
        run(seed, false, 700);
    }

    /// The same with keys in creation order (pages walked by column).
    #[test]
    fn queries_over_a_built_collection_match_the_model_with_ordered_keys(seed in any::<u64>()) {
        run(seed, true, 700);
    }
}
