//! A commit's index changes: written blind (merge operands and new
//! dictionary and column entries), never read-modify-write of a bitmap.

use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
};

use bytes::Bytes;
use keycodec::records;
use serde_json::Value;
use store::{Kv, WriteOp};

use crate::{
    columns::{self, Packed},
    decl::Declared,
    error::{Error, malformed},
    rows::{BSI_ROWS_PER_SLOT, RowDeltas, RowId, decode_column},
    values::{IndexKind, Keyword, has_string, keywords, numbers},
    words::text_words,
};

/// A scope's allocation state, as the writer keeps it between commits.
#[derive(Debug, Clone, Default)]
pub struct ScopeCounters {
    loaded: bool,
    next_column: u64,
    max_rkey: Option<String>,
    next_row: HashMap<String, u64>,
    /// The scope's packed column mapping (a build's; never rewritten).
    packed: Arc<Packed>,
}

async fn load<K: Kv>(kv: &K, scope: u32, c: &mut ScopeCounters) -> Result<(), Error> {
    if c.loaded {
        return Ok(());
    }
    let packed = columns::load_packed(kv, scope).await?;
    c.next_column = columns::max_column(kv, scope, &packed)
        .await?
        .map_or(0, |m| m + 1);
    c.max_rkey = columns::max_rkey(kv, scope, &packed).await?;
    c.packed = Arc::new(packed);
    c.loaded = true;
    Ok(())
}

async fn next_row<K: Kv>(
    kv: &K,
    scope: u32,
    path: &str,
    c: &mut ScopeCounters,
) -> Result<u64, Error> {
    if let Some(n) = c.next_row.get_mut(path) {
        let row = *n;
        *n += 1;
        return Ok(row);
    }
    let range = records::scope_range(records::RecordType::KeywordValue, scope, Some(path));
    let row = match kv.scan(&range, true, 1).await?.into_iter().next() {
        Some((k, _)) => match records::decode_key(&k) {
            Ok(records::DecodedKey::KeywordValue { row, .. }) => row + 1,
            _ => return Err(malformed("a keyword-value key does not decode")),
        },
        None => 0,
    };
    c.next_row.insert(path.to_owned(), row + 1);
    Ok(row)
}

/// The index changes of one commit, built write by write.
#[derive(Debug, Default)]
pub struct CommitIndex {
    /// Row changes per scope.
    pub deltas: BTreeMap<u32, RowDeltas>,
    /// Column and dictionary entries.
    ops: Vec<WriteOp>,
    /// Working copies of the counters of the scopes touched.
    pub counters: HashMap<u32, ScopeCounters>,
    /// Columns as of this commit's earlier writes (`None`: deleted).
    columns: HashMap<(u32, String), Option<u32>>,
    /// Dictionary rows this commit read or allocated.
    rows: KnownRows,
}

/// Dictionary rows by (scope, path, value), as the writer remembers them
/// between commits: only rows whose entries are stored.
pub type KnownRows = HashMap<(u32, String, Keyword), u64>;

/// How many dictionary rows the writer remembers before it starts over.
pub const KNOWN_ROWS_LIMIT: usize = 1 << 16;

fn column_u32(c: u64) -> Result<u32, Error> {
    u32::try_from(c).map_err(|_| {
        Error::MalformedIndex("a collection has used every one of its 2^32 index columns".into())
    })
}

/// A commit's index changes, ready to write: the operations, the row
/// changes per scope (for the cache) and the counters after them.
pub struct IndexWrite {
    /// The operations to write in the commit's batch.
    pub ops: Vec<WriteOp>,
    /// Row changes per scope, for the cache.
    pub deltas: BTreeMap<u32, RowDeltas>,
    /// Each scope's counters after the commit.
    pub counters: HashMap<u32, ScopeCounters>,
    /// Dictionary rows the commit read or wrote, to remember once it lands.
    pub rows: KnownRows,
}

impl CommitIndex {
    /// The operations to write with the commit.
    pub fn into_write(self) -> Result<IndexWrite, Error> {
        let mut ops = self.ops;
        for (scope, d) in &self.deltas {
            d.merge_ops(*scope, &mut ops)?;
        }
        Ok(IndexWrite {
            ops,
            deltas: self.deltas,
            counters: self.counters,
            rows: self.rows,
        })
    }

    async fn column<K: Kv>(
        &mut self,
        kv: &K,
        scope: u32,
        packed: &Packed,
        rkey: &str,
    ) -> Result<Option<u32>, Error> {
        if let Some(c) = self.columns.get(&(scope, rkey.to_owned())) {
            return Ok(*c);
        }
        columns::column_of(kv, scope, packed, rkey).await
    }

