//! Bitmap rows: their ids, their txkeys, containers, and writing and
//! deleting them.

use std::collections::BTreeMap;

use keycodec::{records, txkey};
use roaring::RoaringBitmap;
use store::{ContainerDelta, ContainerGroup, Kv, WriteOp};

use crate::error::{Error, malformed};

/// Columns per shard (FeatureBase's shard width, 2^20).
pub(crate) const SHARD_BITS: u32 = 20;

/// Containers per row of one shard (2^20 / 2^16).
pub(crate) const CONTAINERS_PER_ROW: u64 = 16;

/// Rows of one bit-sliced slot: exists, sign, 64 magnitude bits.
pub(crate) const BSI_ROWS_PER_SLOT: u64 = 66;

/// The field holding the collection's live columns.
pub(crate) const COLUMNS_FIELD: &str = ".columns";

pub(crate) const EXISTENCE_VIEW: &str = "existence";

pub(crate) const STANDARD_VIEW: &str = "standard";

/// The txkey field name of a path.
pub fn field_name(path: &str) -> String {
    path.replace('$', "=24")
}

pub(crate) fn bsi_view(path: &str) -> String {
    format!("bsig_{}", field_name(path))
}

/// One bitmap row: (field, view, row).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RowId {
    /// The txkey field (the path, or `.columns`).
    pub field: String,
    /// The txkey view (`standard`, `existence`, `bsig_<path>`).
    pub view: String,
    /// The row within the view.
    pub row: u64,
}

impl RowId {
    /// The row of a collection's live columns.
    pub fn columns() -> Self {
        Self {
            field: COLUMNS_FIELD.to_owned(),
            view: EXISTENCE_VIEW.to_owned(),
            row: 0,
        }
    }

    /// The row of records with a value at `path`.
    pub fn existence(path: &str) -> Self {
        Self {
            field: field_name(path),
            view: EXISTENCE_VIEW.to_owned(),
            row: 0,
        }
    }

    /// The row of dictionary value `row` of the keyword index at `path`.
    pub fn keyword(path: &str, row: u64) -> Self {
        Self {
            field: field_name(path),
            view: STANDARD_VIEW.to_owned(),
            row,
        }
    }

    /// Row `row` of the bit-sliced index at `path`.
    pub fn bsi(path: &str, row: u64) -> Self {
        Self {
            field: field_name(path),
            view: bsi_view(path),
            row,
        }
    }
}

pub(crate) fn txkey_bytes(
    scope: u32,
    field: &str,
    view: &str,
    shard: u64,
    ckey: u64,
) -> Result<Vec<u8>, Error> {
    txkey::full::key(&scope.to_string(), field, view, shard, ckey)
        .map(|k| records::bitmap_key(&k))
        .map_err(|e| malformed(format!("txkey for {field};{view}: {e}")))
}

/// The storage key of the container holding `column`'s bit of `row`.
pub fn container_key(scope: u32, row: &RowId, column: u32) -> Result<Vec<u8>, Error> {
    let shard = u64::from(column >> SHARD_BITS);
    let within = u64::from((column >> 16) & 0xF);
    let ckey = row
        .row
        .checked_mul(CONTAINERS_PER_ROW)
        .and_then(|c| c.checked_add(within))
        .ok_or_else(|| malformed("row id out of range"))?;
    txkey_bytes(scope, &row.field, &row.view, shard, ckey)
}

/// The keys of one row's containers in one shard.
pub(crate) fn row_range(scope: u32, row: &RowId, shard: u64) -> Result<keycodec::KeyRange, Error> {
    let lo = row.row * CONTAINERS_PER_ROW;
    let start = txkey_bytes(scope, &row.field, &row.view, shard, lo)?;
    let end = txkey_bytes(scope, &row.field, &row.view, shard, lo + CONTAINERS_PER_ROW)?;
    Ok(keycodec::KeyRange {
        start,
        end: Some(end),
    })
}

/// Every container key of one view, all shards (a shard's keys follow
/// the shard before it: the shard is big-endian in the key).
pub(crate) fn view_range(scope: u32, field: &str, view: &str) -> Result<keycodec::KeyRange, Error> {
    let prefix = txkey::full::all_shard_prefix(&scope.to_string(), field, view)
        .map_err(|e| malformed(format!("txkey for {field};{view}: {e}")))?;
    Ok(keycodec::KeyRange::prefix(&records::bitmap_key(&prefix)))
}

/// Every container key of one field (all views, all shards).
pub(crate) fn field_range(scope: u32, field: &str) -> Result<keycodec::KeyRange, Error> {
    let prefix = txkey::full::field_prefix(&scope.to_string(), field)
        .map_err(|e| malformed(format!("txkey for {field}: {e}")))?;
    Ok(keycodec::KeyRange::prefix(&records::bitmap_key(&prefix)))
}

