//! Roaring-bitmap containers, the values of record type `0x6`, and the
//! merge operator that lets commits change them without reading them.
//!
//! A container covers one row's 65,536 columns `[k·2^16, (k+1)·2^16)` (the
//! txkey in its key says which row and `k`, see `docs/storage-keys.md`). Its
//! stored value is a [`ContainerDelta`]: the columns it sets and the
//! columns it clears, as column ids (so that a row is the union of its
//! containers' bitmaps, each one roaring container, with no per-bit work).
//!
//! ```text
//! 01 │ set bytes: u32 BE │ set: roaring portable bitmap │ clear: roaring portable bitmap
//! 03 │ container: u16 BE │ n set: u16 BE │ n clear: u16 BE │ low 16 bits of each column: u16 BE…
//! ```
//!
//! The short form (`03`) holds a change of at most [`SHORT_LIMIT`] columns,
//! distinct and in ascending order within each list (set, then cleared).
//!
//! A container's bits are its `set` positions: a full container (as an
//! index build writes it) clears nothing, and a commit's change is a delta
//! written as a merge operand. Deltas compose associatively, which is what
//! SlateDB's merge operator requires: applying `a` then `b` is
//!
//! ```text
//! set   = (a.set ∖ b.clear) ∪ b.set
//! clear = (a.clear ∖ b.set) ∪ b.clear
//! ```
//!
//! and a delta applied to no stored value is the container it sets (the
//! clears then name bits that are not there). All columns of a value share
//! their high 16 bits: a value that spans two containers is malformed.

use bytes::{BufMut, Bytes};
use roaring::RoaringBitmap;

/// The layout byte of a container value in roaring's portable format.
const LAYOUT: u8 = 1;

/// The layout byte of a short container value.
const SHORT_LAYOUT: u8 = 3;

/// Changes of at most this many columns are written in the short form.
pub const SHORT_LIMIT: u64 = 64;

/// Columns per container.
pub const CONTAINER_BITS: u32 = 1 << 16;

/// A change to one container: columns set and columns cleared (all with
/// the same `column / CONTAINER_BITS`; disjoint once composed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContainerDelta {
    /// Positions set.
    pub set: RoaringBitmap,
    /// Positions cleared.
    pub clear: RoaringBitmap,
}

/// Why a container value could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed bitmap container: {0}")]
pub struct ContainerError(String);

impl ContainerDelta {
    /// A full container holding exactly `bits`.
    #[must_use]
    pub fn full(bits: RoaringBitmap) -> Self {
        Self {
            set: bits,
            clear: RoaringBitmap::new(),
        }
    }

    fn decode_short(rest: &[u8]) -> Result<Self, ContainerError> {
        let err = |why: &str| ContainerError(why.to_owned());
        let (&[h0, h1, s0, s1, c0, c1], lows) = rest
            .split_first_chunk::<6>()
            .ok_or_else(|| err("truncated short container"))?;
        let high = u32::from(u16::from_be_bytes([h0, h1])) << 16;
        let (n_set, n_clear) = (
            usize::from(u16::from_be_bytes([s0, s1])),
            usize::from(u16::from_be_bytes([c0, c1])),
        );
        if lows.len() != 2 * (n_set + n_clear) || n_set + n_clear == 0 {
            return Err(err("short container of the wrong length"));
        }
        let mut columns = lows
            .chunks_exact(2)
            .map(|b| high | u32::from(u16::from_be_bytes([b[0], b[1]])));
        let set: RoaringBitmap = columns.by_ref().take(n_set).collect();
        let clear: RoaringBitmap = columns.collect();
        if set.len() != n_set as u64 || clear.len() != n_clear as u64 || !set.is_disjoint(&clear) {
            return Err(err("short container repeats a column"));
        }
        Ok(Self { set, clear })
    }

    /// `self` followed by the encoded delta `bytes`, as `self.then(&
    /// Self::decode(bytes)?)`. A one-column short value, what a
    /// single-record commit writes and so most of the operands a memtable
    /// flush folds into a hot key, is applied without building bitmaps.
    fn then_encoded(&mut self, bytes: &[u8]) -> Result<(), ContainerError> {
        if let [SHORT_LAYOUT, h0, h1, s0, s1, c0, c1, l0, l1] = *bytes {
            let column = (u32::from(u16::from_be_bytes([h0, h1])) << 16)
                | u32::from(u16::from_be_bytes([l0, l1]));
            match (u16::from_be_bytes([s0, s1]), u16::from_be_bytes([c0, c1])) {
                (1, 0) => {
                    self.clear.remove(column);
                    self.set.insert(column);
                    return Ok(());
                }
                (0, 1) => {
                    self.set.remove(column);
                    self.clear.insert(column);
                    return Ok(());
                }
                _ => {}
            }
        }
        self.then(&Self::decode(bytes)?);
        Ok(())
    }