    #[allow(clippy::too_many_arguments)]
    async fn keyword_row<K: Kv>(
        &mut self,
        kv: &K,
        known: &KnownRows,
        scope: u32,
        path: &str,
        v: &Keyword,
        allocate: bool,
        counters: &mut ScopeCounters,
    ) -> Result<Option<u64>, Error> {
        let memo = (scope, path.to_owned(), v.clone());
        if let Some(r) = self.rows.get(&memo).or_else(|| known.get(&memo)) {
            return Ok(Some(*r));
        }
        let tagged = v.tagged();
        if let Some(bytes) = kv
            .get(&records::keyword_row_key(scope, path, &tagged))
            .await?
        {
            let row = u64::from(decode_column(&bytes)?);
            self.rows.insert(memo, row);
            return Ok(Some(row));
        }
        if !allocate {
            return Ok(None);
        }
        let row = next_row(kv, scope, path, counters).await?;
        self.ops.push(WriteOp::Put(
            records::keyword_row_key(scope, path, &tagged),
            Bytes::copy_from_slice(&row.to_be_bytes()),
        ));
        self.ops.push(WriteOp::Put(
            records::keyword_value_key(scope, path, row),
            Bytes::from(tagged),
        ));
        self.rows.insert(memo, row);
        Ok(Some(row))
    }

    /// Records one write: `rkey` of the collection whose indexes are
    /// `declared` (all of one scope) goes from `old` to `new` (`None`:
    /// absent).
    #[allow(clippy::too_many_arguments)]
    pub async fn record<K: Kv>(
        &mut self,
        kv: &K,
        saved: &HashMap<u32, ScopeCounters>,
        known: &KnownRows,
        declared: &[Declared],
        rkey: &str,
        old: Option<&Value>,
        new: Option<&Value>,
    ) -> Result<(), Error> {
        let Some(scope) = declared.first().map(|d| d.scope) else {
            return Ok(());
        };
        let mut counters = self.take_counters(scope, saved);
        let result = self
            .record_in(kv, known, scope, &mut counters, declared, rkey, old, new)
            .await;
        self.counters.insert(scope, counters);
        result
    }

    #[allow(clippy::too_many_arguments)]
    async fn record_in<K: Kv>(
        &mut self,
        kv: &K,
        known: &KnownRows,
        scope: u32,
        counters: &mut ScopeCounters,
        declared: &[Declared],
        rkey: &str,
        old: Option<&Value>,
        new: Option<&Value>,
    ) -> Result<(), Error> {
        load(kv, scope, counters).await?;
        // A record that did not exist has no column (deletes remove theirs),
        // unless an earlier write of this commit gave it one.
        let existing = match (old, self.columns.get(&(scope, rkey.to_owned()))) {
            (_, Some(c)) => *c,
            (None, None) => None,
            (Some(_), None) => {
                let packed = Arc::clone(&counters.packed);
                self.column(kv, scope, &packed, rkey).await?
            }
        };
        let column = match (existing, new) {
            (Some(c), _) => c,
            (None, Some(_)) => {
                let c = column_u32(counters.next_column)?;
                counters.next_column += 1;
                self.ops.push(WriteOp::Put(
                    records::column_key(scope, rkey),
                    Bytes::copy_from_slice(&u64::from(c).to_be_bytes()),
                ));
                self.ops.push(WriteOp::Put(
                    records::column_rkey_key(scope, u64::from(c)),
                    Bytes::copy_from_slice(rkey.as_bytes()),
                ));
                let deltas = self.deltas.entry(scope).or_default();
                if counters.max_rkey.as_deref().is_some_and(|m| rkey < m) {
                    deltas.set(
                        RowId {
                            row: 1,
                            ..RowId::columns()
                        },
                        c,
                    );
                }
                if counters.max_rkey.as_deref().is_none_or(|m| rkey > m) {
                    counters.max_rkey = Some(rkey.to_owned());
                }
                self.columns.insert((scope, rkey.to_owned()), Some(c));
                c
            }
            // A delete of a record with no column: nothing indexed.
            (None, None) => return Ok(()),
        };
        if new.is_some() {
            self.deltas
                .entry(scope)
                .or_default()
                .set(RowId::columns(), column);
        } else {
            let deltas = self.deltas.entry(scope).or_default();
            deltas.clear(RowId::columns(), column);
            deltas.clear(
                RowId {
                    row: 1,
                    ..RowId::columns()
                },
                column,
            );
            // A packed entry stays (blocks are not rewritten; no query
            // reaches its column, which is cleared from every row). Columns
            // past the packed ones have single entries.
            if u64::from(column) >= counters.packed.columns {
                self.ops
                    .push(WriteOp::Delete(records::column_key(scope, rkey)));
                self.ops.push(WriteOp::Delete(records::column_rkey_key(
                    scope,
                    u64::from(column),
                )));
            }
            self.columns.insert((scope, rkey.to_owned()), None);
        }
        self.values(kv, known, scope, counters, declared, column, old, new)
            .await
    }

