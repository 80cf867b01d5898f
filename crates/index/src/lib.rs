//! Field indexes: roaring bitmaps under FeatureBase txkeys, kept in the
//! same atomic write as every commit, and the `--where` queries over them.
//!
//! Layout (`docs/storage-keys.md`, `docs/indexes.md`): each indexed
//! collection has a *scope* (a `u32`, the txkey's index name in decimal);
//! each record of it a *column* (dense, first-written order, never reused).
//! Bitmap rows live in containers of 2^16 columns under record type `0x6`:
//!
//! - `.columns` / `existence`, row 0: the collection's live columns;
//! - a keyword index at `path`: field `path`, view `standard`, one row per
//!   dictionary value (record types `0xB`/`0xC`), and view `existence`,
//!   row 0: records with a value;
//! - an integer or datetime index: field `path`, view `bsig_<path>`, a
//!   bit-sliced index per *slot* (the n-th value at the path): rows
//!   `66·slot + 0` exists, `+ 1` sign, `+ 2 + i` magnitude bit `i`; and the
//!   `existence` view as for keywords.
//!
//! A `$` in a path is written `=24` in txkey names (FeatureBase reserves `$`).
//!
//! What is here, by module: `values` (index kinds, keyword and number
//! values of a record), `cbor` (values read straight from dag-cbor bytes),
//! `query` (the `--where` language), `columns` (rkey ↔ column), `build`
//! (a whole scope from a tree or a record stream), `maintain` (one
//! commit's changes), `eval` (plans and bitmap evaluation) and `cache`.
//! The crate knows stores and trees, not repositories: the `repo` crate
//! declares indexes, holds the cache and writes each commit's changes in
//! the commit's batch.

mod build;
mod cache;
mod cbor;
mod columns;
mod error;
mod eval;
mod maintain;
mod query;
mod values;

use std::collections::BTreeMap;

use bytes::Bytes;
use keycodec::{records, txkey};
use roaring::RoaringBitmap;
use serde::{Deserialize, Serialize};
use store::{ContainerDelta, ContainerGroup, Kv, WriteOp};

pub use error::Error;

pub use build::{
    BuildColumns, BuildProgress, BuiltRows, build_scope, compute_at, compute_given, compute_scope,
    write_built,
};

/// Entry points for the fuzz targets in `fuzz/`: decoders of stored bytes
/// that are otherwise internal. Not a stable API.
#[doc(hidden)]
pub mod fuzzing {
    /// Per path, its values (`None`: no answer).
    pub type PathValues = Option<Vec<Vec<serde_json::Value>>>;

    /// Decodes `bytes` as a packed column block and as a fence chunk;
    /// whether each was accepted.
    #[must_use]
    pub fn packed_columns(bytes: &[u8]) -> (bool, bool) {
        crate::columns::fuzz_decode(bytes)
    }

    /// The values an index build reads at each of `paths` in a record's
    /// dag-cbor `bytes`, straight from the bytes (`None`: left to the JSON
    /// walk) and by the JSON walk (`None`: not dag-cbor); they must agree
    /// when both answer.
    #[must_use]
    pub fn index_values(bytes: &[u8], paths: &[&str]) -> (PathValues, PathValues) {
        crate::fuzz_index_values(bytes, paths)
    }
}