    /// `column / CONTAINER_BITS` of the columns named, `None` when none is.
    #[must_use]
    pub fn container(&self) -> Option<u32> {
        self.set
            .min()
            .or_else(|| self.clear.min())
            .map(|c| c / CONTAINER_BITS)
    }

    /// Whether this delta changes nothing.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.set.is_empty() && self.clear.is_empty()
    }

    /// The value bytes (see the module documentation): the short form for
    /// a change of at most [`SHORT_LIMIT`] columns, as most commits make.
    #[must_use]
    pub fn encode(&self) -> Bytes {
        let n = self.set.len() + self.clear.len();
        let one_container = |c: u32| {
            [self.set.max(), self.clear.max()]
                .into_iter()
                .flatten()
                .all(|m| m / CONTAINER_BITS == c)
        };
        if n <= SHORT_LIMIT
            && let Some(container) = self.container()
            && one_container(container)
        {
            let mut out = Vec::with_capacity(7 + 2 * usize::try_from(n).unwrap_or(0));
            out.put_u8(SHORT_LAYOUT);
            out.put_u16(u16::try_from(container).unwrap_or(u16::MAX));
            out.put_u16(u16::try_from(self.set.len()).unwrap_or(u16::MAX));
            out.put_u16(u16::try_from(self.clear.len()).unwrap_or(u16::MAX));
            for c in self.set.iter().chain(self.clear.iter()) {
                // The low 16 bits: the high ones are the container's.
                out.put_u16((c & 0xFFFF) as u16);
            }
            return Bytes::from(out);
        }
        let set_len = self.set.serialized_size();
        let mut out = Vec::with_capacity(5 + set_len + self.clear.serialized_size());
        out.put_u8(LAYOUT);
        out.put_u32(u32::try_from(set_len).unwrap_or(u32::MAX));
        // Writing to a Vec cannot fail.
        let _ = self.set.serialize_into(&mut out);
        let _ = self.clear.serialize_into(&mut out);
        Bytes::from(out)
    }

    /// Decodes a value written by [`ContainerDelta::encode`]; every byte is
    /// checked (these come from storage, and are fuzzed).
    ///
    /// # Errors
    ///
    /// [`ContainerError`] for anything else.
    pub fn decode(bytes: &[u8]) -> Result<Self, ContainerError> {
        let err = |why: &str| ContainerError(why.to_owned());
        let (&layout, rest) = bytes.split_first().ok_or_else(|| err("empty value"))?;
        if layout == SHORT_LAYOUT {
            return Self::decode_short(rest);
        }
        if layout != LAYOUT {
            return Err(ContainerError(format!("unknown layout {layout}")));
        }
        let (len, rest) = rest
            .split_first_chunk::<4>()
            .ok_or_else(|| err("truncated length"))?;
        let len = usize::try_from(u32::from_be_bytes(*len)).unwrap_or(usize::MAX);
        if len > rest.len() {
            return Err(err("set bitmap runs past the end"));
        }
        let (set, clear) = rest.split_at(len);
        let decode = |what: &str, mut bytes: &[u8]| {
            let bitmap = RoaringBitmap::deserialize_from(&mut bytes)
                .map_err(|e| ContainerError(format!("{what} bitmap: {e}")))?;
            if !bytes.is_empty() {
                return Err(ContainerError(format!("{what} bitmap: trailing bytes")));
            }
            Ok(bitmap)
        };
        let delta = Self {
            set: decode("set", set)?,
            clear: decode("clear", clear)?,
        };
        let mut high = delta
            .set
            .min()
            .into_iter()
            .chain(delta.set.max())
            .chain(delta.clear.min())
            .chain(delta.clear.max())
            .map(|c| c / CONTAINER_BITS);
        if let Some(first) = high.next()
            && high.any(|h| h != first)
        {
            return Err(err("columns of more than one container"));
        }
        Ok(delta)
    }

    /// `self` followed by `later`.
    pub fn then(&mut self, later: &Self) {
        self.set -= &later.clear;
        self.set |= &later.set;
        self.clear -= &later.set;
        self.clear |= &later.clear;
    }
}

