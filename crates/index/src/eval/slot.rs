//! One slot of a bit-sliced index (an integer or datetime path's rows:
//! existence, sign, then a row per bit of the magnitude): comparisons,
//! top-k and extremes over its rows, no value read back.

use std::{borrow::Cow, collections::BTreeMap};

use roaring::RoaringBitmap;

use crate::{query::Cmp, rows::BSI_ROWS_PER_SLOT};

pub(super) fn slots(rows: &BTreeMap<u64, RoaringBitmap>) -> u64 {
    rows.keys()
        .next_back()
        .map_or(0, |r| r / BSI_ROWS_PER_SLOT + 1)
}

/// How many columns [`Reader::values`] reads by a lookup per column and
/// bit rather than by intersecting each bit row with them.
pub(super) const FEW_COLUMNS: usize = 256;

/// One slot of a bit-sliced index.
pub(super) struct Slot<'a> {
    rows: &'a BTreeMap<u64, RoaringBitmap>,
    base: u64,
    pub(super) exists: &'a RoaringBitmap,
    pub(super) sign: &'a RoaringBitmap,
}

static EMPTY: std::sync::LazyLock<RoaringBitmap> = std::sync::LazyLock::new(RoaringBitmap::new);

impl<'a> Slot<'a> {
    pub(super) fn new(rows: &'a BTreeMap<u64, RoaringBitmap>, slot: u64) -> Self {
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
    pub(super) fn bits(&self) -> impl Iterator<Item = (u32, &'a RoaringBitmap)> + use<'a> {
        let first = self.base + 2;
        self.rows
            .range(first..first + 64)
            .filter_map(move |(r, bits)| Some((u32::try_from(r - first).ok()?, bits)))
    }

    pub(super) fn bit(&self, i: u32) -> &'a RoaringBitmap {
        self.rows
            .get(&(self.base + 2 + u64::from(i)))
            .unwrap_or(&EMPTY)
    }

    /// The first `k` columns of `within` by this slot's value (largest
    /// first when `descending`), with every column tied with the `k`-th.
    pub(super) fn first(&self, within: &RoaringBitmap, k: u64, descending: bool) -> RoaringBitmap {
        let (better, tied) = self.first_split(within, k, descending);
        better | tied
    }

    /// [`Slot::first`] in two: the columns whose value comes before the
    /// `k`-th's (at most `k`), and those whose value is the `k`-th's
    /// (empty when the first part holds exactly `k`).
    pub(super) fn first_split(
        &self,
        within: &RoaringBitmap,
        k: u64,
        descending: bool,
    ) -> (RoaringBitmap, RoaringBitmap) {
        let present = covered(self.exists, within)
            .map_or_else(|| Cow::Owned(self.exists & within), Cow::Borrowed);
        // No negative value (the common case): every present column is
        // non-negative, and `present` is not copied.
        let (positive, negative) = if self.sign.is_empty() {
            (present, Cow::Owned(RoaringBitmap::new()))
        } else {
            let negative = &*present & self.sign;
            (
                Cow::Owned(present.into_owned() - &negative),
                Cow::Owned(negative),
            )
        };
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
            (front.into_owned() | better, tied)
        }
    }