    /// Records one write of a record of a scope whose columns the commits
    /// keep, to indexes `declared` that the commits did not maintain yet
    /// (an index added to an indexed collection, catching up with them):
    /// `old`'s values are cleared at `old_column` (where the build or an
    /// earlier catch-up set them), `new`'s set at `new_column` (the
    /// record's column now). No column is assigned or freed, and the
    /// collection's rows of columns are left as they are.
    #[allow(clippy::too_many_arguments)]
    pub async fn record_at_columns<K: Kv>(
        &mut self,
        kv: &K,
        saved: &HashMap<u32, ScopeCounters>,
        known: &KnownRows,
        declared: &[Declared],
        (old_column, old): (Option<u32>, Option<&Value>),
        (new_column, new): (Option<u32>, Option<&Value>),
    ) -> Result<(), Error> {
        let Some(scope) = declared.first().map(|d| d.scope) else {
            return Ok(());
        };
        let mut counters = self.take_counters(scope, saved);
        // Cleared where they were, then set where they are (a column that
        // stays gets both, which nets to the change).
        let mut result = Ok(());
        if let Some((c, o)) = old_column.zip(old) {
            result = self
                .values(kv, known, scope, &mut counters, declared, c, Some(o), None)
                .await;
        }
        if let (Ok(()), Some((c, n))) = (&result, new_column.zip(new)) {
            result = self
                .values(kv, known, scope, &mut counters, declared, c, None, Some(n))
                .await;
        }
        self.counters.insert(scope, counters);
        result
    }

    /// The working counters of `scope`: this commit's, else the writer's
    /// `saved` ones (put back in `self.counters` after use).
    fn take_counters(&mut self, scope: u32, saved: &HashMap<u32, ScopeCounters>) -> ScopeCounters {
        self.counters
            .remove(&scope)
            .unwrap_or_else(|| saved.get(&scope).cloned().unwrap_or_default())
    }

    /// The changes to the rows of indexes `declared` (one scope) when the
    /// record at `column` goes from `old` to `new`.
    #[allow(clippy::too_many_arguments)]
    async fn values<K: Kv>(
        &mut self,
        kv: &K,
        known: &KnownRows,
        scope: u32,
        counters: &mut ScopeCounters,
        declared: &[Declared],
        column: u32,
        old: Option<&Value>,
        new: Option<&Value>,
    ) -> Result<(), Error> {
        for d in declared {
            let path = d.decl.path.as_str();
            match d.decl.kind {
                kind @ (IndexKind::Keyword | IndexKind::Text) => {
                    let of = |v: &Value| match kind {
                        IndexKind::Text => text_words(v, path),
                        _ => keywords(v, path),
                    };
                    let before = old.map(of).unwrap_or_default();
                    let after = new.map(of).unwrap_or_default();
                    let mut set = Vec::new();
                    for v in &after {
                        if let Some(row) = self
                            .keyword_row(kv, known, scope, path, v, true, counters)
                            .await?
                        {
                            set.push(row);
                        }
                    }
                    let mut clear = Vec::new();
                    for v in before.iter().filter(|v| !after.contains(v)) {
                        if let Some(row) = self
                            .keyword_row(kv, known, scope, path, v, false, counters)
                            .await?
                        {
                            clear.push(row);
                        }
                    }
                    let deltas = self.deltas.entry(scope).or_default();
                    for row in clear {
                        deltas.clear(RowId::keyword(path, row), column);
                    }
                    for row in set {
                        deltas.set(RowId::keyword(path, row), column);
                    }
                    let (had, has) = match kind {
                        // A text index's records are those with a string
                        // at the path, words or not.
                        IndexKind::Text => (
                            old.is_some_and(|v| has_string(v, path)),
                            new.is_some_and(|v| has_string(v, path)),
                        ),
                        _ => (!before.is_empty(), !after.is_empty()),
                    };
                    existence(deltas, path, column, had, has);
                }
                kind => {
                    let before = old.map(|v| numbers(v, path, kind)).unwrap_or_default();
                    let after = new.map(|v| numbers(v, path, kind)).unwrap_or_default();
                    let deltas = self.deltas.entry(scope).or_default();
                    let slots = before.len().max(after.len());
                    for slot in 0..slots {
                        let old_rows = before
                            .get(slot)
                            .map(|v| bsi_rows(slot, *v))
                            .unwrap_or_default();
                        let new_rows = after
                            .get(slot)
                            .map(|v| bsi_rows(slot, *v))
                            .unwrap_or_default();
                        for row in old_rows.iter().filter(|r| !new_rows.contains(r)) {
                            deltas.clear(RowId::bsi(path, *row), column);
                        }
                        for row in new_rows {
                            deltas.set(RowId::bsi(path, row), column);
                        }
                    }
                    existence(deltas, path, column, !before.is_empty(), !after.is_empty());
                }
            }
        }
        Ok(())
    }
}

fn existence(deltas: &mut RowDeltas, path: &str, column: u32, before: bool, after: bool) {
    if after {
        deltas.set(RowId::existence(path), column);
    } else if before {
        deltas.clear(RowId::existence(path), column);
    }
}

/// The rows of a bit-sliced slot that are set for `value`.
pub(crate) fn bsi_rows(slot: usize, value: i64) -> Vec<u64> {
    let base = slot as u64 * BSI_ROWS_PER_SLOT;
    let mut rows = vec![base];
    if value < 0 {
        rows.push(base + 1);
    }
    let mag = value.unsigned_abs();
    rows.extend((0..64).filter(|i| mag >> i & 1 == 1).map(|i| base + 2 + i));
    rows
}