/// The layout byte of a [`ContainerGroup`].
const GROUP_LAYOUT: u8 = 2;

/// Changes to the same container (the same 2^16 columns) of several rows
/// of one view, under one key: bit-sliced views keep a slot's rows (its
/// exists, sign and magnitude bits) together, so that a commit writes one
/// key per slot rather than one per bit.
///
/// ```text
/// 02 │ rows: u8 │ (row: u8 │ length: u32 BE │ a ContainerDelta value)…   rows ascending
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContainerGroup {
    /// Each row's change, by its number within the group.
    pub rows: std::collections::BTreeMap<u8, ContainerDelta>,
}

impl ContainerGroup {
    /// The value bytes.
    #[must_use]
    pub fn encode(&self) -> Bytes {
        let mut out = Vec::new();
        out.put_u8(GROUP_LAYOUT);
        out.put_u8(u8::try_from(self.rows.len()).unwrap_or(u8::MAX));
        for (row, delta) in self.rows.iter().take(usize::from(u8::MAX)) {
            let bytes = delta.encode();
            out.put_u8(*row);
            out.put_u32(u32::try_from(bytes.len()).unwrap_or(u32::MAX));
            out.extend_from_slice(&bytes);
        }
        Bytes::from(out)
    }

    /// Decodes a value written by [`ContainerGroup::encode`]; every byte is
    /// checked.
    ///
    /// # Errors
    ///
    /// [`ContainerError`] for anything else, also rows out of order or of
    /// different containers.
    pub fn decode(bytes: &[u8]) -> Result<Self, ContainerError> {
        let err = |why: &str| ContainerError(why.to_owned());
        let (&[layout, count], mut rest) = bytes
            .split_first_chunk::<2>()
            .ok_or_else(|| err("truncated group"))?;
        if layout != GROUP_LAYOUT {
            return Err(ContainerError(format!("unknown group layout {layout}")));
        }
        let mut rows = std::collections::BTreeMap::new();
        let mut container = None;
        for _ in 0..count {
            let (&[row, a, b, c, d], tail) = rest
                .split_first_chunk::<5>()
                .ok_or_else(|| err("truncated group row"))?;
            let len = usize::try_from(u32::from_be_bytes([a, b, c, d])).unwrap_or(usize::MAX);
            if len > tail.len() {
                return Err(err("a group row runs past the end"));
            }
            let (value, next) = tail.split_at(len);
            let delta = ContainerDelta::decode(value)?;
            if let Some(c) = delta.container() {
                if container.is_some_and(|k| k != c) {
                    return Err(err("group rows of more than one container"));
                }
                container = Some(c);
            }
            if rows.last_key_value().is_some_and(|(r, _)| *r >= row) {
                return Err(err("group rows out of order"));
            }
            rows.insert(row, delta);
            rest = next;
        }
        if !rest.is_empty() {
            return Err(err("trailing bytes after the group"));
        }
        Ok(Self { rows })
    }

    /// `column / CONTAINER_BITS` of the columns named, `None` when none is.
    #[must_use]
    pub fn container(&self) -> Option<u32> {
        self.rows.values().find_map(ContainerDelta::container)
    }

    /// `self` followed by `later`, row by row.
    pub fn then(&mut self, later: &Self) {
        for (row, delta) in &later.rows {
            self.rows.entry(*row).or_default().then(delta);
        }
    }
}

/// Composes stored container values and operands, oldest first: single
/// containers ([`ContainerDelta`]) or groups ([`ContainerGroup`]), by their
/// first byte; a key holds one kind or the other.
pub(crate) fn merge_values<'a>(
    existing: Option<&[u8]>,
    operands: impl IntoIterator<Item = &'a [u8]>,
) -> Result<Bytes, ContainerError> {
    let mut operands = operands.into_iter().peekable();
    let first = existing
        .or_else(|| operands.peek().copied())
        .and_then(|b| b.first());
    if first == Some(&GROUP_LAYOUT) {
        let mut acc = match existing {
            Some(bytes) => ContainerGroup::decode(bytes)?,
            None => ContainerGroup::default(),
        };
        for operand in operands {
            acc.then(&ContainerGroup::decode(operand)?);
        }
        return Ok(acc.encode());
    }
    let mut acc = match existing {
        Some(bytes) => ContainerDelta::decode(bytes)?,
        None => ContainerDelta::default(),
    };
    for operand in operands {
        acc.then_encoded(operand)?;
    }
    Ok(acc.encode())
}

