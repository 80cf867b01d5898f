//! Reading bitmaps (through the cache) and evaluating queries over them.

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex},
};

use keycodec::records;
use roaring::RoaringBitmap;
use store::Kv;

use crate::{
    cache::{Cached, IndexCache, key, rkeys_key},
    columns::{self, Packed},
    decl::Declared,
    error::{Error, malformed},
    histogram::{Bucket, Interval},
    query::{Cmp, Cond, Expr, Literal, Op, conditions},
    results::{Group, Stats, TopValue},
    rows::{
        BSI_ROWS_PER_SLOT, RowId, SHARD_BITS, decode_column, decode_container, row_range,
        view_range,
    },
    values::{IndexKind, Keyword, datetime_micros},
    words::QueryWord,
};

/// At most this many buckets are counted by comparisons over the
/// bit-sliced rows; more are counted from the values read back.
pub(crate) const RANGED_BUCKETS: usize = 1024;

/// Above this many words, a prefix reads its text index's whole view
/// rather than a row per word.
const PREFIX_ROWS_ONE_BY_ONE: usize = 32;

/// A query, checked against the collection's indexes.
#[derive(Debug, Clone)]
pub enum Plan {
    /// Records any of these match.
    Or(Vec<Plan>),
    /// Records every one of these matches (none when it is empty).
    And(Vec<Plan>),
    /// Live records the plan does not match.
    Not(Box<Plan>),
    /// Records with a value at the path.
    Exists(String),
    /// Records with any of these values at a keyword index's path.
    Keywords(String, Vec<Keyword>),
    /// Records with a value at an integer or datetime index's path that
    /// compares so with the number.
    Compare(String, Cmp, i64),
    /// Records with this word (or, for a prefix, a word with it) at a text
    /// index's path; several words are an [`Plan::And`] of them.
    Word(String, QueryWord),
}

fn no_index(collection: &str, c: &Cond, kind_hint: &str) -> Error {
    Error::InvalidQuery(format!(
        "at position {}: {} has no index in {collection}; add one with `datarepo index add {collection} {} --kind {kind_hint}`",
        c.at, c.path, c.path
    ))
}

fn hint(op: &Op) -> &'static str {
    let lit = match op {
        Op::Compare(_, l) => Some(l),
        Op::In(ls) => ls.first(),
        Op::Exists => None,
        Op::Matches(_) => return "text",
    };
    match (op, lit) {
        (Op::Compare(c, _), _) if !matches!(c, Cmp::Eq | Cmp::Ne) => "integer|datetime",
        (_, Some(Literal::Int(_))) => "integer",
        _ => "keyword",
    }
}

/// Checks `expr` against the indexes of `collection` (`declared`).
pub fn plan(collection: &str, expr: &Expr, declared: &[Declared]) -> Result<Plan, Error> {
    let kinds: HashMap<&str, IndexKind> = declared
        .iter()
        .map(|d| (d.decl.path.as_str(), d.decl.kind))
        .collect();
    // Every condition is checked before any is evaluated.
    for c in conditions(expr) {
        if !kinds.contains_key(c.path.as_str()) {
            return Err(no_index(collection, c, hint(&c.op)));
        }
    }
    to_plan(expr, &kinds)
}

fn literal_error(c: &Cond, kind: IndexKind, lit: &Literal, want: &str) -> Error {
    Error::InvalidQuery(format!(
        "at position {}: {} has {} index, which compares {want}, not {}",
        c.at,
        c.path,
        kind.with_article(),
        lit.type_name()
    ))
}

fn keyword_literal(c: &Cond, lit: &Literal) -> Result<Keyword, Error> {
    match lit {
        Literal::Str(s) => Ok(Keyword::Str(s.clone())),
        Literal::Bool(b) => Ok(Keyword::Bool(*b)),
        Literal::Int(_) => Err(literal_error(
            c,
            IndexKind::Keyword,
            lit,
            "strings and booleans",
        )),
    }
}

fn number_literal(c: &Cond, kind: IndexKind, lit: &Literal) -> Result<i64, Error> {
    match (kind, lit) {
        (IndexKind::Integer, Literal::Int(i)) => Ok(*i),
        (IndexKind::Datetime, Literal::Str(s)) => datetime_micros(s).ok_or_else(|| {
            Error::InvalidQuery(format!(
                "at position {}: {s:?} is not an AT Protocol datetime (e.g. \"2024-01-31T12:00:00Z\"), which the datetime index on {} compares",
                c.at, c.path
            ))
        }),
        (IndexKind::Integer, _) => Err(literal_error(c, kind, lit, "integers")),
        _ => Err(literal_error(c, kind, lit, "datetime strings")),
    }
}

fn to_plan(e: &Expr, kinds: &HashMap<&str, IndexKind>) -> Result<Plan, Error> {
    Ok(match e {
        Expr::Or(items) => Plan::Or(
            items
                .iter()
                .map(|i| to_plan(i, kinds))
                .collect::<Result<_, _>>()?,
        ),
        Expr::And(items) => Plan::And(
            items
                .iter()
                .map(|i| to_plan(i, kinds))
                .collect::<Result<_, _>>()?,
        ),
        Expr::Not(inner) => Plan::Not(Box::new(to_plan(inner, kinds)?)),
        Expr::Cond(c) => {
            let kind = kinds[c.path.as_str()];
            let path = c.path.clone();
            match (&c.op, kind) {
                (Op::Exists, _) => Plan::Exists(path),
                (Op::Matches(words), IndexKind::Text) => match words.as_slice() {
                    [word] => Plan::Word(path, word.clone()),
                    words => Plan::And(
                        words
                            .iter()
                            .map(|w| Plan::Word(path.clone(), w.clone()))
                            .collect(),
                    ),
                },
                (Op::Matches(_), kind) => {
                    return Err(Error::InvalidQuery(format!(
                        "at position {}: {} has {} index; matches needs a text index (datarepo index add <collection> {} --kind text)",
                        c.at,
                        c.path,
                        kind.with_article(),
                        c.path
                    )));
                }
                (_, IndexKind::Text) => {
                    return Err(Error::InvalidQuery(format!(
                        "at position {}: {} has a text index, which answers matches and exists; for = != and in, index it with --kind keyword",
                        c.at, c.path
                    )));
                }
                (Op::Compare(cmp, lit), IndexKind::Keyword) => {
                    let v = keyword_literal(c, lit)?;
                    match cmp {
                        Cmp::Eq => Plan::Keywords(path, vec![v]),
                        Cmp::Ne => Plan::Not(Box::new(Plan::Keywords(path, vec![v]))),
                        other => {
                            return Err(Error::InvalidQuery(format!(
                                "at position {}: {} has a keyword index, which answers = != in and exists, not {}; for ranges, index it with --kind integer or datetime",
                                c.at,
                                c.path,
                                other.symbol()
                            )));
                        }
                    }
                }
                (Op::In(lits), IndexKind::Keyword) => Plan::Keywords(
                    path,
                    lits.iter()
                        .map(|l| keyword_literal(c, l))
                        .collect::<Result<_, _>>()?,
                ),
                (Op::Compare(cmp, lit), kind) => {
                    let v = number_literal(c, kind, lit)?;
                    match cmp {
                        Cmp::Ne => Plan::Not(Box::new(Plan::Compare(path, Cmp::Eq, v))),
                        cmp => Plan::Compare(path, *cmp, v),
                    }
                }
                (Op::In(lits), kind) => Plan::Or(
                    lits.iter()
                        .map(|l| {
                            Ok(Plan::Compare(
                                path.clone(),
                                Cmp::Eq,
                                number_literal(c, kind, l)?,
                            ))
                        })
                        .collect::<Result<_, Error>>()?,
                ),
            }
        }
    })
}

