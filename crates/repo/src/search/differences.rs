//! `check`'s index pass: indexes rebuilt in memory against what is
//! stored.

use std::collections::BTreeMap;

use bytes::Bytes;
use keycodec::records;
use roaring::RoaringBitmap;
use store::{Kv, WriteOp};

use index::IndexKind;

use crate::{error::Error, repository::state::Repository};

/// How a stored row is compared: keyword rows by their value, others by id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum RowName {
    Row(index::RowId),
    Value(String, index::Keyword),
}

/// One line per row that differs between `stored` and what a rebuild
/// computes (`expected`).
fn row_differences(
    collection: &str,
    stored: &BTreeMap<RowName, RoaringBitmap>,
    expected: &BTreeMap<RowName, RoaringBitmap>,
    out: &mut Vec<String>,
) {
    let columns = |bits: &RoaringBitmap| match (bits.min(), bits.max()) {
        (Some(lo), Some(hi)) if lo >> 16 == hi >> 16 => {
            format!(
                " in columns {}–{}",
                lo >> 16 << 16,
                (lo >> 16 << 16) | 0xFFFF
            )
        }
        _ => String::new(),
    };
    for (n, bits) in expected {
        match stored.get(n) {
            Some(s) if s == bits => {}
            Some(s) => out.push(format!(
                "{collection}: {n:?}{} holds {} records, a rebuild {} ({} differ)",
                columns(&(s | bits)),
                s.len(),
                bits.len(),
                (s ^ bits).len()
            )),
            None => out.push(format!(
                "{collection}: {n:?}{} is missing ({} records in a rebuild)",
                columns(bits),
                bits.len()
            )),
        }
    }
    for (n, s) in stored {
        if !expected.contains_key(n) {
            out.push(format!(
                "{collection}: {n:?}{} holds {} records that a rebuild does not",
                columns(s),
                s.len()
            ));
        }
    }
}

impl<K: Kv> Repository<K> {
    /// Rebuilds every index in memory from the records and compares it
    /// with what is stored; one line per difference (empty: they agree).
    ///
    /// # Errors
    ///
    /// A storage error, or [`Error::MalformedIndex`] for stored entries
    /// that cannot be read at all.
    pub async fn index_differences(&self) -> Result<Vec<String>, Error> {
        let _search = self.search.read().await;
        let kv = self.store.kv();
        let by_collection = index::declarations_by_collection(kv, &self.id).await?;
        let mut out = Vec::new();
        if self.index_rebuild_pending().await? {
            out.push(format!(
                "{}: a rebuild is pending (an import changed the records and did not finish \
                 rebuilding the indexes; queries refuse to answer): run `datarepo index rebuild`",
                self.id
            ));
        }
        for (collection, declared) in &by_collection {
            let scope = declared[0].scope;
            let mut built = match index::compute_scope(
                &self.store,
                &self.id,
                collection,
                scope,
                declared,
                false,
                |_| {},
            )
            .await
            {
                Ok(b) => b,
                Err(index::Error::MalformedIndex(why)) => {
                    out.push(format!("{collection}: {why}"));
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            // Columns: one per record, each naming its record back.
            let packed = index::load_packed(kv, scope).await?;
            for line in index::column_differences(kv, scope, &packed, &built.columns).await? {
                out.push(format!("{collection}: {line}"));
            }
            // Rows, keyword rows by value.
            let mut names: std::collections::HashMap<(String, u64), index::Keyword> =
                std::collections::HashMap::new();
            for d in declared
                .iter()
                .filter(|d| matches!(d.decl.kind, IndexKind::Keyword | IndexKind::Text))
            {
                let range = records::scope_range(
                    records::RecordType::KeywordValue,
                    scope,
                    Some(&d.decl.path),
                );
                for (k, v) in kv.scan(&range, false, usize::MAX).await? {
                    if let (Ok(records::DecodedKey::KeywordValue { row, .. }), Some(value)) =
                        (records::decode_key(&k), index::Keyword::from_tagged(&v))
                    {
                        names.insert((index::field_name(&d.decl.path), row), value);
                    }
                }
            }
            let paths: std::collections::HashMap<String, String> = declared
                .iter()
                .map(|d| (index::field_name(&d.decl.path), d.decl.path.clone()))
                .collect();
            let name = |row: index::RowId| -> RowName {
                if row.view == "standard" {
                    let path = paths.get(&row.field).cloned().unwrap_or_default();
                    match names.get(&(row.field.clone(), row.row)) {
                        Some(v) => RowName::Value(path, v.clone()),
                        None => RowName::Row(row),
                    }
                } else {
                    RowName::Row(row)
                }
            };
            // Rows stored alone (columns, existence, keyword rows) are
            // compared whole, keyword rows by value; bit-sliced rows
            // container by container, as stored: a record with many values
            // has as many slots, and whole rows would cost memory by slots ×
            // rows.
            let mut expected: BTreeMap<RowName, RoaringBitmap> = BTreeMap::new();
            let dictionaries = std::mem::take(&mut built.dictionaries);
            let mut sliced = Vec::new();
            let bsi_rows = built.into_all_rows().filter_map(|(row, bits)| {
                if index::is_bsi_row(&row) {
                    return Some((row, bits));
                }
                if !bits.is_empty() {
                    let n = if row.view == "standard" {
                        let path = paths.get(&row.field).cloned().unwrap_or_default();
                        let value = dictionaries[&path]
                            [usize::try_from(row.row).unwrap_or(usize::MAX)]
                        .clone();
                        RowName::Value(path, value)
                    } else {
                        RowName::Row(row)
                    };
                    expected.insert(n, bits);
                }
                None
            });
            index::put_rows(scope, bsi_rows, &mut sliced)?;
            let mut expected_sliced: BTreeMap<Vec<u8>, Bytes> = sliced
                .into_iter()
                .filter_map(|op| match op {
                    WriteOp::Put(k, v) => Some((k, v)),
                    _ => None,
                })
                .collect();
            let mut stored: BTreeMap<RowName, RoaringBitmap> = BTreeMap::new();
            index::for_each_stored_container(kv, scope, |key, rows| {
                if !rows.first().is_some_and(|(row, _)| index::is_bsi_row(row)) {
                    for (row, bits) in rows {
                        // Row 1 of the columns field marks out-of-order
                        // columns, which a rebuild does not recompute.
                        if row
                            != (index::RowId {
                                row: 1,
                                ..index::RowId::columns()
                            })
                            && !bits.is_empty()
                        {
                            *stored.entry(name(row)).or_default() |= bits;
                        }
                    }
                    return Ok(());
                }
                let want = match expected_sliced.remove(key) {
                    Some(value) => index::decode_container(key, &value)?,
                    None => Vec::new(),
                };
                let name_rows = |rows: Vec<(index::RowId, RoaringBitmap)>| {
                    rows.into_iter()
                        .filter(|(_, bits)| !bits.is_empty())
                        .map(|(row, bits)| (RowName::Row(row), bits))
                        .collect()
                };
                row_differences(collection, &name_rows(rows), &name_rows(want), &mut out);
                Ok(())
            })
            .await?;
            for (key, value) in expected_sliced {
                let missing = index::decode_container(&key, &value)?
                    .into_iter()
                    .map(|(row, bits)| (RowName::Row(row), bits))
                    .collect();
                row_differences(collection, &BTreeMap::new(), &missing, &mut out);
            }
            row_differences(collection, &stored, &expected, &mut out);
        }
        Ok(out)
    }
}