/// SlateDB's side of [`merge_values`].
pub(crate) struct ContainerMerge;

impl slatedb::MergeOperator for ContainerMerge {
    fn merge(
        &self,
        _key: &Bytes,
        existing_value: Option<Bytes>,
        value: Bytes,
    ) -> Result<Bytes, slatedb::MergeOperatorError> {
        merge_values(existing_value.as_deref(), [value.as_ref()]).map_err(callback)
    }

    fn merge_batch(
        &self,
        _key: &Bytes,
        existing_value: Option<Bytes>,
        operands: &[Bytes],
    ) -> Result<Bytes, slatedb::MergeOperatorError> {
        merge_values(
            existing_value.as_deref(),
            operands.iter().map(AsRef::as_ref),
        )
        .map_err(callback)
    }
}

fn callback(e: ContainerError) -> slatedb::MergeOperatorError {
    slatedb::MergeOperatorError::Callback {
        message: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn bitmap(bits: &[u16]) -> RoaringBitmap {
        bits.iter().map(|&b| u32::from(b)).collect()
    }

    fn delta() -> impl Strategy<Value = ContainerDelta> {
        (
            proptest::collection::vec(0u16..64, 0..8),
            proptest::collection::vec(0u16..64, 0..8),
        )
            .prop_map(|(set, clear)| {
                let set = bitmap(&set);
                let clear = bitmap(&clear) - &set;
                ContainerDelta { set, clear }
            })
    }

    /// Applies deltas to a plain set, the model.
    fn model(deltas: &[ContainerDelta]) -> std::collections::BTreeSet<u32> {
        let mut bits = std::collections::BTreeSet::new();
        for d in deltas {
            for c in &d.clear {
                bits.remove(&c);
            }
            bits.extend(d.set.iter());
        }
        bits
    }

    proptest! {
        /// Any grouping of the operands gives the container the model gives.
        #[test]
        fn composition_is_associative(deltas in proptest::collection::vec(delta(), 1..6), split in 0usize..6) {
            let split = split.min(deltas.len());
            let encoded: Vec<Bytes> = deltas.iter().map(ContainerDelta::encode).collect();
            let whole = merge_values(None, encoded.iter().map(AsRef::as_ref)).unwrap();
            let left = merge_values(None, encoded[..split].iter().map(AsRef::as_ref)).unwrap();
            let grouped = merge_values(Some(&left), encoded[split..].iter().map(AsRef::as_ref)).unwrap();
            let whole = ContainerDelta::decode(&whole).unwrap();
            prop_assert_eq!(&whole, &ContainerDelta::decode(&grouped).unwrap());
            prop_assert_eq!(whole.set.iter().collect::<std::collections::BTreeSet<_>>(), model(&deltas));
        }

        /// Applying an encoded operand is applying its decoding, for the
        /// one-column values that skip the bitmaps and for anything else;
        /// bytes that do not decode are an error either way.
        #[test]
        fn applying_encoded_operands_is_applying_them_decoded(
            acc in delta(),
            column in 0u16..64,
            set in any::<bool>(),
            other in delta(),
            noise in proptest::collection::vec(any::<u8>(), 0..12),
        ) {
            let one = if set {
                ContainerDelta { set: bitmap(&[column]), clear: RoaringBitmap::new() }
            } else {
                ContainerDelta { set: RoaringBitmap::new(), clear: bitmap(&[column]) }
            };
            for operand in [one.encode().to_vec(), other.encode().to_vec(), noise] {
                let mut fast = acc.clone();
                let applied = fast.then_encoded(&operand);
                match ContainerDelta::decode(&operand) {
                    Ok(decoded) => {
                        prop_assert!(applied.is_ok());
                        let mut slow = acc.clone();
                        slow.then(&decoded);
                        prop_assert_eq!(fast, slow);
                    }
                    Err(_) => prop_assert!(applied.is_err()),
                }
            }
        }

        /// Decoding never panics, and what decodes re-encodes to itself.
        #[test]
        fn decoding_arbitrary_bytes_is_safe(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(d) = ContainerDelta::decode(&bytes) {
                prop_assert_eq!(ContainerDelta::decode(&d.encode()).unwrap(), d);
            }
        }
    }

    proptest! {
        /// Groups compose row by row, associatively, as single containers do.
        #[test]
        fn groups_compose_as_their_rows(groups in proptest::collection::vec(proptest::collection::btree_map(0u8..4, delta(), 0..4), 1..5), split in 0usize..5) {
            let groups: Vec<ContainerGroup> = groups.into_iter().map(|rows| ContainerGroup { rows }).collect();
            // At least one operand on the left: SlateDB never merges nothing.
            let split = split.clamp(1, groups.len());
            let encoded: Vec<Bytes> = groups.iter().map(ContainerGroup::encode).collect();
            let whole = merge_values(None, encoded.iter().map(AsRef::as_ref)).unwrap();
            let left = merge_values(None, encoded[..split].iter().map(AsRef::as_ref)).unwrap();
            let grouped = merge_values(Some(&left), encoded[split..].iter().map(AsRef::as_ref)).unwrap();
            let whole = ContainerGroup::decode(&whole).unwrap();
            prop_assert_eq!(&whole, &ContainerGroup::decode(&grouped).unwrap());
            for row in 0u8..4 {
                let deltas: Vec<ContainerDelta> = groups.iter().map(|g| g.rows.get(&row).cloned().unwrap_or_default()).collect();
                let got: std::collections::BTreeSet<u32> = whole.rows.get(&row).map(|d| d.set.iter().collect()).unwrap_or_default();
                prop_assert_eq!(got, model(&deltas));
            }
        }

        /// Decoding a group never panics; what decodes re-encodes to itself.
        #[test]
        fn decoding_arbitrary_groups_is_safe(bytes in proptest::collection::vec(any::<u8>(), 0..96)) {
            if let Ok(g) = ContainerGroup::decode(&bytes) {
                prop_assert_eq!(ContainerGroup::decode(&g.encode()).unwrap(), g);
            }
        }
    }

    #[test]
    fn group_layout_is_pinned() {
        let one = ContainerDelta::full(bitmap(&[1, 5]));
        let g = ContainerGroup {
            rows: [(0, one.clone()), (3, one.clone())].into_iter().collect(),
        };
        let d = hex(&one.encode());
        let len = format!("{:08x}", one.encode().len());
        assert_eq!(hex(&g.encode()), format!("020200{len}{d}03{len}{d}"));
        assert_eq!(ContainerGroup::decode(&g.encode()).unwrap(), g);
    }

    #[test]
    fn short_layout_is_pinned() {
        let d = ContainerDelta {
            set: [65_537, 65_541].into_iter().collect(),
            clear: [65_538].into_iter().collect(),
        };
        // 03, container 1, two set, one cleared, then 1 5 and 2.
        assert_eq!(hex(&d.encode()), "03000100020001000100050002");
        assert_eq!(ContainerDelta::decode(&d.encode()).unwrap(), d);
        // A repeated column is refused.
        assert!(ContainerDelta::decode(&[3, 0, 0, 0, 2, 0, 0, 0, 1, 0, 1]).is_err());
    }

    #[test]
    fn layout_is_pinned() {
        // Past the short form's limit: roaring's portable format.
        let mut d = ContainerDelta {
            set: bitmap(&[1, 5]),
            clear: bitmap(&[2]),
        };
        d.clear
            .insert_range(100..100 + u32::try_from(SHORT_LIMIT).unwrap());
        // Roaring's portable format (RoaringFormatSpec): cookie 12346,
        // one container, key 0, cardinality − 1, offsets, then the u16s.
        let set = "3a30000001000000000001001000000001000500";
        let clear_values: String = std::iter::once(2u16)
            .chain(100..100 + u16::try_from(SHORT_LIMIT).unwrap())
            .map(|v| hex(&v.to_le_bytes()))
            .collect();
        let clear = format!("3a3000000100000000004000{}{clear_values}", "10000000");
        let expected = format!("01{:08x}{set}{clear}", set.len() / 2);
        assert_eq!(hex(&d.encode()), expected);
        assert_eq!(ContainerDelta::decode(&d.encode()).unwrap(), d);
    }

    #[test]
    fn columns_of_two_containers_are_refused() {
        let d = ContainerDelta {
            set: [CONTAINER_BITS + 1].into_iter().collect(),
            clear: [3].into_iter().collect(),
        };
        let err = ContainerDelta::decode(&d.encode()).unwrap_err();
        assert!(err.to_string().contains("more than one container"), "{err}");
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }
}