/// See [`fuzzing::index_values`]: the walk's keepable leaves (strings,
/// booleans, `i64`s; `null` for anything else) and the JSON walk's values
/// mapped alike (`None` when the bytes are not dag-cbor).
fn fuzz_index_values(bytes: &[u8], paths: &[&str]) -> (fuzzing::PathValues, fuzzing::PathValues) {
    use serde_json::Value;
    let segments: Vec<Vec<&str>> = paths.iter().map(|p| p.split('.').collect()).collect();
    let mut outs = vec![Vec::new(); paths.len()];
    let walked = cbor::leaves_at_each(bytes, &segments, &mut outs)
        .ok()
        .map(|()| {
            outs.iter()
                .map(|leaves| {
                    leaves
                        .iter()
                        .map(|l| match l {
                            cbor::Leaf::Str(s) => Value::String((*s).to_owned()),
                            cbor::Leaf::Bool(b) => Value::Bool(*b),
                            cbor::Leaf::Int(i) => Value::from(*i),
                            cbor::Leaf::Other => Value::Null,
                        })
                        .collect()
                })
                .collect()
        });
    let Ok(ipld) = serde_ipld_dagcbor::from_slice::<ipld_core::ipld::Ipld>(bytes) else {
        return (walked, None);
    };
    let json = datamodel::ipld_to_json(&ipld);
    let by_json = paths
        .iter()
        .map(|p| {
            values::values_at(&json, p)
                .into_iter()
                .map(|v| match v {
                    Value::String(_) | Value::Bool(_) => v.clone(),
                    Value::Number(n) => n.as_i64().map_or(Value::Null, Value::from),
                    _ => Value::Null,
                })
                .collect()
        })
        .collect();
    (walked, Some(by_json))
}

/// Rows computed ahead of a rebuild, by collection, with the declarations
/// they were computed for.
pub type ComputedScopes = std::collections::HashMap<String, (Vec<Declared>, BuiltRows)>;
pub use cache::IndexCache;
pub use columns::{Packed, Walk, column_of, differences as column_differences, load_packed};
pub use eval::{Reader, plan as eval_plan};
pub use maintain::{CommitIndex, IndexWrite, KNOWN_ROWS_LIMIT, KnownRows, ScopeCounters};
pub use query::{Cmp, Cond, Expr, Literal, Op, parse as parse_where};
pub use values::{IndexKind, Keyword};

/// Columns per shard (FeatureBase's shard width, 2^20).
const SHARD_BITS: u32 = 20;
/// Containers per row of one shard (2^20 / 2^16).
const CONTAINERS_PER_ROW: u64 = 16;
/// Rows of one bit-sliced slot: exists, sign, 64 magnitude bits.
const BSI_ROWS_PER_SLOT: u64 = 66;
/// The field holding the collection's live columns.
const COLUMNS_FIELD: &str = ".columns";
const EXISTENCE_VIEW: &str = "existence";
const STANDARD_VIEW: &str = "standard";

/// A declared field index.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IndexDecl {
    /// The collection.
    pub collection: String,
    /// The path into its records (segments joined by `.`).
    pub path: String,
    /// What it keeps.
    pub kind: IndexKind,
}

/// `--top`: one value and how many matching records have it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopValue {
    /// The value.
    pub value: Keyword,
    /// Matching records with it.
    pub count: u64,
}

/// `--stats`: over the indexed values of the matching records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    /// Values (a record with several contributes each).
    pub count: u64,
    /// Their exact sum.
    pub sum: i128,
    /// The smallest, absent when `count` is 0.
    pub min: Option<i64>,
    /// The largest, absent when `count` is 0.
    pub max: Option<i64>,
}

/// The stored value of a declaration (record type `0x8`).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct DeclValue {
    kind: String,
    scope: u32,
}

/// A declaration with the collection's scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    /// The declaration.
    pub decl: IndexDecl,
    /// Its collection's scope (the txkey index name).
    pub scope: u32,
}

/// The stored value of a declaration of `kind` in `scope` (record type
/// `0x8`).
pub fn encode_decl(kind: IndexKind, scope: u32) -> Bytes {
    let v = DeclValue {
        kind: kind.name().to_owned(),
        scope,
    };
    Bytes::from(serde_json::to_vec(&v).unwrap_or_default())
}

fn malformed(what: impl std::fmt::Display) -> Error {
    Error::MalformedIndex(what.to_string())
}

/// A repository's index epoch ([`records::index_epoch_key`]): a number
/// that every change to the indexes other than a commit raises, and whether
/// the records changed under the indexes (an import) with their rebuild not
/// finished. Stored as the number (`u64`, big-endian), then `01` while a
/// rebuild is pending.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Epoch {
    /// The number, raised by every index change other than a commit.
    pub number: u64,
    /// Whether an import changed the records and the rebuild is not done.
    pub rebuild_pending: bool,
}