/// Columns a plan matched, read as a [`RoaringBitmap`]: a row shared with
/// the cache (no copy), or bitmaps computed for this query.
pub struct Matches(Bits);

impl std::ops::Deref for Matches {
    type Target = RoaringBitmap;

    fn deref(&self) -> &RoaringBitmap {
        self.0.get()
    }
}

impl Matches {
    /// The columns as a bitmap of their own (a copy when shared).
    #[must_use]
    pub fn into_owned(self) -> RoaringBitmap {
        self.0.into_owned()
    }
}

enum Bits {
    /// A cached [`Cached::Row`].
    Shared(Arc<Cached>),
    Owned(RoaringBitmap),
}

impl Bits {
    fn get(&self) -> &RoaringBitmap {
        static EMPTY: std::sync::LazyLock<RoaringBitmap> =
            std::sync::LazyLock::new(RoaringBitmap::new);
        match self {
            Self::Shared(cached) => match &**cached {
                Cached::Row(b) => b,
                Cached::View(_) | Cached::Rkeys(_) => &EMPTY,
            },
            Self::Owned(b) => b,
        }
    }

    fn into_owned(self) -> RoaringBitmap {
        match self {
            Self::Shared(_) => self.get().clone(),
            Self::Owned(b) => b,
        }
    }
}

/// `row ∩ within`; `within` itself when `row` holds every column from
/// `within`'s first to its last (a row every record is in is one run, and
/// roaring intersects a run with a bitmap by first making it a bitmap).
fn among(row: &RoaringBitmap, within: &RoaringBitmap) -> RoaringBitmap {
    if let (Some(first), Some(last), Some(lo), Some(hi)) =
        (row.min(), row.max(), within.min(), within.max())
        && first <= lo
        && hi <= last
        && row.len() == u64::from(last - first) + 1
    {
        return within.clone();
    }
    row & within
}

/// Whether a plan is one cached row (its columns need no computing).
fn is_row(plan: &Plan) -> bool {
    match plan {
        Plan::Exists(_) => true,
        Plan::Keywords(_, values) => values.len() == 1,
        Plan::Word(_, word) => matches!(word, QueryWord::Whole(_)),
        Plan::Or(_) | Plan::And(_) | Plan::Not(_) | Plan::Compare(..) => false,
    }
}

/// The columns a page's first window evaluates its plan over: a sixteenth
/// of a roaring container, so that a page of common matches intersects a
/// few hundred words of each row, and one of rare matches reaches the
/// whole collection in at most a dozen windows.
const FIRST_WINDOW: u32 = 1 << 12;

/// Reads one scope's bitmaps, through the cache.
pub struct Reader<'a, K> {
    /// The store.
    pub kv: &'a K,
    /// The repository's index cache.
    pub cache: &'a Mutex<IndexCache>,
    /// The scope read.
    pub scope: u32,
    shards: std::sync::OnceLock<u64>,
    packed: std::sync::OnceLock<Arc<Packed>>,
}

