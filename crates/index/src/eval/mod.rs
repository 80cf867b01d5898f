//! Reading bitmaps (through the cache) and evaluating queries over them:
//! a `--where` expression checked against the declared indexes becomes a
//! [`Plan`] (`plan`), which a [`Reader`] evaluates over the rows it reads;
//! the bit-sliced rows of integer and datetime indexes are compared,
//! ranked and read back a slot at a time (`slot`).

mod aggregates;
mod plan;
mod slot;

pub use plan::{Plan, plan};
use slot::{Slot, slots};

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
};

use keycodec::records;
use roaring::RoaringBitmap;
use store::Kv;

use crate::{
    cache::{Cached, IndexCache, key, rkeys_key, view_key},
    columns::{self, Packed},
    error::{Error, malformed},
    rows::{
        CONTAINERS_PER_ROW, RowId, SHARD_BITS, decode_column, decode_container, row_range,
        txkey_bytes, view_range,
    },
    values::Keyword,
    words::QueryWord,
};

/// Above this many words, a prefix reads its text index's whole view
/// rather than a row per word.
const PREFIX_ROWS_ONE_BY_ONE: usize = 32;

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
                Cached::View(_) | Cached::ViewPart { .. } | Cached::Rkeys(_) => &EMPTY,
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
    packed_columns: std::sync::OnceLock<u64>,
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
            packed_columns: std::sync::OnceLock::new(),
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

    /// How many columns the scope's build packed, read once per head
    /// without the rkeys [`Reader::packed`] decodes (only lookups by rkey
    /// need those).
    async fn packed_columns(&self) -> Result<u64, Error> {
        if let Some(n) = self.packed_columns.get() {
            return Ok(*n);
        }
        let cached = {
            let cache = lock(self.cache);
            cache
                .packed(self.scope)
                .map(|p| p.columns)
                .or_else(|| cache.packed_columns(self.scope))
        };
        let n = match cached {
            Some(n) => n,
            None => {
                let n = columns::load_packed_columns(self.kv, self.scope).await?;
                lock(self.cache).set_packed_columns(self.scope, n);
                n
            }
        };
        Ok(*self.packed_columns.get_or_init(|| n))
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
            self.packed_columns(),
        )
        .await;
        let n = single?
            .max(packed?.checked_sub(1))
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
        let k = view_key(self.scope, field, view);
        if let Some(hit) = lock(self.cache).get(&k)
            && matches!(*hit, Cached::View(_))
        {
            return Ok(hit);
        }
        let mut rows = BTreeMap::new();
        self.read_view(&view_range(self.scope, field, view)?, &mut rows)
            .await?;
        Ok(lock(self.cache).insert(k, Cached::View(rows)))
    }

    /// The rows of the bit-sliced view at `path` for at least the columns
    /// of `within`: the whole view when it is cached or `within` spans
    /// every container, else the containers from `within`'s first to its
    /// last (widened to those of a part cached before). To be read for
    /// the columns of `within` only.
    pub(super) async fn bsi_within(
        &self,
        path: &str,
        within: &RoaringBitmap,
    ) -> Result<Arc<Cached>, Error> {
        let (Some(min), Some(max)) = (within.min(), within.max()) else {
            return Ok(Arc::new(Cached::View(BTreeMap::new())));
        };
        let r = RowId::bsi(path, 0);
        let (mut first, mut last) = (u64::from(min >> 16), u64::from(max >> 16));
        let k = view_key(self.scope, &r.field, &r.view);
        if let Some(hit) = lock(self.cache).get(&k) {
            match &*hit {
                Cached::View(_) => return Ok(hit),
                Cached::ViewPart { containers, .. } => {
                    if containers.contains(&first) && containers.contains(&last) {
                        return Ok(hit);
                    }
                    first = first.min(*containers.start());
                    last = last.max(*containers.end());
                }
                Cached::Row(_) | Cached::Rkeys(_) => {}
            }
        }
        if first == 0 && last + 1 >= self.shards().await? * CONTAINERS_PER_ROW {
            return self.view(&r.field, &r.view).await;
        }
        // A shard's keys are its slots' container groups, by slot and
        // container: a range of them per slot, the first empty one past
        // the last slot (a column's values fill its slots from the first).
        let mut rows = BTreeMap::new();
        for shard in first / CONTAINERS_PER_ROW..=last / CONTAINERS_PER_ROW {
            let from = first.max(shard * CONTAINERS_PER_ROW) % CONTAINERS_PER_ROW;
            let to =
                last.min(shard * CONTAINERS_PER_ROW + CONTAINERS_PER_ROW - 1) % CONTAINERS_PER_ROW;
            for slot in 0.. {
                let ckey = |c: u64| slot * CONTAINERS_PER_ROW + c;
                let range = keycodec::KeyRange {
                    start: txkey_bytes(self.scope, &r.field, &r.view, shard, ckey(from))?,
                    end: Some(txkey_bytes(
                        self.scope,
                        &r.field,
                        &r.view,
                        shard,
                        ckey(to + 1),
                    )?),
                };
                if !self.read_view(&range, &mut rows).await? {
                    break;
                }
            }
        }
        Ok(lock(self.cache).insert(
            k,
            Cached::ViewPart {
                rows,
                containers: first..=last,
            },
        ))
    }

    /// Adds the rows of a view's containers in `range` to `rows`; whether
    /// there were any.
    async fn read_view(
        &self,
        range: &keycodec::KeyRange,
        rows: &mut BTreeMap<u64, RoaringBitmap>,
    ) -> Result<bool, Error> {
        let containers = self.kv.scan(range, false, usize::MAX).await?;
        for (key, value) in &containers {
            for (row, bits) in decode_container(key, value)? {
                *rows.entry(row.row).or_default() |= bits;
            }
        }
        Ok(!containers.is_empty())
    }

    async fn row_bits(&self, row: &RowId) -> Result<RoaringBitmap, Error> {
        Ok(match &*self.row(row).await? {
            Cached::Row(b) => b.clone(),
            Cached::View(_) | Cached::ViewPart { .. } | Cached::Rkeys(_) => RoaringBitmap::new(),
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
            (_, Cached::View(_) | Cached::ViewPart { .. } | Cached::Rkeys(_)) => {
                Bits::Owned(RoaringBitmap::new())
            }
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

    /// The rkeys of `columns` (every one must have a record), reading each
    /// packed block once and keeping it in the cache.
    pub async fn rkeys(&self, columns: &[u32]) -> Result<Vec<String>, Error> {
        let packed = self.packed_columns().await?;
        let places: Vec<columns::Place> =
            columns.iter().map(|c| columns::place(packed, *c)).collect();
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
                                Cached::Row(_) | Cached::View(_) | Cached::ViewPart { .. } => None,
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