/// Every container key of a scope.
pub(crate) fn scope_bitmap_range(scope: u32) -> Result<keycodec::KeyRange, Error> {
    let prefix = txkey::full::index_only_prefix(&scope.to_string())
        .map_err(|e| malformed(format!("txkey for scope {scope}: {e}")))?;
    Ok(keycodec::KeyRange::prefix(&records::bitmap_key(&prefix)))
}

/// The containers of `bits`: (`column >> 16`, the columns of that container).
pub fn split_containers(bits: &RoaringBitmap) -> Vec<(u32, RoaringBitmap)> {
    let mut out = Vec::new();
    let mut next = bits.min();
    while let Some(first) = next {
        let high = first >> 16;
        let lo = high << 16;
        let hi = u64::from(lo) + (1 << 16);
        let mut mask = RoaringBitmap::new();
        mask.insert_range(lo..=lo | 0xFFFF);
        let part = bits & &mask;
        out.push((high, part));
        next = u32::try_from(hi).ok().and_then(|from| {
            let mut it = bits.iter();
            it.advance_to(from);
            it.next()
        });
    }
    out
}

/// Changes to bitmap rows: per row, the columns set and cleared.
#[derive(Debug, Default, Clone)]
pub struct RowDeltas(pub BTreeMap<RowId, ContainerDelta>);

impl RowDeltas {
    /// Sets `column` in `row`.
    pub fn set(&mut self, row: RowId, column: u32) {
        let d = self.0.entry(row).or_default();
        d.clear.remove(column);
        d.set.insert(column);
    }

    /// Clears `column` in `row`.
    pub fn clear(&mut self, row: RowId, column: u32) {
        let d = self.0.entry(row).or_default();
        d.set.remove(column);
        d.clear.insert(column);
    }

    /// Merge operations, one per changed container (one per slot and
    /// container for bit-sliced views, whose slot rows share a key).
    pub fn merge_ops(&self, scope: u32, ops: &mut Vec<WriteOp>) -> Result<(), Error> {
        let mut groups: BTreeMap<(RowId, u32), ContainerGroup> = BTreeMap::new();
        for (row, delta) in &self.0 {
            let mut per: BTreeMap<u32, ContainerDelta> = BTreeMap::new();
            for c in &delta.set {
                per.entry(c >> 16).or_default().set.insert(c);
            }
            for c in &delta.clear {
                per.entry(c >> 16).or_default().clear.insert(c);
            }
            for (high, d) in per {
                match grouped(row) {
                    Some((slot_row, within)) => {
                        groups
                            .entry((slot_row, high))
                            .or_default()
                            .rows
                            .insert(within, d);
                    }
                    None => ops.push(WriteOp::Merge(
                        container_key(scope, row, high << 16)?,
                        d.encode(),
                    )),
                }
            }
        }
        for ((slot_row, high), group) in groups {
            ops.push(WriteOp::Merge(
                container_key(scope, &slot_row, high << 16)?,
                group.encode(),
            ));
        }
        Ok(())
    }
}

pub(crate) fn is_bsi_view(view: &str) -> bool {
    view.starts_with("bsig_")
}

/// For a row of a bit-sliced view: the key's row (its slot) and the row's
/// number within the slot's group; `None` for rows stored alone.
pub(crate) fn grouped(row: &RowId) -> Option<(RowId, u8)> {
    if !is_bsi_view(&row.view) {
        return None;
    }
    let within = u8::try_from(row.row % BSI_ROWS_PER_SLOT).ok()?;
    Some((
        RowId {
            row: row.row / BSI_ROWS_PER_SLOT,
            ..row.clone()
        },
        within,
    ))
}

/// The rows a stored container value holds, with the columns each sets,
/// checked against its key (a group's rows, or the one row).
pub fn decode_container(key: &[u8], value: &[u8]) -> Result<Vec<(RowId, RoaringBitmap)>, Error> {
    let tx = txkey::full::Key::parse(key.get(2..).unwrap_or_default())
        .map_err(|e| malformed(format!("bitmap key: {e}")))?;
    let high = tx.shard * CONTAINERS_PER_ROW + tx.ckey % CONTAINERS_PER_ROW;
    let check = |c: Option<u32>| match c {
        Some(c) if u64::from(c) != high => Err(malformed(format!(
            "the container under {} holds columns of another",
            hex(key)
        ))),
        _ => Ok(()),
    };
    let key_row = tx.ckey / CONTAINERS_PER_ROW;
    let row = |r: u64| RowId {
        field: tx.field.to_owned(),
        view: tx.view.to_owned(),
        row: r,
    };
    if is_bsi_view(tx.view) {
        let group = ContainerGroup::decode(value)
            .map_err(|e| malformed(format!("{e} (key {})", hex(key))))?;
        check(group.container())?;
        Ok(group
            .rows
            .into_iter()
            .map(|(within, d)| (row(key_row * BSI_ROWS_PER_SLOT + u64::from(within)), d.set))
            .collect())
    } else {
        let delta = ContainerDelta::decode(value)
            .map_err(|e| malformed(format!("{e} (key {})", hex(key))))?;
        check(delta.container())?;
        Ok(vec![(row(key_row), delta.set)])
    }
}

pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Full containers for whole rows (an index build): put, not merged. The
/// rows of one bit-sliced slot must come together (they share keys); a
/// slot's containers are made when its last row has come.
pub fn put_rows(
    scope: u32,
    rows: impl IntoIterator<Item = (RowId, RoaringBitmap)>,
    ops: &mut Vec<WriteOp>,
) -> Result<usize, Error> {
    let start = ops.len();
    // The current slot's containers, by `column >> 16`.
    type Slot = Option<(RowId, BTreeMap<u32, ContainerGroup>)>;
    let end_slot = |slot: &mut Slot, ops: &mut Vec<WriteOp>| -> Result<(), Error> {
        if let Some((slot_row, groups)) = slot.take() {
            for (high, group) in groups {
                ops.push(WriteOp::Put(
                    container_key(scope, &slot_row, high << 16)?,
                    group.encode(),
                ));
            }
        }
        Ok(())
    };
    let mut slot: Slot = None;
    for (row, bits) in rows {
        let Some((slot_row, within)) = grouped(&row) else {
            end_slot(&mut slot, ops)?;
            for (high, part) in split_containers(&bits) {
                let key = container_key(scope, &row, high << 16)?;
                ops.push(WriteOp::Put(key, ContainerDelta::full(part).encode()));
            }
            continue;
        };
        if slot.as_ref().is_none_or(|(s, _)| *s != slot_row) {
            end_slot(&mut slot, ops)?;
            slot = Some((slot_row, BTreeMap::new()));
        }
        let Some((_, groups)) = slot.as_mut() else {
            unreachable!("a slot was just started")
        };
        for (high, part) in split_containers(&bits) {
            groups
                .entry(high)
                .or_default()
                .rows
                .insert(within, ContainerDelta::full(part));
        }
    }
    end_slot(&mut slot, ops)?;
    Ok(ops[start..]
        .iter()
        .map(|op| match op {
            WriteOp::Put(k, v) => k.len() + v.len(),
            _ => 0,
        })
        .sum())
}

/// Deletes every key in `range`, in batches.
pub async fn delete_range<K: Kv>(kv: &K, range: &keycodec::KeyRange) -> Result<(), Error> {
    loop {
        let page = kv.scan(range, false, 4096).await?;
        if page.is_empty() {
            return Ok(());
        }
        let n = page.len();
        kv.write(
            page.into_iter()
                .map(|(k, _)| WriteOp::Delete(k.to_vec()))
                .collect(),
        )
        .await?;
        if n < 4096 {
            return Ok(());
        }
    }
}

/// Deletes an index's containers and dictionary.
pub async fn delete_index_data<K: Kv>(kv: &K, scope: u32, path: &str) -> Result<(), Error> {
    delete_range(kv, &field_range(scope, &field_name(path))?).await?;
    for t in [
        records::RecordType::KeywordRow,
        records::RecordType::KeywordValue,
    ] {
        delete_range(kv, &records::scope_range(t, scope, Some(path))).await?;
    }
    Ok(())
}

/// Deletes everything of a scope: containers, columns, dictionaries.
pub async fn delete_scope<K: Kv>(kv: &K, scope: u32) -> Result<(), Error> {
    delete_range(kv, &scope_bitmap_range(scope)?).await?;
    for t in [
        records::RecordType::Column,
        records::RecordType::ColumnRkey,
        records::RecordType::KeywordRow,
        records::RecordType::KeywordValue,
    ] {
        delete_range(kv, &records::scope_range(t, scope, None)).await?;
    }
    Ok(())
}

/// Decodes a stored column value (`u64`, big-endian).
pub fn decode_column(v: &[u8]) -> Result<u32, Error> {
    let bytes: [u8; 8] = v
        .try_into()
        .map_err(|_| malformed("a column value is not 8 bytes"))?;
    u32::try_from(u64::from_be_bytes(bytes)).map_err(|_| malformed("a column id is past 2^32"))
}

/// Calls `visit` with each stored container of a scope, in key order: its
/// key and the rows it holds, with the columns each sets.
pub async fn for_each_stored_container<K: Kv>(
    kv: &K,
    scope: u32,
    mut visit: impl FnMut(&[u8], Vec<(RowId, RoaringBitmap)>) -> Result<(), Error>,
) -> Result<(), Error> {
    let range = scope_bitmap_range(scope)?;
    let mut start = range.start.clone();
    loop {
        let page = kv
            .scan(
                &keycodec::KeyRange {
                    start: start.clone(),
                    end: range.end.clone(),
                },
                false,
                4096,
            )
            .await?;
        for (k, v) in &page {
            visit(k, decode_container(k, v)?)?;
        }
        match page.last() {
            Some((k, _)) if page.len() == 4096 => start = [k.as_ref(), &[0]].concat(),
            _ => return Ok(()),
        }
    }
}

/// Whether `row` is one of a bit-sliced view's (stored in groups, a slot's
/// rows to a key).
pub fn is_bsi_row(row: &RowId) -> bool {
    is_bsi_view(&row.view)
}