fn lock(cache: &Mutex<IndexCache>) -> std::sync::MutexGuard<'_, IndexCache> {
    cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl<'a, K: Kv> Reader<'a, K> {
    /// A reader of `scope`.
    pub fn new(kv: &'a K, cache: &'a Mutex<IndexCache>, scope: u32) -> Self {
        Self {
            kv,
            cache,
            scope,
            shards: std::sync::OnceLock::new(),
            packed: std::sync::OnceLock::new(),
        }
    }

    /// The scope's packed column mapping, read once per head.
    pub async fn packed(&self) -> Result<Arc<Packed>, Error> {
        if let Some(p) = self.packed.get() {
            return Ok(Arc::clone(p));
        }
        if let Some(p) = lock(self.cache).packed(self.scope) {
            return Ok(Arc::clone(self.packed.get_or_init(|| p)));
        }
        let p = Arc::new(columns::load_packed(self.kv, self.scope).await?);
        lock(self.cache).set_packed(self.scope, Arc::clone(&p));
        Ok(Arc::clone(self.packed.get_or_init(|| p)))
    }

    /// Shards in use: one past the highest live column's (or more, see
    /// [`IndexCache`]), read once per head (a reverse scan costs a few
    /// hundred microseconds even from a warm store).
    async fn shards(&self) -> Result<u64, Error> {
        if let Some(n) = self.shards.get() {
            return Ok(*n);
        }
        if let Some(n) = lock(self.cache).shards(self.scope) {
            return Ok(*self.shards.get_or_init(|| n));
        }
        // Single entries, when any, hold the highest columns (a build's
        // packed ones are given out first).
        let (single, packed) = futures::future::join(
            columns::max_single_column(self.kv, self.scope),
            self.packed(),
        )
        .await;
        let n = single?
            .max(packed?.columns.checked_sub(1))
            .map_or(0, |max| (max >> SHARD_BITS) + 1);
        lock(self.cache).set_shards(self.scope, n);
        Ok(*self.shards.get_or_init(|| n))
    }

    /// One row.
    pub async fn row(&self, row: &RowId) -> Result<Arc<Cached>, Error> {
        let k = key(self.scope, row, false);
        if let Some(hit) = lock(self.cache).get(&k) {
            return Ok(hit);
        }
        let mut bits = RoaringBitmap::new();
        for shard in 0..self.shards().await? {
            for (key, value) in self
                .kv
                .scan(&row_range(self.scope, row, shard)?, false, usize::MAX)
                .await?
            {
                for (_, set) in decode_container(&key, &value)? {
                    bits |= set;
                }
            }
        }
        Ok(lock(self.cache).insert(k, Cached::Row(bits)))
    }

    /// Every row of a view.
    pub async fn view(&self, field: &str, view: &str) -> Result<Arc<Cached>, Error> {
        let probe = RowId {
            field: field.to_owned(),
            view: view.to_owned(),
            row: 0,
        };
        let k = key(self.scope, &probe, true);
        if let Some(hit) = lock(self.cache).get(&k) {
            return Ok(hit);
        }
        let mut rows: BTreeMap<u64, RoaringBitmap> = BTreeMap::new();
        for shard in 0..self.shards().await? {
            for (key, value) in self
                .kv
                .scan(
                    &view_range(self.scope, field, view, shard)?,
                    false,
                    usize::MAX,
                )
                .await?
            {
                for (row, bits) in decode_container(&key, &value)? {
                    *rows.entry(row.row).or_default() |= bits;
                }
            }
        }
        Ok(lock(self.cache).insert(k, Cached::View(rows)))
    }

    async fn row_bits(&self, row: &RowId) -> Result<RoaringBitmap, Error> {
        Ok(match &*self.row(row).await? {
            Cached::Row(b) => b.clone(),
            Cached::View(_) | Cached::Rkeys(_) => RoaringBitmap::new(),
        })
    }

    /// Columns whose rkey sorts before an older column's (so that column
    /// order is not rkey order); empty when the two orders agree.
    pub async fn out_of_order(&self) -> Result<RoaringBitmap, Error> {
        let mut row = RowId::columns();
        row.row = 1;
        self.row_bits(&row).await
    }

    /// The dictionary row of a keyword value.
    async fn keyword_row(&self, path: &str, v: &Keyword) -> Result<Option<u64>, Error> {
        if let Some(row) = lock(self.cache).row_of(self.scope, path, v) {
            return Ok(Some(row));
        }
        match self
            .kv
            .get(&records::keyword_row_key(self.scope, path, &v.tagged()))
            .await?
        {
            Some(bytes) => {
                let row = u64::from(decode_column(&bytes)?);
                lock(self.cache).set_row_of(self.scope, path, v.clone(), row);
                Ok(Some(row))
            }
            None => Ok(None),
        }
    }

    /// The records having one word of a text index (among `within`, when
    /// given): its row, or for a prefix the union of the rows of the
    /// dictionary's words with it.
    async fn word(
        &self,
        path: &str,
        w: &QueryWord,
        within: Option<&RoaringBitmap>,
    ) -> Result<Bits, Error> {
        match w {
            QueryWord::Whole(word) => Ok(
                match self.keyword_row(path, &Keyword::Str(word.clone())).await? {
                    Some(row) => self.row_within(&RowId::keyword(path, row), within).await?,
                    None => Bits::Owned(RoaringBitmap::new()),
                },
            ),
            QueryWord::Prefix(prefix) => {
                let tagged = Keyword::Str(prefix.clone()).tagged();
                let range = records::keyword_rows_with_prefix(self.scope, path, &tagged);
                let rows = self
                    .kv
                    .scan(&range, false, usize::MAX)
                    .await?
                    .iter()
                    .map(|(_, row)| decode_column(row).map(u64::from))
                    .collect::<Result<Vec<u64>, _>>()?;
                let mut out = RoaringBitmap::new();
                if rows.len() <= PREFIX_ROWS_ONE_BY_ONE {
                    for row in rows {
                        out |= self
                            .row_within(&RowId::keyword(path, row), within)
                            .await?
                            .get();
                    }
                } else {
                    // Many words: the index's whole view in one scan (and
                    // cached) costs less than a scan per word.
                    let r = RowId::keyword(path, 0);
                    let view = self.view(&r.field, &r.view).await?;
                    let Cached::View(all) = &*view else {
                        return Err(malformed("a text index's view cached as a row"));
                    };
                    for row in rows {
                        if let Some(bits) = all.get(&row) {
                            match within {
                                Some(within) => out |= bits & within,
                                None => out |= bits,
                            }
                        }
                    }
                }
                Ok(Bits::Owned(out))
            }
        }
    }

    /// Evaluates a plan to the matching columns (a row the plan is alone
    /// shared with the cache, not copied).
    ///
    /// # Errors
    ///
    /// A storage error, or [`Error::Malformed`] for rows that do not decode.
    pub async fn eval(&self, plan: &Plan) -> Result<Matches, Error> {
        Ok(Matches(self.bits(plan, None).await?))
    }

    /// The collection's live columns, shared with the cache.
    ///
    /// # Errors
    ///
    /// As [`Reader::eval`].
    pub async fn all(&self) -> Result<Matches, Error> {
        Ok(Matches(self.row_within(&RowId::columns(), None).await?))
    }

    /// How many columns match the plan: [`Reader::eval`]'s length, with
    /// the last of a conjunction's rows counted against the others rather
    /// than intersected with them.
    ///
    /// # Errors
    ///
    /// As [`Reader::eval`].
    pub async fn count(&self, plan: &Plan) -> Result<u64, Error> {
        match plan {
            Plan::And(items)
                if let Some((last, rest)) = items.split_last()
                    && !rest.is_empty()
                    && is_row(last) =>
            {
                let rest = self.all_of(rest, None).await?;
                let last = self.bits(last, None).await?;
                Ok(rest.get().intersection_len(last.get()))
            }
            _ => Ok(self.bits(plan, None).await?.get().len()),
        }
    }

    /// Up to `limit` columns matching `plan` (every live column without
    /// one) in column order, descending when `reverse`, from the column of
    /// `cursor`'s rkey on (or of the first rkey after it, before it when
    /// `reverse`), the cursor's own column left out: a page when column
    /// order is rkey order. The plan is evaluated a window of columns at a
    /// time, from [`FIRST_WINDOW`] columns growing fourfold, so a first
    /// page computes a sliver of the matches, not all of them.
    ///
    /// # Errors
    ///
    /// As [`Reader::eval`].
    pub async fn first_columns(
        &self,
        plan: Option<&Plan>,
        cursor: Option<&str>,
        reverse: bool,
        limit: usize,
    ) -> Result<Vec<u32>, Error> {
        let all = self.row_within(&RowId::columns(), None).await?;
        let all = all.get();
        let (Some(min), Some(max)) = (all.min(), all.max()) else {
            return Ok(Vec::new());
        };
        let (from, skip) = match cursor {
            Some(c) => match self.column_near(c, reverse).await? {
                Some((from, exact)) => (from, exact.then_some(from)),
                None => return Ok(Vec::new()),
            },
            None if reverse => (max, None),
            None => (min, None),
        };
        // Past the last column in the page's direction: nothing follows.
        if (reverse && from < min) || (!reverse && from > max) {
            return Ok(Vec::new());
        }
        let from = if reverse {
            from.min(max)
        } else {
            from.max(min)
        };
        let mut out = Vec::with_capacity(limit.min(1 << 16));
        let take = |bits: &RoaringBitmap, lo: u32, hi: u32, out: &mut Vec<u32>| {
            let mut it = bits.range(lo..=hi);
            while out.len() < limit {
                let next = if reverse { it.next_back() } else { it.next() };
                match next {
                    Some(c) if Some(c) == skip => {}
                    Some(c) => out.push(c),
                    None => break,
                }
            }
        };
        let Some(plan) = plan else {
            let (lo, hi) = if reverse { (min, from) } else { (from, max) };
            take(all, lo, hi, &mut out);
            return Ok(out);
        };
        let (mut from, mut span) = (from, FIRST_WINDOW);
        loop {
            let (lo, hi) = if reverse {
                (from.saturating_sub(span - 1).max(min), from)
            } else {
                (from, from.saturating_add(span - 1).min(max))
            };
            let mut window = RoaringBitmap::new();
            window.insert_range(lo..=hi);
            let bits = self.bits(plan, Some(&window)).await?;
            take(bits.get(), lo, hi, &mut out);
            let next = if reverse {
                lo.checked_sub(1)
            } else {
                hi.checked_add(1)
            };
            match next {
                Some(next) if out.len() < limit && (min..=max).contains(&next) => from = next,
                _ => return Ok(out),
            }
            span = span.saturating_mul(4);
        }
    }

    /// A row as [`Bits`]: shared with the cache, or cut to `within`.
    async fn row_within(&self, row: &RowId, within: Option<&RoaringBitmap>) -> Result<Bits, Error> {
        let cached = self.row(row).await?;
        Ok(match (within, &*cached) {
            (None, Cached::Row(_)) => Bits::Shared(cached),
            (Some(within), Cached::Row(b)) => Bits::Owned(b & within),
            (_, Cached::View(_) | Cached::Rkeys(_)) => Bits::Owned(RoaringBitmap::new()),
        })
    }

    /// The columns of every plan in `items` (none when there are none),
    /// each evaluated only over the columns the ones before it left.
    async fn all_of(&self, items: &[Plan], within: Option<&RoaringBitmap>) -> Result<Bits, Error> {
        let mut acc: Option<Bits> = None;
        for item in items {
            let next = {
                let limit = acc.as_ref().map_or(within, |a| Some(a.get()));
                self.bits(item, limit).await?
            };
            if next.get().is_empty() {
                return Ok(next);
            }
            acc = Some(next);
        }
        Ok(acc.unwrap_or(Bits::Owned(RoaringBitmap::new())))
    }

    /// The plan's columns (among `within`, when given).
    fn bits<'b>(
        &'b self,
        plan: &'b Plan,
        within: Option<&'b RoaringBitmap>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Bits, Error>> + Send + 'b>>
    where
        K: Kv,
    {
        Box::pin(async move {
            Ok(match plan {
                Plan::Or(items) => {
                    let mut out = RoaringBitmap::new();
                    for i in items {
                        out |= self.bits(i, within).await?.get();
                    }
                    Bits::Owned(out)
                }
                Plan::And(items) => self.all_of(items, within).await?,
                Plan::Not(inner) => {
                    let all = self.row_within(&RowId::columns(), within).await?;
                    let inner = self.bits(inner, within).await?;
                    Bits::Owned(all.get() - inner.get())
                }
                Plan::Exists(path) => self.row_within(&RowId::existence(path), within).await?,
                Plan::Keywords(path, values) => {
                    let mut rows = Vec::with_capacity(values.len());
                    for v in values {
                        if let Some(row) = self.keyword_row(path, v).await? {
                            rows.push(row);
                        }
                    }
                    match rows.as_slice() {
                        [row] => self.row_within(&RowId::keyword(path, *row), within).await?,
                        rows => {
                            let mut out = RoaringBitmap::new();
                            for row in rows {
                                out |= self
                                    .row_within(&RowId::keyword(path, *row), within)
                                    .await?
                                    .get();
                            }
                            Bits::Owned(out)
                        }
                    }
                }
                Plan::Word(path, word) => self.word(path, word, within).await?,
                Plan::Compare(path, cmp, v) => {
                    // A comparison is CPU over cached rows: let other tasks
                    // (and a caller's deadline) in between them.
                    tokio::task::yield_now().await;
                    let view = self.bsi(path).await?;
                    let Cached::View(rows) = &*view else {
                        return Err(malformed("a bit-sliced view cached as a row"));
                    };
                    let mut out = RoaringBitmap::new();
                    for slot in 0..slots(rows) {
                        out |= Slot::new(rows, slot).compare(*cmp, *v, within);
                    }
                    Bits::Owned(out)
                }
            })
        })
    }

    async fn bsi(&self, path: &str) -> Result<Arc<Cached>, Error> {
        let r = RowId::bsi(path, 0);
        self.view(&r.field, &r.view).await
    }

    /// `--stats` over the integer index at `path` for the columns `within`.
    pub async fn stats(&self, path: &str, within: &RoaringBitmap) -> Result<Stats, Error> {
        let view = self.bsi(path).await?;
        let Cached::View(rows) = &*view else {
            return Err(malformed("a bit-sliced view cached as a row"));
        };
        let mut stats = Stats::default();
        for slot in 0..slots(rows) {
            let s = Slot::new(rows, slot);
            let pos = &(s.exists - s.sign) & within;
            let neg = &(s.exists & s.sign) & within;
            stats.count += pos.len() + neg.len();
            for i in 0..64 {
                let bit = s.bit(i);
                if bit.is_empty() {
                    continue;
                }
                let weight = 1i128 << i;
                stats.sum += weight * i128::from(bit.intersection_len(&pos));
                stats.sum -= weight * i128::from(bit.intersection_len(&neg));
            }
            for (value, is_max) in [
                (s.extreme(&pos, &neg, true), true),
                (s.extreme(&pos, &neg, false), false),
            ] {
                let Some(value) = value else { continue };
                let slot_best = if is_max {
                    &mut stats.max
                } else {
                    &mut stats.min
                };
                *slot_best = Some(match *slot_best {
                    None => value,
                    Some(b) if is_max => b.max(value),
                    Some(b) => b.min(value),
                });
            }
        }
        Ok(stats)
    }

    /// Every value of the integer or datetime index at `path` held by the
    /// columns `within`, as (column, value) in slot order (a column with
    /// several values appears once per value): the bit-sliced rows read
    /// back, no record read.
    pub async fn values(
        &self,
        path: &str,
        within: &RoaringBitmap,
    ) -> Result<Vec<(u32, i64)>, Error> {
        let view = self.bsi(path).await?;
        let Cached::View(rows) = &*view else {
            return Err(malformed("a bit-sliced view cached as a row"));
        };
        let mut out = Vec::new();
        for slot in 0..slots(rows) {
            tokio::task::yield_now().await;
            let s = Slot::new(rows, slot);
            let present = s.exists & within;
            if present.is_empty() {
                continue;
            }
            let columns: Vec<u32> = present.iter().collect();
            let mut magnitudes = vec![0u64; columns.len()];
            for (i, bit) in s.bits() {
                if columns.len() <= FEW_COLUMNS {
                    // A page's few columns: a lookup each beats building
                    // an intersection per bit.
                    for (m, column) in magnitudes.iter_mut().zip(&columns) {
                        if bit.contains(*column) {
                            *m |= 1 << i;
                        }
                    }
                    continue;
                }
                for column in bit & &present {
                    // `rank` counts the columns up to and including this one.
                    let at = usize::try_from(present.rank(column) - 1).unwrap_or(usize::MAX);
                    if let Some(m) = magnitudes.get_mut(at) {
                        *m |= 1 << i;
                    }
                }
            }
            let negative = s.sign & &present;
            for (column, magnitude) in columns.into_iter().zip(magnitudes) {
                let value = if negative.contains(column) {
                    // i64::MIN's magnitude does not fit an i64.
                    0i64.wrapping_sub_unsigned(magnitude)
                } else {
                    magnitude.cast_signed()
                };
                out.push((column, value));
            }
        }
        Ok(out)
    }

    /// The columns of `within` with some value at the integer or datetime
    /// index `path` past `v` (greater when `descending`, else less), and of
    /// the rest those with a value equal to it: both from one pass over
    /// each slot's rows (a sorted page after its cursor).
    pub async fn past_and_tied(
        &self,
        path: &str,
        v: i64,
        descending: bool,
        within: &RoaringBitmap,
    ) -> Result<(RoaringBitmap, RoaringBitmap), Error> {
        let view = self.bsi(path).await?;
        let Cached::View(rows) = &*view else {
            return Err(malformed("a bit-sliced view cached as a row"));
        };
        let (mut past, mut tied) = (RoaringBitmap::new(), RoaringBitmap::new());
        for slot in 0..slots(rows) {
            let (lt, eq, gt) = Slot::new(rows, slot).split(v, Some(within));
            past |= if descending { gt } else { lt };
            tied |= eq;
        }
        tied -= &past;
        Ok((past, tied))
    }

    /// The columns of `within` with a value at `path`.
    pub async fn existing_columns(
        &self,
        path: &str,
        within: &RoaringBitmap,
    ) -> Result<RoaringBitmap, Error> {
        Ok(self
            .row_within(&RowId::existence(path), Some(within))
            .await?
            .into_owned())
    }

    /// A superset of the `k` columns of `within` first in the order of
    /// their best value at the integer or datetime index `path` (the
    /// largest when `descending`, else the smallest), holding every column
    /// whose best value is at least as good as the `k`-th's: the union over
    /// slots of each slot's first `k` with ties, found by walking the
    /// bit-sliced rows from the top bit and narrowing the candidates
    /// (O'Neil's top-k over a bit-sliced index, as FeatureBase does); no
    /// value is read back.
    pub async fn top_columns(
        &self,
        path: &str,
        within: &RoaringBitmap,
        k: u64,
        descending: bool,
    ) -> Result<RoaringBitmap, Error> {
        let view = self.bsi(path).await?;
        let Cached::View(rows) = &*view else {
            return Err(malformed("a bit-sliced view cached as a row"));
        };
        let mut out = RoaringBitmap::new();
        for slot in 0..slots(rows) {
            tokio::task::yield_now().await;
            out |= Slot::new(rows, slot).first(within, k, descending);
        }
        Ok(out)
    }

    /// [`Reader::top_columns`] in two, for an index with one value per
    /// record (one slot): the columns whose value comes before the `k`-th's
    /// (at most `k`), and every column whose value is the `k`-th's. `None`
    /// when some record has several values at `path`, where each slot's
    /// ties are at a value of their own.
    pub async fn top_columns_split(
        &self,
        path: &str,
        within: &RoaringBitmap,
        k: u64,
        descending: bool,
    ) -> Result<Option<(RoaringBitmap, RoaringBitmap)>, Error> {
        let view = self.bsi(path).await?;
        let Cached::View(rows) = &*view else {
            return Err(malformed("a bit-sliced view cached as a row"));
        };
        Ok(match slots(rows) {
            0 => Some((RoaringBitmap::new(), RoaringBitmap::new())),
            1 => Some(Slot::new(rows, 0).first_split(within, k, descending)),
            _ => None,
        })
    }

    /// The keyword index at `path`'s rows in value order: (value, row),
    /// from the dictionary's keys, which sort by value.
    pub async fn rows_in_value_order(&self, path: &str) -> Result<Vec<(Keyword, u64)>, Error> {
        let range = records::scope_range(records::RecordType::KeywordRow, self.scope, Some(path));
        let mut out = Vec::new();
        for (k, v) in self.kv.scan(&range, false, usize::MAX).await? {
            let Ok(records::DecodedKey::KeywordRow { value, .. }) = records::decode_key(&k) else {
                return Err(malformed("a keyword-row key does not decode"));
            };
            let value = Keyword::from_tagged(&value)
                .ok_or_else(|| malformed(format!("a keyword of {path} does not decode")))?;
            out.push((value, u64::from(decode_column(&v)?)));
        }
        Ok(out)
    }

    /// The columns holding dictionary row `row` of the keyword index at
    /// `path`.
    pub async fn keyword_columns(&self, path: &str, row: u64) -> Result<RoaringBitmap, Error> {
        self.row_bits(&RowId::keyword(path, row)).await
    }

    /// `--histogram` of the integer or datetime index at `path` over the
    /// columns `within` (as [`crate::histogram`] buckets values). With one
    /// value per record and at most `RANGED_BUCKETS` (1,024) buckets, each
    /// bucket's count is the difference of two "at least" comparisons over
    /// the bit-sliced rows (about 64 bitmap operations a boundary, no value
    /// read back); otherwise every value is read back and bucketed.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidQuery`] past [`crate::MAX_BUCKETS`] buckets.
    pub async fn histogram(
        &self,
        path: &str,
        within: &RoaringBitmap,
        interval: Interval,
        from: Option<i64>,
        to: Option<i64>,
    ) -> Result<Vec<Bucket>, Error> {
        let view = self.bsi(path).await?;
        let Cached::View(rows) = &*view else {
            return Err(malformed("a bit-sliced view cached as a row"));
        };
        if slots(rows) <= 1 {
            let slot = Slot::new(rows, 0);
            let at_least = |bound: i128| -> RoaringBitmap {
                match i64::try_from(bound) {
                    Ok(b) => slot.compare(Cmp::Ge, b, Some(within)),
                    Err(_) if bound < 0 => slot.exists & within,
                    Err(_) => RoaringBitmap::new(),
                }
            };
            let mut present = slot.exists & within;
            if let Some(f) = from {
                present &= at_least(i128::from(f));
            }
            if let Some(t) = to {
                present -= at_least(i128::from(t));
            }
            let negative = &present & slot.sign;
            let positive = &present - &negative;
            let first = match from {
                Some(f) => interval.start(f),
                None => slot
                    .extreme(&positive, &negative, false)
                    .and_then(|m| interval.start(m)),
            };
            let last = match to {
                Some(t) => t.checked_sub(1).and_then(|t| interval.start(t)),
                None => slot
                    .extreme(&positive, &negative, true)
                    .and_then(|m| interval.start(m)),
            };
            let (Some(first), Some(last)) = (first, last) else {
                return Ok(Vec::new());
            };
            let mut starts = vec![first];
            while starts.len() <= RANGED_BUCKETS {
                match starts.last().and_then(|s| interval.next(*s)) {
                    Some(next) if next <= last => starts.push(next),
                    _ => break,
                }
            }
            if starts.len() <= RANGED_BUCKETS {
                let mut out = Vec::with_capacity(starts.len());
                let mut above = present.len();
                for s in &starts {
                    tokio::task::yield_now().await;
                    let end = interval.next(*s);
                    let beyond = end.map_or(0, |e| (at_least(e) & &present).len());
                    out.push(Bucket {
                        start: i64::try_from((*s).max(i128::from(i64::MIN))).unwrap_or(i64::MAX),
                        count: above - beyond,
                    });
                    above = beyond;
                }
                return Ok(out);
            }
        }
        let values = self.values(path, within).await?;
        crate::histogram::histogram(&values, interval, from, to).map_err(Error::InvalidQuery)
    }

    /// Every value of the keyword index at `path` held by the columns
    /// `within`, as (column, value) (a column with several values appears
    /// once per value).
    pub async fn keyword_values(
        &self,
        path: &str,
        within: &RoaringBitmap,
    ) -> Result<Vec<(u32, Keyword)>, Error> {
        let r = RowId::keyword(path, 0);
        let view = self.view(&r.field, &r.view).await?;
        let Cached::View(rows) = &*view else {
            return Err(malformed("a keyword view cached as a row"));
        };
        let names = self.dictionary(path).await?;
        let mut out = Vec::new();
        for (row, bits) in rows {
            let value = names
                .get(row)
                .ok_or_else(|| malformed(format!("row {row} of {path} has no dictionary value")))?;
            for column in bits & within {
                out.push((column, value.clone()));
            }
        }
        Ok(out)
    }

    /// The keyword index at `path`'s dictionary: each row's value.
    async fn dictionary(&self, path: &str) -> Result<HashMap<u64, Keyword>, Error> {
        let mut names: HashMap<u64, Keyword> = HashMap::new();
        let range = records::scope_range(records::RecordType::KeywordValue, self.scope, Some(path));
        for (k, v) in self.kv.scan(&range, false, usize::MAX).await? {
            let Ok(records::DecodedKey::KeywordValue { row, .. }) = records::decode_key(&k) else {
                return Err(malformed("a keyword-value key does not decode"));
            };
            let value = Keyword::from_tagged(&v)
                .ok_or_else(|| malformed(format!("keyword value of row {row} in {path}")))?;
            names.insert(row, value);
        }
        Ok(names)
    }

    /// `--group-by`: each combination of values at `paths` (keyword
    /// indexes) that some columns of `within` have, with how many
    /// (a column with several values at a path is in each of their
    /// groups) and, with `stats_path` (an integer index), the stats of
    /// its values over them; by count descending, then by key.
    pub async fn groups(
        &self,
        paths: &[String],
        within: &RoaringBitmap,
        stats_path: Option<&str>,
    ) -> Result<Vec<Group>, Error> {
        let mut groups: Vec<(Vec<Keyword>, RoaringBitmap)> = vec![(Vec::new(), within.clone())];
        for path in paths {
            let r = RowId::keyword(path, 0);
            let view = self.view(&r.field, &r.view).await?;
            let Cached::View(rows) = &*view else {
                return Err(malformed("a keyword view cached as a row"));
            };
            let names = self.dictionary(path).await?;
            let mut next = Vec::new();
            for (key, bits) in &groups {
                for (row, values) in rows {
                    let both = bits & values;
                    if both.is_empty() {
                        continue;
                    }
                    let value = names.get(row).cloned().ok_or_else(|| {
                        malformed(format!("row {row} of {path} has no dictionary value"))
                    })?;
                    let mut key = key.clone();
                    key.push(value);
                    next.push((key, both));
                }
            }
            groups = next;
        }
        let mut out = Vec::with_capacity(groups.len());
        for (key, bits) in groups {
            let stats = match stats_path {
                Some(p) => Some(self.stats(p, &bits).await?),
                None => None,
            };
            out.push(Group {
                key,
                count: bits.len(),
                stats,
            });
        }
        out.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.key.cmp(&b.key)));
        Ok(out)
    }

    /// `--top`: the `limit` most frequent values at `path` among `within`.
    pub async fn top(
        &self,
        path: &str,
        within: &RoaringBitmap,
        limit: usize,
    ) -> Result<Vec<TopValue>, Error> {
        let r = RowId::keyword(path, 0);
        let view = self.view(&r.field, &r.view).await?;
        let Cached::View(rows) = &*view else {
            return Err(malformed("a keyword view cached as a row"));
        };
        let mut counted: Vec<(u64, u64)> = rows
            .iter()
            .map(|(row, bits)| (*row, bits.intersection_len(within)))
            .filter(|(_, n)| *n > 0)
            .collect();
        // The dictionary names each counted row.
        let names = self.dictionary(path).await?;
        let mut out = Vec::with_capacity(counted.len());
        for (row, count) in counted.drain(..) {
            let value = names
                .get(&row)
                .cloned()
                .ok_or_else(|| malformed(format!("row {row} of {path} has no dictionary value")))?;
            out.push(TopValue { value, count });
        }
        out.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.value.cmp(&b.value)));
        out.truncate(limit);
        Ok(out)
    }

    /// The rkeys of `columns` (every one must have a record), reading each
    /// packed block once and keeping it in the cache.
    pub async fn rkeys(&self, columns: &[u32]) -> Result<Vec<String>, Error> {
        let packed = self.packed().await?;
        let places: Vec<columns::Place> = columns
            .iter()
            .map(|c| columns::place(&packed, *c))
            .collect();
        // A page's columns are in order, so its blocks come in runs: a
        // few, found by a look at the last.
        let mut blocks: Vec<(u64, Arc<Cached>)> = Vec::new();
        let mut missing: Vec<u64> = Vec::new();
        {
            let mut cache = lock(self.cache);
            for place in &places {
                if let columns::Place::Packed(k, _) = *place
                    && !blocks.iter().rev().any(|(b, _)| *b == k)
                    && !missing.contains(&k)
                {
                    match cache.get(&rkeys_key(self.scope, k)) {
                        Some(hit) => blocks.push((k, hit)),
                        None => missing.push(k),
                    }
                }
            }
        }
        let fetched = futures::future::try_join_all(
            missing
                .iter()
                .map(|k| columns::block(self.kv, self.scope, *k)),
        )
        .await?;
        for (k, rkeys) in missing.into_iter().zip(fetched) {
            let cached = lock(self.cache).insert(rkeys_key(self.scope, k), Cached::Rkeys(rkeys));
            blocks.push((k, cached));
        }
        // Columns given out one at a time (after the last build) have a
        // key each; most pages have none.
        let mut singles = futures::future::try_join_all(
            columns
                .iter()
                .zip(&places)
                .filter(|(_, place)| matches!(place, columns::Place::Single))
                .map(|(c, _)| columns::single_rkey(self.kv, self.scope, *c)),
        )
        .await?
        .into_iter();
        let mut out = Vec::with_capacity(columns.len());
        let mut last: Option<(u64, &columns::RkeyList)> = None;
        for (c, place) in columns.iter().zip(places) {
            let rkey = match place {
                columns::Place::Packed(k, i) => {
                    let rkeys = match last {
                        Some((b, rkeys)) if b == k => Some(rkeys),
                        _ => blocks
                            .iter()
                            .find(|(b, _)| *b == k)
                            .and_then(|(_, cached)| match &**cached {
                                Cached::Rkeys(rkeys) => Some(rkeys),
                                Cached::Row(_) | Cached::View(_) => None,
                            }),
                    };
                    last = rkeys.map(|r| (k, r));
                    rkeys.and_then(|r| r.get(i)).map(str::to_owned)
                }
                columns::Place::Single => singles.next().flatten(),
            };
            out.push(rkey.ok_or_else(|| {
                malformed(format!("column {c} of scope {} has no rkey", self.scope))
            })?);
        }
        Ok(out)
    }

    /// The column of `rkey`, or of the first rkey after (`reverse`: before)
    /// it, and whether that is `rkey` itself.
    pub async fn column_near(
        &self,
        rkey: &str,
        reverse: bool,
    ) -> Result<Option<(u32, bool)>, Error> {
        let packed = self.packed().await?;
        columns::near(self.kv, self.scope, &packed, rkey, reverse).await
    }
}