    /// The first `k` of `set` by magnitude (largest first when `largest`):
    /// those before the `k`-th's magnitude, and those tied with it.
    fn first_by_magnitude(
        &self,
        set: Cow<'_, RoaringBitmap>,
        k: u64,
        largest: bool,
    ) -> (RoaringBitmap, RoaringBitmap) {
        let mut chosen = RoaringBitmap::new();
        if k == 0 {
            return (chosen, RoaringBitmap::new());
        }
        // The candidates: `tied` less `chosen` while `tied` is still the
        // set as given (`chosen` is then a subset of it), so that a set
        // shared with the cache is not copied until the candidates narrow.
        let mut tied = set;
        let mut less_chosen = false;
        for i in (0..64).rev() {
            let left = tied.len() - if less_chosen { chosen.len() } else { 0 };
            if left == 0 {
                break;
            }
            let bit = self.bit(i);
            let mut better = if largest { &*tied & bit } else { &*tied - bit };
            if less_chosen {
                better -= &chosen;
            }
            let with = chosen.len() + better.len();
            if with > k {
                tied = Cow::Owned(better);
                less_chosen = false;
            } else {
                match &mut tied {
                    Cow::Owned(t) if !less_chosen => *t -= &better,
                    _ => less_chosen = true,
                }
                chosen |= better;
                if with == k {
                    return (chosen, RoaringBitmap::new());
                }
            }
        }
        let tied = if less_chosen {
            tied.into_owned() - &chosen
        } else {
            tied.into_owned()
        };
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
    pub(super) fn compare(
        &self,
        cmp: Cmp,
        c: i64,
        within: Option<&RoaringBitmap>,
    ) -> RoaringBitmap {
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
    pub(super) fn split(
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
    pub(super) fn extreme(
        &self,
        pos: &RoaringBitmap,
        neg: &RoaringBitmap,
        max: bool,
    ) -> Option<i64> {
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
            if bit.is_empty() {
                // No candidate has the bit: `cand` stands either way.
                continue;
            }
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

/// `row ∩ within`; `within` itself when `row` holds every column from
/// `within`'s first to its last (a row every record is in is one run, and
/// roaring intersects a run with a bitmap by first making it a bitmap).
pub(super) fn among(row: &RoaringBitmap, within: &RoaringBitmap) -> RoaringBitmap {
    covered(row, within).map_or_else(|| row & within, RoaringBitmap::clone)
}

/// `within`, when `row` holds every column from its first to its last
/// (so that `row ∩ within` is `within`).
fn covered<'w>(row: &RoaringBitmap, within: &'w RoaringBitmap) -> Option<&'w RoaringBitmap> {
    let (first, last, lo, hi) = (row.min()?, row.max()?, within.min()?, within.max()?);
    (first <= lo && hi <= last && row.len() == u64::from(last - first) + 1).then_some(within)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;
    use roaring::RoaringBitmap;

    use super::Slot;

    /// The rows of one slot holding `values` (`None`: no value).
    fn rows_of(values: &[Option<i64>]) -> BTreeMap<u64, RoaringBitmap> {
        let mut rows: BTreeMap<u64, RoaringBitmap> = BTreeMap::new();
        for (c, v) in (0u32..).zip(values) {
            let Some(v) = *v else { continue };
            rows.entry(0).or_default().insert(c);
            if v < 0 {
                rows.entry(1).or_default().insert(c);
            }
            let m = v.unsigned_abs();
            for b in 0..64 {
                if m >> b & 1 == 1 {
                    rows.entry(2 + b).or_default().insert(c);
                }
            }
        }
        rows
    }

    /// The walk as it was first written, copying the candidates at every
    /// step: the oracle for the one that copies nothing until they narrow.
    fn first_split_by_copies(
        slot: &Slot<'_>,
        within: &RoaringBitmap,
        k: u64,
        descending: bool,
    ) -> (RoaringBitmap, RoaringBitmap) {
        let by_magnitude = |set: RoaringBitmap, k: u64, largest: bool| {
            let mut chosen = RoaringBitmap::new();
            let mut tied = set;
            if k == 0 {
                return (chosen, RoaringBitmap::new());
            }
            for i in (0..64).rev() {
                if tied.is_empty() {
                    break;
                }
                let bit = slot.bit(i);
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
        };
        let present = slot.exists & within;
        let negative = &present & slot.sign;
        let positive = present - &negative;
        let (front, back) = if descending {
            (positive, negative)
        } else {
            (negative, positive)
        };
        let front_len = front.len();
        if front_len >= k {
            by_magnitude(front, k, true)
        } else {
            let (better, tied) = by_magnitude(back, k - front_len, false);
            (front | better, tied)
        }
    }

    proptest! {
        /// The top-k split equals the copying walk's, with and without
        /// negative values, for candidates that are every record or some of
        /// them.
        #[test]
        fn first_split_matches_the_copying_walk(
            values in prop::collection::vec(prop::option::weighted(0.9, -40i64..200), 1..300),
            some in prop::collection::vec(any::<bool>(), 300),
            every in any::<bool>(),
            dense in any::<bool>(),
            unsigned in any::<bool>(),
            k in 0u64..40,
            descending in any::<bool>(),
        ) {
            // Every column with a value and none negative: the existence
            // row is one run, and the walk starts from the candidates as
            // given (not copied).
            let values: Vec<Option<i64>> = values
                .iter()
                .map(|v| if dense { Some(v.unwrap_or(0)) } else { *v })
                .map(|v| if unsigned { v.map(i64::abs) } else { v })
                .collect();
            let rows = rows_of(&values);
            let slot = Slot::new(&rows, 0);
            let within: RoaringBitmap = (0u32..)
                .zip(&values)
                .filter(|&(c, v)| v.is_some() && (every || some[c as usize]))
                .map(|(c, _)| c)
                .collect();
            prop_assert_eq!(
                slot.first_split(&within, k, descending),
                first_split_by_copies(&slot, &within, k, descending)
            );
        }
    }
}