impl Epoch {
    fn decode(v: &[u8]) -> Result<Self, Error> {
        let (number, pending) = match v {
            [n @ .., 1] if n.len() == 8 => (n, true),
            n => (n, false),
        };
        let number = <[u8; 8]>::try_from(number)
            .map(u64::from_be_bytes)
            .map_err(|_| malformed("the index epoch is not 8 bytes and a flag"))?;
        Ok(Self {
            number,
            rebuild_pending: pending,
        })
    }

    /// The write that replaces this epoch of `repo` with the next, as
    /// [`raise_epoch`] describes.
    pub fn raised(self, repo: &str, rebuild_pending: Option<bool>) -> WriteOp {
        let next = Self {
            number: self.number.wrapping_add(1),
            rebuild_pending: rebuild_pending.unwrap_or(self.rebuild_pending),
        };
        WriteOp::Put(records::index_epoch_key(repo), next.encode())
    }

    fn encode(self) -> Bytes {
        let mut out = self.number.to_be_bytes().to_vec();
        if self.rebuild_pending {
            out.push(1);
        }
        Bytes::from(out)
    }
}

/// A repository's index epoch (number 0, nothing pending, before the first
/// change).
pub async fn epoch<K: Kv>(kv: &K, repo: &str) -> Result<Epoch, Error> {
    match kv.get(&records::index_epoch_key(repo)).await? {
        None => Ok(Epoch::default()),
        Some(v) => Epoch::decode(&v),
    }
}

/// The write that raises a repository's index epoch, for the batch that
/// changes its indexes; `rebuild_pending` sets or clears the flag (`None`
/// keeps it). The caller holds the repository's write lock, so no other
/// change reads the same epoch.
pub async fn raise_epoch<K: Kv>(
    kv: &K,
    repo: &str,
    rebuild_pending: Option<bool>,
) -> Result<WriteOp, Error> {
    Ok(epoch(kv, repo).await?.raised(repo, rebuild_pending))
}

/// The declarations of a repository, or of one of its collections.
pub async fn declarations<K: Kv>(
    kv: &K,
    repo: &str,
    collection: Option<&str>,
) -> Result<Vec<Declared>, Error> {
    let rows = kv
        .scan(
            &records::field_index_range(repo, collection),
            false,
            usize::MAX,
        )
        .await?;
    rows.iter()
        .filter_map(|(k, v)| match records::decode_key(k) {
            Ok(records::DecodedKey::IndexEpoch { .. }) => None,
            Ok(records::DecodedKey::FieldIndex {
                collection, path, ..
            }) => Some(declared(&collection, &path, v)),
            _ => Some(Err(malformed("a field-index key does not decode"))),
        })
        .collect()
}

/// One stored declaration: `collection`'s index on `path`, its value `v`.
fn declared(collection: &str, path: &str, v: &[u8]) -> Result<Declared, Error> {
    let bad = |e: String| malformed(format!("declaration of {collection} {path}: {e}"));
    let value: DeclValue = serde_json::from_slice(v).map_err(|e| bad(e.to_string()))?;
    let kind = value.kind.parse().map_err(|e: String| bad(e))?;
    Ok(Declared {
        decl: IndexDecl {
            collection: collection.to_owned(),
            path: path.to_owned(),
            kind,
        },
        scope: value.scope,
    })
}

/// A repository's declarations grouped by collection (one scope each), in
/// collection order.
pub async fn declarations_by_collection<K: Kv>(
    kv: &K,
    repo: &str,
) -> Result<BTreeMap<String, Vec<Declared>>, Error> {
    let mut by_collection: BTreeMap<String, Vec<Declared>> = BTreeMap::new();
    for d in declarations(kv, repo, None).await? {
        by_collection
            .entry(d.decl.collection.clone())
            .or_default()
            .push(d);
    }
    Ok(by_collection)
}

/// The txkey field name of a path.
pub fn field_name(path: &str) -> String {
    path.replace('$', "=24")
}