fn slots(rows: &BTreeMap<u64, RoaringBitmap>) -> u64 {
    rows.keys()
        .next_back()
        .map_or(0, |r| r / BSI_ROWS_PER_SLOT + 1)
}

/// How many columns [`Reader::values`] reads by a lookup per column and
/// bit rather than by intersecting each bit row with them.
const FEW_COLUMNS: usize = 256;

/// One slot of a bit-sliced index.
struct Slot<'a> {
    rows: &'a BTreeMap<u64, RoaringBitmap>,
    base: u64,
    exists: &'a RoaringBitmap,
    sign: &'a RoaringBitmap,
}

static EMPTY: std::sync::LazyLock<RoaringBitmap> = std::sync::LazyLock::new(RoaringBitmap::new);

impl<'a> Slot<'a> {
    fn new(rows: &'a BTreeMap<u64, RoaringBitmap>, slot: u64) -> Self {
        let base = slot * BSI_ROWS_PER_SLOT;
        let get = |r: u64| rows.get(&(base + r)).unwrap_or(&EMPTY);
        Self {
            rows,
            base,
            exists: get(0),
            sign: get(1),
        }
    }

    /// The bit rows this slot has, `(bit, row)`, lowest bit first.
    fn bits(&self) -> impl Iterator<Item = (u32, &'a RoaringBitmap)> + use<'a> {
        let first = self.base + 2;
        self.rows
            .range(first..first + 64)
            .filter_map(move |(r, bits)| Some((u32::try_from(r - first).ok()?, bits)))
    }

    fn bit(&self, i: u32) -> &'a RoaringBitmap {
        self.rows
            .get(&(self.base + 2 + u64::from(i)))
            .unwrap_or(&EMPTY)
    }

