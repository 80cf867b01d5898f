//! What a [`Reader`] computes from the bit-sliced and keyword rows
//! rather than from records: stats, sorted pages' columns and values,
//! histograms, groups and top values.

use std::collections::{BTreeMap, HashMap};

use keycodec::records;
use roaring::RoaringBitmap;
use store::Kv;

use super::{
    Reader,
    slot::{FEW_COLUMNS, Slot, among, slots},
};
use crate::{
    cache::Cached,
    error::{Error, malformed},
    histogram::{Bucket, Interval},
    query::Cmp,
    results::{Group, Stats, TopValue},
    rows::{RowId, decode_column},
    values::Keyword,
};

/// At most this many buckets are counted by comparisons over the
/// bit-sliced rows; more are counted from the values read back.
const RANGED_BUCKETS: usize = 1024;

/// The rows of a bit-sliced view, whole or in part.
fn view_rows(view: &Cached) -> Result<&BTreeMap<u64, RoaringBitmap>, Error> {
    match view {
        Cached::View(rows) | Cached::ViewPart { rows, .. } => Ok(rows),
        Cached::Row(_) | Cached::Rkeys(_) => Err(malformed("a bit-sliced view cached as a row")),
    }
}

impl<K: Kv> Reader<'_, K> {
    /// `--stats` over the integer index at `path` for the columns `within`
    /// (reading the rows of the containers they span only).
    pub async fn stats(&self, path: &str, within: &RoaringBitmap) -> Result<Stats, Error> {
        let view = self.bsi_within(path, within).await?;
        let rows = view_rows(&view)?;
        let mut stats = Stats::default();
        for slot in 0..slots(rows) {
            let s = Slot::new(rows, slot);
            let present = among(s.exists, within);
            let neg = s.sign & &present;
            let pos = if neg.is_empty() {
                present
            } else {
                present - &neg
            };
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
        let view = self.bsi_within(path, within).await?;
        let rows = view_rows(&view)?;
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
}

#[cfg(test)]
mod tests {
    use std::{collections::BTreeMap, sync::Mutex};

    use proptest::prelude::*;
    use roaring::RoaringBitmap;
    use store::{Kv, MemoryKv};

    use super::super::Reader;
    use crate::{
        cache::IndexCache,
        maintain::bsi_rows,
        rows::{RowDeltas, RowId, SHARD_BITS},
    };

    const PATH: &str = "n";
    const SCOPE: u32 = 3;
    const SHARDS: u32 = 3;

    /// What a column holds: its values, by slot.
    type Model = BTreeMap<u32, Vec<i64>>;

    #[derive(Debug, Clone)]
    enum Step {
        /// Aggregates over the model's columns in containers
        /// `first..first + span`, every `keep`th.
        Ask { first: u32, span: u32, keep: u32 },
        /// New values for columns (none: the column's values deleted),
        /// written and applied to the cache as a commit is.
        Write(Vec<(u32, Vec<i64>)>),
    }

    fn column() -> impl Strategy<Value = u32> {
        // Few containers, so that columns share them.
        (0..SHARDS * 16, 0u32..1 << 16).prop_map(|(c, at)| c << 16 | at)
    }

    fn values() -> impl Strategy<Value = Vec<i64>> {
        prop::collection::vec(
            prop_oneof![-300i64..300, any::<i64>(), Just(i64::MIN)],
            0..4,
        )
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            2 => (0..SHARDS * 16, 1u32..20, 1u32..4)
                .prop_map(|(first, span, keep)| Step::Ask { first, span, keep }),
            1 => prop::collection::vec((column(), values()), 1..20).prop_map(Step::Write),
        ]
    }

    fn change(deltas: &mut RowDeltas, column: u32, old: &[i64], new: &[i64]) {
        for (slot, v) in old.iter().enumerate() {
            for row in bsi_rows(slot, *v) {
                deltas.clear(RowId::bsi(PATH, row), column);
            }
        }
        for (slot, v) in new.iter().enumerate() {
            for row in bsi_rows(slot, *v) {
                deltas.set(RowId::bsi(PATH, row), column);
            }
        }
    }

    async fn write(
        kv: &MemoryKv,
        cache: &Mutex<IndexCache>,
        model: &mut Model,
        columns: Vec<(u32, Vec<i64>)>,
    ) {
        let mut deltas = RowDeltas::default();
        for (column, new) in columns {
            let old = model.remove(&column).unwrap_or_default();
            change(&mut deltas, column, &old, &new);
            if !new.is_empty() {
                model.insert(column, new);
            }
        }
        let mut ops = Vec::new();
        deltas.merge_ops(SCOPE, &mut ops).unwrap();
        kv.write(ops).await.unwrap();
        cache.lock().unwrap().apply(SCOPE, &deltas);
    }

    async fn ask(reader: &Reader<'_, MemoryKv>, model: &Model, first: u32, span: u32, keep: u32) {
        let lo = first << 16;
        let hi = (first + span).min(SHARDS << (SHARD_BITS - 16)) << 16;
        let within: RoaringBitmap = model
            .range(lo..hi)
            .map(|(c, _)| *c)
            .step_by(keep as usize)
            .collect();
        let mut want: Vec<(u32, i64)> = within
            .iter()
            .flat_map(|c| model[&c].iter().map(move |v| (c, *v)))
            .collect();
        want.sort_unstable();
        let mut got = reader.values(PATH, &within).await.unwrap();
        got.sort_unstable();
        assert_eq!(
            got, want,
            "values of containers {first}..+{span}, every {keep}th"
        );
        let stats = reader.stats(PATH, &within).await.unwrap();
        assert_eq!(
            (stats.count, stats.sum, stats.min, stats.max),
            (
                want.len() as u64,
                want.iter().map(|(_, v)| i128::from(*v)).sum(),
                want.iter().map(|(_, v)| *v).min(),
                want.iter().map(|(_, v)| *v).max(),
            ),
            "stats of containers {first}..+{span}, every {keep}th"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Aggregates over columns in a few containers read those
        /// containers' rows only and cache them as part of the view; asked
        /// again, over other containers (the part widened) and after
        /// writes in and outside the part, from the cache and from a
        /// fresh one, they equal the model's.
        #[test]
        fn aggregates_over_parts_of_a_view_match_the_model(
            first in prop::collection::vec((column(), values()), 0..60),
            steps in prop::collection::vec(step(), 1..12),
        ) {
            let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
            rt.block_on(async {
                let kv = MemoryKv::new();
                let cache = Mutex::new(IndexCache::new(1 << 30));
                cache.lock().unwrap().set_shards(SCOPE, u64::from(SHARDS));
                let mut model = Model::new();
                write(&kv, &cache, &mut model, first).await;
                for step in steps {
                    match step {
                        Step::Ask { first, span, keep } => {
                            let reader = Reader::new(&kv, &cache, SCOPE);
                            ask(&reader, &model, first, span, keep).await;
                            let cold = Mutex::new(IndexCache::new(1 << 30));
                            cold.lock().unwrap().set_shards(SCOPE, u64::from(SHARDS));
                            ask(&Reader::new(&kv, &cold, SCOPE), &model, first, span, keep).await;
                        }
                        Step::Write(columns) => write(&kv, &cache, &mut model, columns).await,
                    }
                }
            });
        }
    }
}