fn bsi_view(path: &str) -> String {
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

fn txkey_bytes(
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
fn row_range(scope: u32, row: &RowId, shard: u64) -> Result<keycodec::KeyRange, Error> {
    let lo = row.row * CONTAINERS_PER_ROW;
    let start = txkey_bytes(scope, &row.field, &row.view, shard, lo)?;
    let end = txkey_bytes(scope, &row.field, &row.view, shard, lo + CONTAINERS_PER_ROW)?;
    Ok(keycodec::KeyRange {
        start,
        end: Some(end),
    })
}

/// Every container key of one view in one shard.
fn view_range(
    scope: u32,
    field: &str,
    view: &str,
    shard: u64,
) -> Result<keycodec::KeyRange, Error> {
    let prefix = txkey::full::prefix(&scope.to_string(), field, view, shard)
        .map_err(|e| malformed(format!("txkey for {field};{view}: {e}")))?;
    Ok(keycodec::KeyRange::prefix(&records::bitmap_key(&prefix)))
}

/// Every container key of one field (all views, all shards).
fn field_range(scope: u32, field: &str) -> Result<keycodec::KeyRange, Error> {
    let prefix = txkey::full::field_prefix(&scope.to_string(), field)
        .map_err(|e| malformed(format!("txkey for {field}: {e}")))?;
    Ok(keycodec::KeyRange::prefix(&records::bitmap_key(&prefix)))
}

/// Every container key of a scope.
fn scope_bitmap_range(scope: u32) -> Result<keycodec::KeyRange, Error> {
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

fn is_bsi_view(view: &str) -> bool {
    view.starts_with("bsig_")
}

/// For a row of a bit-sliced view: the key's row (its slot) and the row's
/// number within the slot's group; `None` for rows stored alone.
fn grouped(row: &RowId) -> Option<(RowId, u8)> {
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

fn hex(b: &[u8]) -> String {
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

/// A scope number no declaration and no stored column uses.
pub async fn free_scope<K: Kv>(kv: &K) -> Result<u32, Error> {
    let mut max: Option<u32> = None;
    for (k, v) in kv
        .scan(&records::RecordType::FieldIndex.range(), false, usize::MAX)
        .await?
    {
        if let Ok(records::DecodedKey::FieldIndex { .. }) = records::decode_key(&k)
            && let Ok(d) = serde_json::from_slice::<DeclValue>(&v)
        {
            max = max.max(Some(d.scope));
        }
    }
    for t in [records::RecordType::Column, records::RecordType::ColumnRkey] {
        if let Some((k, _)) = kv.scan(&t.range(), true, 1).await?.into_iter().next()
            && let Ok(
                records::DecodedKey::Column { scope, .. }
                | records::DecodedKey::ColumnRkey { scope, .. },
            ) = records::decode_key(&k)
        {
            max = max.max(Some(scope));
        }
    }
    match max {
        None => Ok(0),
        Some(m) => m
            .checked_add(1)
            .ok_or_else(|| malformed("every index scope number is in use")),
    }
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

#[cfg(test)]
mod tests {
    use super::Epoch;

    /// The value layout `docs/storage-keys.md` gives: the number, then `01`
    /// while a rebuild is pending.
    #[test]
    fn the_epoch_value_is_pinned() {
        let plain = Epoch {
            number: 0x0102,
            rebuild_pending: false,
        };
        let pending = Epoch {
            rebuild_pending: true,
            ..plain
        };
        assert_eq!(&plain.encode()[..], b"\0\0\0\0\0\0\x01\x02");
        assert_eq!(&pending.encode()[..], b"\0\0\0\0\0\0\x01\x02\x01");
        assert_eq!(Epoch::decode(&plain.encode()).unwrap(), plain);
        assert_eq!(Epoch::decode(&pending.encode()).unwrap(), pending);
        for bad in [&b"\0\0\0\0\0\0\x01"[..], b"\0\0\0\0\0\0\x01\x02\x02", b""] {
            assert!(Epoch::decode(bad).is_err(), "{bad:?}");
        }
    }
}