    /// The first `k` columns of `within` by this slot's value (largest
    /// first when `descending`), with every column tied with the `k`-th.
    fn first(&self, within: &RoaringBitmap, k: u64, descending: bool) -> RoaringBitmap {
        let (better, tied) = self.first_split(within, k, descending);
        better | tied
    }

    /// [`Slot::first`] in two: the columns whose value comes before the
    /// `k`-th's (at most `k`), and those whose value is the `k`-th's
    /// (empty when the first part holds exactly `k`).
    fn first_split(
        &self,
        within: &RoaringBitmap,
        k: u64,
        descending: bool,
    ) -> (RoaringBitmap, RoaringBitmap) {
        let present = among(self.exists, within);
        let negative = &present & self.sign;
        let positive = present - &negative;
        // Descending: non-negative values by magnitude, largest first, then
        // negative ones by magnitude, smallest first; ascending the mirror.
        let (front, back) = if descending {
            (positive, negative)
        } else {
            (negative, positive)
        };
        let front_len = front.len();
        if front_len >= k {
            self.first_by_magnitude(front, k, true)
        } else {
            let (better, tied) = self.first_by_magnitude(back, k - front_len, false);
            (front | better, tied)
        }
    }

    /// The first `k` of `set` by magnitude (largest first when `largest`):
    /// those before the `k`-th's magnitude, and those tied with it.
    fn first_by_magnitude(
        &self,
        set: RoaringBitmap,
        k: u64,
        largest: bool,
    ) -> (RoaringBitmap, RoaringBitmap) {
        let mut chosen = RoaringBitmap::new();
        let mut tied = set;
        if k == 0 {
            return (chosen, RoaringBitmap::new());
        }
        for i in (0..64).rev() {
            if tied.is_empty() {
                break;
            }
            let bit = self.bit(i);
            let better = if largest { &tied & bit } else { &tied - bit };
            let with = chosen.len() + better.len();
            if with > k {
                tied = better;
            } else {
                tied -= &better;
                chosen |= better;
                if with == k {
                    return (chosen, RoaringBitmap::new());
                }
            }
        }
        (chosen, tied)
    }

    /// Splits `within` by magnitude against `mag`: (less, equal, greater).
    fn magnitudes(
        &self,
        within: RoaringBitmap,
        mag: u64,
    ) -> (RoaringBitmap, RoaringBitmap, RoaringBitmap) {
        let (mut lt, mut eq, mut gt) = (RoaringBitmap::new(), within, RoaringBitmap::new());
        for i in (0..64).rev() {
            if eq.is_empty() {
                break;
            }
            let bit = self.bit(i);
            // No value has this bit (the high bits of small values): when
            // `mag` has it, every column left is less; else none moves.
            if bit.is_empty() {
                if mag >> i & 1 == 1 {
                    lt |= eq;
                    return (lt, RoaringBitmap::new(), gt);
                }
                continue;
            }
            if mag >> i & 1 == 1 {
                lt |= &eq - bit;
                eq &= bit;
            } else {
                gt |= &eq & bit;
                eq -= bit;
            }
        }
        (lt, eq, gt)
    }

    /// The columns (of `within`, when given) whose value compares so
    /// with `c`.
    fn compare(&self, cmp: Cmp, c: i64, within: Option<&RoaringBitmap>) -> RoaringBitmap {
        let (lt, eq, gt) = self.split(c, within);
        match cmp {
            Cmp::Eq => eq,
            Cmp::Lt => lt,
            Cmp::Le => lt | eq,
            Cmp::Gt => gt,
            Cmp::Ge => gt | eq,
            // Planned as not(=).
            Cmp::Ne => lt | gt,
        }
    }

    /// The columns (of `within`, when given) with a value in this slot,
    /// by their value against `c`: (less, equal, greater).
    fn split(
        &self,
        c: i64,
        within: Option<&RoaringBitmap>,
    ) -> (RoaringBitmap, RoaringBitmap, RoaringBitmap) {
        let exists = match within {
            Some(within) => among(self.exists, within),
            None => self.exists.clone(),
        };
        let neg = &exists & self.sign;
        let pos = exists - self.sign;
        let mag = c.unsigned_abs();
        if c >= 0 {
            let (lt, eq, gt) = self.magnitudes(pos, mag);
            (neg | lt, eq, gt)
        } else {
            // Among negatives a larger magnitude is a smaller value.
            let (smaller, eq, larger) = self.magnitudes(neg, mag);
            (larger, eq, pos | smaller)
        }
    }

    /// The largest (`max`) or smallest value among `pos ∪ neg`.
    fn extreme(&self, pos: &RoaringBitmap, neg: &RoaringBitmap, max: bool) -> Option<i64> {
        // The largest value is the largest positive magnitude, else the
        // smallest negative one; the smallest mirrors it.
        let (set, largest_magnitude, negative) = match (max, pos.is_empty(), neg.is_empty()) {
            (true, false, _) => (pos, true, false),
            (true, true, false) => (neg, false, true),
            (false, _, false) => (neg, true, true),
            (false, false, true) => (pos, false, false),
            _ => return None,
        };
        let mut cand = set.clone();
        let mut m: u64 = 0;
        for i in (0..64).rev() {
            let bit = self.bit(i);
            if largest_magnitude {
                let t = &cand & bit;
                if !t.is_empty() {
                    cand = t;
                    m |= 1 << i;
                }
            } else {
                let t = &cand - bit;
                if t.is_empty() {
                    m |= 1 << i;
                } else {
                    cand = t;
                }
            }
        }
        let m = i128::from(m);
        i64::try_from(if negative { -m } else { m }).ok()
    }
}
