//! Building indexes over a collection's records in bulk (`index add`, an
//! import, `check`): rows are assembled in memory and written as full
//! containers.

use std::{collections::BTreeMap, ops::ControlFlow};

use bytes::Bytes;
use cid::Cid;
use keycodec::records;
use pail::EntriesOptions;
use roaring::RoaringBitmap;
use store::{Kv, Store, WriteOp};

use crate::error::Error;
use crate::{
    cbor,
    columns::{self, Packed},
    decl::Declared,
    rows::{BSI_ROWS_PER_SLOT, COLUMNS_FIELD, RowId, put_rows},
    values::{
        IndexKind, Keyword, MAX_KEYWORD_BYTES, has_string, keywords, numbers, numbers_of_leaves,
    },
    words::{for_each_word, text_words},
};

/// One index's rows while a build reads the records.
#[derive(Default)]
struct Accumulator {
    existence: AppendedRow,
    /// Keyword rows by value (numbered in value order when the build ends).
    strings: foldhash::HashMap<String, AppendedRow>,
    bools: [AppendedRow; 2],
    /// The first slot's bit-sliced rows (every record's first value), by
    /// number within the slot.
    first_slot: DenseRows,
    /// The values in later slots (a record's second value on), as
    /// (slot, column, value): few records have them, so they are kept as
    /// values, 16 bytes each, and become rows one slot at a time as they
    /// are written ([`BuiltRows::into_all_rows`]). As rows they would
    /// cost a bitmap per set bit, and a dense buffer per row.
    later_slots: Vec<(u32, u32, i64)>,
}

/// Words per 2^16 columns.
const CHUNK_WORDS: usize = 1 << 10;

/// Rows whose bits mostly arrive in ascending column order (a fresh
/// build's): the bits of the current 2^16 columns are set in plain words,
/// made roaring containers when a column past them arrives. A column
/// before them goes straight into its row's bitmap.
#[derive(Default)]
struct DenseRows {
    rows: Vec<RoaringBitmap>,
    words: Vec<Box<[u64; CHUNK_WORDS]>>,
    touched: Vec<bool>,
    /// The current columns' `column >> 16`.
    chunk: Option<u32>,
}

impl DenseRows {
    fn set(&mut self, row: usize, column: u32) {
        if self.rows.len() <= row {
            self.rows.resize_with(row + 1, RoaringBitmap::new);
            self.words
                .resize_with(row + 1, || Box::new([0; CHUNK_WORDS]));
            self.touched.resize(row + 1, false);
        }
        let high = column >> 16;
        match self.chunk {
            Some(h) if h == high => {}
            Some(h) if high < h => {
                self.rows[row].insert(column);
                return;
            }
            _ => {
                self.flush();
                self.chunk = Some(high);
            }
        }
        let low = (column & 0xFFFF) as usize;
        self.words[row][low >> 6] |= 1 << (low & 63);
        self.touched[row] = true;
    }

    /// Moves the current columns' bits into the rows.
    fn flush(&mut self) {
        let Some(high) = self.chunk else { return };
        let mut bytes = vec![0u8; CHUNK_WORDS * 8];
        for ((row, words), touched) in self
            .rows
            .iter_mut()
            .zip(&mut self.words)
            .zip(&mut self.touched)
        {
            if !*touched {
                continue;
            }
            for (out, w) in bytes.chunks_exact_mut(8).zip(words.iter()) {
                out.copy_from_slice(&w.to_le_bytes());
            }
            *row |= RoaringBitmap::from_lsb0_bytes(high << 16, &bytes);
            words.fill(0);
            *touched = false;
        }
    }

    /// The rows, by number.
    fn finish(mut self) -> Vec<RoaringBitmap> {
        self.flush();
        self.rows
    }
}

impl Accumulator {
    /// Sets `column` in the row of keyword `s`, unless `s` is too long to
    /// be indexed; whether it was kept.
    fn string(&mut self, s: &str, column: u32) -> bool {
        if s.len() > MAX_KEYWORD_BYTES {
            return false;
        }
        self.word(s, column);
        true
    }

    /// Sets `column` in the row of `w`: a text index's word or a keyword,
    /// already within the keyword limit.
    fn word(&mut self, w: &str, column: u32) {
        match self.strings.get_mut(w) {
            Some(row) => row.add(column),
            None => {
                let mut row = AppendedRow::default();
                row.add(column);
                self.strings.insert(w.to_owned(), row);
            }
        }
    }

    fn boolean(&mut self, b: bool, column: u32) {
        self.bools[usize::from(b)].add(column);
    }

    /// Adds `value` at `column` in `slot` (the record's `slot`-th value).
    fn number(&mut self, slot: usize, value: i64, column: u32) {
        match u32::try_from(slot) {
            Ok(0) => {
                for row in slot_rows(value) {
                    self.first_slot.set(row, column);
                }
            }
            // A record has fewer than 2^32 values (it is at most a block).
            Ok(slot) => self.later_slots.push((slot, column, value)),
            Err(_) => {}
        }
    }

    /// The keyword rows in value order (the dictionary's row numbers).
    fn keywords(&mut self) -> Vec<(Keyword, RoaringBitmap)> {
        let mut out: Vec<(Keyword, RoaringBitmap)> = self
            .strings
            .drain()
            .map(|(s, row)| (Keyword::Str(s), row.finish()))
            .collect();
        for (b, bits) in [false, true]
            .into_iter()
            .zip(std::mem::take(&mut self.bools))
        {
            let bits = bits.finish();
            if !bits.is_empty() {
                out.push((Keyword::Bool(b), bits));
            }
        }
        out.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        out
    }
}

/// A row while a build reads the records (a keyword's, a word's, a
/// boolean's, an index's existence, the scope's columns): the columns
/// that arrive in ascending order (a build's mostly do) are appended to a
/// plain list and become containers a run at a time, so that setting a
/// bit is a push (a bitmap's own insert finds its container and place
/// each time: a third of a text index's build; its `try_push` into a
/// bitmap container finds the container's largest bit by scanning its
/// words from the end, which in a dense row is most of them). Others are
/// inserted.
#[derive(Default)]
struct AppendedRow {
    bits: RoaringBitmap,
    /// Strictly ascending.
    ascending: Vec<u32>,
}

impl AppendedRow {
    /// Columns appended before they are made containers.
    const RUN: usize = 4096;

    fn add(&mut self, column: u32) {
        match self.ascending.last() {
            Some(&last) if column == last => {}
            Some(&last) if column < last => {
                self.bits.insert(column);
            }
            _ => {
                self.ascending.push(column);
                if self.ascending.len() == Self::RUN {
                    self.append_run();
                }
            }
        }
    }

    fn append_run(&mut self) {
        // Strictly ascending, so never an error.
        if let Ok(run) = RoaringBitmap::from_sorted_iter(self.ascending.drain(..)) {
            self.bits |= run;
        }
    }

    fn finish(mut self) -> RoaringBitmap {
        self.append_run();
        self.bits
    }
}

/// Records read so far by a build.
#[derive(Debug, Clone, Copy, Default)]
pub struct BuildProgress {
    /// Records read.
    pub records: u64,
}

/// The rows within a slot that `value` sets: exists, sign when negative,
/// the magnitude's set bits.
fn slot_rows(value: i64) -> impl Iterator<Item = usize> {
    let mut magnitude = value.unsigned_abs();
    let bits = std::iter::from_fn(move || {
        (magnitude != 0).then(|| {
            let bit = magnitude.trailing_zeros() as usize;
            magnitude &= magnitude - 1;
            2 + bit
        })
    });
    std::iter::once(0)
        .chain((value < 0).then_some(1))
        .chain(bits)
}

/// The rows of a scope as a build computes them.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct BuiltRows {
    /// Rows by id; keyword rows are numbered by sorted value.
    pub rows: BTreeMap<RowId, RoaringBitmap>,
    /// Keyword dictionaries: path → values by row.
    pub dictionaries: BTreeMap<String, Vec<Keyword>>,
    /// (rkey, column) of every record, in rkey order.
    pub columns: Vec<(String, u32)>,
    /// Bit-sliced values past each record's first, by path: (slot,
    /// column, value), sorted. Their rows are made by
    /// [`BuiltRows::into_all_rows`], a slot at a time, so that a record
    /// with many values costs memory by its values, not by its rows.
    pub later_slots: BTreeMap<String, Vec<(u32, u32, i64)>>,
}

impl BuiltRows {
    /// Every row: [`BuiltRows::rows`], then the later slots' rows, made a
    /// slot at a time (a slot's rows come together, in row order).
    pub fn into_all_rows(self) -> impl Iterator<Item = (RowId, RoaringBitmap)> {
        let later = self
            .later_slots
            .into_iter()
            .flat_map(|(path, values)| later_slot_rows(path, values));
        self.rows.into_iter().chain(later)
    }
}

/// The bit-sliced rows of `path` for `values` ((slot, column, value),
/// sorted), one slot's rows at a time.
fn later_slot_rows(
    path: String,
    values: Vec<(u32, u32, i64)>,
) -> impl Iterator<Item = (RowId, RoaringBitmap)> {
    let mut values = values.into_iter().peekable();
    std::iter::from_fn(move || {
        let &(slot, _, _) = values.peek()?;
        let mut rows: BTreeMap<usize, RoaringBitmap> = BTreeMap::new();
        while let Some((_, column, value)) = values.next_if(|v| v.0 == slot) {
            for row in slot_rows(value) {
                rows.entry(row).or_default().insert(column);
            }
        }
        let base = u64::from(slot) * BSI_ROWS_PER_SLOT;
        let path = path.clone();
        Some(rows.into_iter().map(move |(row, mut bits)| {
            bits.optimize();
            (RowId::bsi(&path, base + row as u64), bits)
        }))
    })
    .flatten()
}

/// The rows of one scope's indexes, assembled record by record.
pub(crate) struct ScopeBuilder<'d> {
    declared: &'d [Declared],
    segments: Vec<Vec<&'d str>>,
    /// Per index, rows by number (no keys built per bit).
    per_index: Vec<Accumulator>,
    all: AppendedRow,
    columns: Vec<(String, u32)>,
}

impl<'d> ScopeBuilder<'d> {
    pub(crate) fn new(declared: &'d [Declared]) -> Self {
        Self {
            declared,
            segments: declared
                .iter()
                .map(|d| d.decl.path.split('.').collect())
                .collect(),
            per_index: declared.iter().map(|_| Accumulator::default()).collect(),
            all: AppendedRow::default(),
            columns: Vec::new(),
        }
    }

    /// The column a fresh build gives the next record (records numbered
    /// 0, 1, … in the order given).
    fn next_column(&self) -> Result<u32, Error> {
        u32::try_from(self.columns.len())
            .map_err(|_| Error::MalformedIndex("more than 2^32 records in a collection".into()))
    }

    /// Adds the record `rkey` (its dag-cbor `bytes`) at `column`.
    pub(crate) fn record(&mut self, rkey: String, bytes: &[u8], column: u32) {
        self.all.add(column);
        self.columns.push((rkey, column));
        // Values straight from the bytes; the JSON tree only when the walk
        // leaves a record to it.
        let mut json: Option<serde_json::Value> = None;
        let mut outs = vec![Vec::new(); self.declared.len()];
        let walked = cbor::leaves_at_each(bytes, &self.segments, &mut outs).is_ok();
        for ((d, acc), leaves) in self.declared.iter().zip(&mut self.per_index).zip(&outs) {
            let path = d.decl.path.as_str();
            let kept = match d.decl.kind {
                IndexKind::Keyword if walked => {
                    let mut kept = false;
                    for leaf in leaves {
                        kept |= match leaf {
                            cbor::Leaf::Str(s) => acc.string(s, column),
                            cbor::Leaf::Bool(b) => {
                                acc.boolean(*b, column);
                                true
                            }
                            _ => false,
                        };
                    }
                    kept
                }
                IndexKind::Text if walked => {
                    let mut kept = false;
                    for leaf in leaves {
                        if let cbor::Leaf::Str(s) = leaf {
                            kept = true;
                            for_each_word(s, |w| acc.word(w, column));
                        }
                    }
                    kept
                }
                IndexKind::Text => {
                    let json = json.get_or_insert_with(|| datamodel::dag_cbor_to_json(bytes));
                    for w in text_words(json, path) {
                        if let Keyword::Str(w) = w {
                            acc.word(&w, column);
                        }
                    }
                    has_string(json, path)
                }
                IndexKind::Keyword => {
                    let json = json.get_or_insert_with(|| datamodel::dag_cbor_to_json(bytes));
                    let vals = keywords(json, path);
                    for v in &vals {
                        match v {
                            Keyword::Str(s) => acc.string(s, column),
                            Keyword::Bool(b) => {
                                acc.boolean(*b, column);
                                true
                            }
                        };
                    }
                    !vals.is_empty()
                }
                kind => {
                    let vals = if walked {
                        numbers_of_leaves(leaves, kind)
                    } else {
                        let json = json.get_or_insert_with(|| datamodel::dag_cbor_to_json(bytes));
                        numbers(json, path, kind)
                    };
                    for (slot, v) in vals.iter().enumerate() {
                        acc.number(slot, *v, column);
                    }
                    !vals.is_empty()
                }
            };
            if kept {
                acc.existence.add(column);
            }
        }
    }

    pub(crate) fn finish(self) -> BuiltRows {
        let mut built = BuiltRows {
            columns: self.columns,
            ..BuiltRows::default()
        };
        let all = self.all.finish();
        if !all.is_empty() {
            built.rows.insert(RowId::columns(), all);
        }
        for (d, mut acc) in self.declared.iter().zip(self.per_index) {
            let path = d.decl.path.as_str();
            let existence = std::mem::take(&mut acc.existence).finish();
            if !existence.is_empty() {
                built.rows.insert(RowId::existence(path), existence);
            }
            for (row, bits) in std::mem::take(&mut acc.first_slot)
                .finish()
                .into_iter()
                .enumerate()
            {
                if !bits.is_empty() {
                    built.rows.insert(RowId::bsi(path, row as u64), bits);
                }
            }
            if !acc.later_slots.is_empty() {
                let mut later = std::mem::take(&mut acc.later_slots);
                later.sort_unstable();
                built.later_slots.insert(path.to_owned(), later);
            }
            if matches!(d.decl.kind, IndexKind::Keyword | IndexKind::Text) {
                let keywords = acc.keywords();
                let mut dict = Vec::with_capacity(keywords.len());
                for (row, (value, bits)) in keywords.into_iter().enumerate() {
                    built.rows.insert(RowId::keyword(path, row as u64), bits);
                    dict.push(value);
                }
                built.dictionaries.insert(path.to_owned(), dict);
            }
        }
        for bits in built.rows.values_mut() {
            bits.optimize();
        }
        built
    }
}

/// A fresh build of the indexes `declared` (one scope) over `records`,
/// every record of the collection as (rkey, dag-cbor bytes), in any order:
/// what [`compute_scope`] computes, from memory (an import's records).
pub fn compute_given(
    declared: &[Declared],
    mut records: Vec<(String, Bytes)>,
) -> Result<BuiltRows, Error> {
    records.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut builder = ScopeBuilder::new(declared);
    for (rkey, bytes) in records {
        let column = builder.next_column()?;
        builder.record(rkey, &bytes, column);
    }
    Ok(builder.finish())
}

/// Reads every record of `collection` and computes the rows of the indexes
/// `declared` (one scope). With `fresh`, records get new columns in rkey
/// order; otherwise their stored columns are used (a record without one
/// is an error: the scope is damaged).
pub async fn compute_scope<K: Kv>(
    store: &Store<K>,
    repo: &str,
    collection: &str,
    scope: u32,
    declared: &[Declared],
    fresh: bool,
    mut progress: impl FnMut(BuildProgress) + Send,
) -> Result<BuiltRows, Error> {
    const PAGE: usize = 1024;
    let mut builder = BuilderThread::start(declared);
    let mut fresh_columns = FreshColumns::default();
    let mut cursor: Option<String> = None;
    let mut done = BuildProgress::default();
    // Stored columns, walked alongside (both in rkey order).
    let packed = if fresh {
        Packed::default()
    } else {
        columns::load_packed(store.kv(), scope).await?
    };
    let mut stored = if fresh {
        None
    } else {
        Some(columns::Walk::new(store.kv(), scope, &packed, None, false).await?)
    };
    let mut pending: Option<(String, u32)> = None;
    loop {
        let page = store
            .list_written_record_blocks(repo, collection, cursor.as_deref(), PAGE)
            .await?;
        let Some((last, _)) = page.last() else { break };
        cursor = Some(last.clone());
        let mut columned = Vec::with_capacity(page.len());
        for (rkey, block) in page {
            let column = match &mut stored {
                None => fresh_columns.next()?,
                Some(walk) => loop {
                    if pending.is_none() {
                        pending = walk.next().await?;
                    }
                    match &pending {
                        Some((r, _)) if *r < rkey => pending = None,
                        Some((r, c)) if *r == rkey => break *c,
                        _ => {
                            return Err(Error::MalformedIndex(format!(
                                "record {collection}/{rkey} has no index column"
                            )));
                        }
                    }
                },
            };
            columned.push((rkey, block, column));
            done.records += 1;
        }
        builder.add(columned).await?;
        progress(done);
    }
    builder.finish().await
}

/// Where a build beside commits finds each record's column.
pub enum BuildColumns {
    /// A new scope: records numbered 0, 1, … in rkey order.
    Fresh,
    /// The scope's stored columns (the commits', in a collection with
    /// indexes), as stored when each record is read; a record without one
    /// (deleted since) is left out.
    Stored(u32),
}

/// A build of the indexes `declared` (one scope) over the records of
/// `collection` as of the commit `at` (its tree `root`), while commits may
/// land: an index built beside writes reads one commit's records, then
/// catches up with the commits after it (`Repository::add_index`).
/// Returns the rows (with the column each record was given) and the
/// number of records read.
///
/// Pages come from the record index, which commits change, so each is
/// taken as it is only when the head is still `at` after reading it (no
/// commit landed before or during the read). From the first page read
/// after a commit on, the tree says which records there are (a tree never
/// changes), and the record index's page serves only those of its blocks
/// that are the tree's versions; the others are read by CID.
#[allow(clippy::too_many_arguments)]
pub async fn compute_at<K: Kv>(
    store: &Store<K>,
    repo: &str,
    at: Cid,
    root: Cid,
    collection: &str,
    declared: &[Declared],
    columns: BuildColumns,
    mut progress: impl FnMut(BuildProgress) + Send,
) -> Result<(BuiltRows, u64), Error> {
    const PAGE: usize = 1024;
    let prefix = format!("{collection}/");
    let mut builder = BuilderThread::start(declared);
    let mut fresh_columns = FreshColumns::default();
    let mut done = BuildProgress::default();
    let packed = match columns {
        BuildColumns::Fresh => Packed::default(),
        BuildColumns::Stored(scope) => columns::load_packed(store.kv(), scope).await?,
    };
    let mut stored = match columns {
        BuildColumns::Fresh => None,
        BuildColumns::Stored(scope) => Some(StoredColumns {
            walk: columns::Walk::new(store.kv(), scope, &packed, None, false).await?,
            pending: None,
        }),
    };
    let mut after: Option<String> = None;
    let mut from_tree = false;
    loop {
        let scanned = store
            .list_written_record_blocks(repo, collection, after.as_deref(), PAGE)
            .await?;
        let page: Vec<(String, store::Block)> =
            if !from_tree && store.head(repo).await?.map(|h| h.commit) == Some(at) {
                scanned
            } else {
                from_tree = true;
                tree_page(store, root, &prefix, after.as_deref(), PAGE, scanned).await?
            };
        let Some((last, _)) = page.last() else { break };
        after = Some(last.clone());
        let mut columned = Vec::with_capacity(page.len());
        for (rkey, block) in page {
            done.records += 1;
            let column = match &mut stored {
                None => fresh_columns.next()?,
                Some(stored) => match stored.column_of(&rkey).await? {
                    Some(c) => c,
                    None => continue,
                },
            };
            columned.push((rkey, block, column));
        }
        builder.add(columned).await?;
        progress(done);
    }
    Ok((builder.finish().await?, done.records))
}

/// The columns of a fresh build: 0, 1, … in the order records come.
#[derive(Default)]
struct FreshColumns(u32);

impl FreshColumns {
    fn next(&mut self) -> Result<u32, Error> {
        let column = self.0;
        self.0 = column.checked_add(1).ok_or_else(|| {
            Error::MalformedIndex("more than 2^32 records in a collection".into())
        })?;
        Ok(column)
    }
}

/// Records with their columns, a page at a time.
type ColumnedPage = Vec<(String, store::Block, u32)>;

/// A [`ScopeBuilder`] on a blocking thread of its own, fed pages of
/// records while the next pages are read: a build's reads and its row
/// computing overlap (each is about half of an `index add`'s time).
struct BuilderThread {
    pages: tokio::sync::mpsc::Sender<ColumnedPage>,
    rows: tokio::task::JoinHandle<BuiltRows>,
}

impl BuilderThread {
    fn start(declared: &[Declared]) -> Self {
        let declared = declared.to_vec();
        // Two pages queued: enough to keep both sides busy, little memory.
        let (pages, mut queued) = tokio::sync::mpsc::channel::<ColumnedPage>(2);
        let rows = tokio::task::spawn_blocking(move || {
            let mut builder = ScopeBuilder::new(&declared);
            while let Some(page) = queued.blocking_recv() {
                for (rkey, block, column) in page {
                    builder.record(rkey, block.bytes(), column);
                }
            }
            builder.finish()
        });
        Self { pages, rows }
    }

    async fn add(&mut self, page: ColumnedPage) -> Result<(), Error> {
        if self.pages.send(page).await.is_ok() {
            return Ok(());
        }
        // The thread ends early only by panicking (passed on here) or
        // with the runtime.
        Self::join(&mut self.rows).await?;
        Err(stopped("its thread ended early"))
    }

    /// The rows, once every page is recorded.
    async fn finish(mut self) -> Result<BuiltRows, Error> {
        drop(self.pages);
        Self::join(&mut self.rows).await
    }

    async fn join(rows: &mut tokio::task::JoinHandle<BuiltRows>) -> Result<BuiltRows, Error> {
        match rows.await {
            Ok(rows) => Ok(rows),
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => Err(stopped(e)),
        }
    }
}

fn stopped(why: impl std::fmt::Display) -> Error {
    Error::MalformedIndex(format!("the index build stopped: {why}"))
}

/// Stored columns walked beside records in rkey order.
struct StoredColumns<'a, K: Kv> {
    walk: columns::Walk<'a, K>,
    pending: Option<(String, u32)>,
}

impl<K: Kv> StoredColumns<'_, K> {
    /// The column of `rkey`, rkeys asked for in ascending order.
    async fn column_of(&mut self, rkey: &str) -> Result<Option<u32>, Error> {
        loop {
            if self.pending.is_none() {
                self.pending = self.walk.next().await?;
            }
            match &self.pending {
                Some((r, _)) if r.as_str() < rkey => self.pending = None,
                Some((r, c)) if r == rkey => return Ok(Some(*c)),
                _ => return Ok(None),
            }
        }
    }
}

/// The records of the tree `root` under `prefix` after the rkey `after`,
/// at most `limit`, as (rkey, block): from `scanned` (the record index's
/// page from the same place) where it holds the tree's version, else read
/// by CID.
async fn tree_page<K: Kv>(
    store: &Store<K>,
    root: Cid,
    prefix: &str,
    after: Option<&str>,
    limit: usize,
    scanned: Vec<(String, store::Block)>,
) -> Result<Vec<(String, store::Block)>, Error> {
    let mut page: Vec<(String, Cid)> = Vec::with_capacity(limit);
    let options = EntriesOptions {
        prefix: Some(prefix.to_owned()),
        gt: after.map(|a| format!("{prefix}{a}")),
        limit: Some(limit),
        ..EntriesOptions::default()
    };
    pail::for_each_entry(store, root, &options, |key, cid| {
        let rkey = key.get(prefix.len()..).unwrap_or_default();
        page.push((rkey.to_owned(), cid));
        ControlFlow::Continue(())
    })
    .await?;
    let mut scanned = scanned.into_iter().peekable();
    let mut blocks: Vec<Option<store::Block>> = Vec::with_capacity(page.len());
    for (rkey, cid) in &page {
        while scanned.next_if(|(r, _)| r < rkey).is_some() {}
        blocks.push(
            scanned
                .next_if(|(r, b)| r == rkey && b.cid() == *cid)
                .map(|(_, b)| b),
        );
    }
    let missing = page
        .iter()
        .zip(&blocks)
        .filter(|(_, b)| b.is_none())
        .map(|((_, cid), _)| store.get_block(cid));
    let mut fetched = futures::future::try_join_all(missing).await?.into_iter();
    page.into_iter()
        .zip(blocks)
        .map(|((rkey, cid), block)| match block {
            Some(b) => Ok((rkey, b)),
            None => fetched
                .next()
                .flatten()
                .map(|b| (rkey, b))
                .ok_or(Error::MissingBlock(cid)),
        })
        .collect()
}

/// Writes a fresh build: columns, dictionaries and full containers, in
/// batches of about `batch_bytes`.
pub async fn write_built<K: Kv>(
    kv: &K,
    scope: u32,
    mut built: BuiltRows,
    write_columns: bool,
    batch_bytes: usize,
) -> Result<(), Error> {
    let mut ops: Vec<WriteOp> = Vec::new();
    let mut bytes = 0usize;
    async fn flush<K: Kv>(kv: &K, ops: &mut Vec<WriteOp>, bytes: &mut usize) -> Result<(), Error> {
        if !ops.is_empty() {
            kv.write(std::mem::take(ops)).await?;
        }
        *bytes = 0;
        Ok(())
    }
    if write_columns {
        // A fresh build numbered the records 0, 1, … in rkey order.
        let rkeys: Vec<String> = std::mem::take(&mut built.columns)
            .into_iter()
            .map(|(r, _)| r)
            .collect();
        for op in columns::packed_ops(scope, &rkeys) {
            if let WriteOp::Put(k, v) = &op {
                bytes += k.len() + v.len();
            }
            ops.push(op);
            if bytes >= batch_bytes {
                flush(kv, &mut ops, &mut bytes).await?;
            }
        }
    }
    for (path, values) in &built.dictionaries {
        for (row, value) in values.iter().enumerate() {
            let tagged = value.tagged();
            let row = row as u64;
            ops.push(WriteOp::Put(
                records::keyword_row_key(scope, path, &tagged),
                Bytes::copy_from_slice(&row.to_be_bytes()),
            ));
            ops.push(WriteOp::Put(
                records::keyword_value_key(scope, path, row),
                Bytes::from(tagged),
            ));
        }
    }
    flush(kv, &mut ops, &mut bytes).await?;
    // All rows at once: a bit-sliced slot's rows share keys.
    let rows = built
        .into_all_rows()
        .filter(|(row, _)| write_columns || row.field != COLUMNS_FIELD);
    let mut containers = Vec::new();
    put_rows(scope, rows, &mut containers)?;
    for op in containers {
        if let WriteOp::Put(k, v) = &op {
            bytes += k.len() + v.len();
        }
        ops.push(op);
        if bytes >= batch_bytes {
            flush(kv, &mut ops, &mut bytes).await?;
        }
    }
    flush(kv, &mut ops, &mut bytes).await
}

/// Builds the indexes `declared` of a collection (one scope) from its
/// records and writes them; see [`compute_scope`]. Returns the records read.
pub async fn build_scope<K: Kv>(
    store: &Store<K>,
    repo: &str,
    collection: &str,
    scope: u32,
    declared: &[Declared],
    fresh: bool,
    progress: impl FnMut(BuildProgress) + Send,
) -> Result<u64, Error> {
    let built = compute_scope(store, repo, collection, scope, declared, fresh, progress).await?;
    let records = built.columns.len() as u64;
    let batch = store.kv().bulk_batch_bytes().unwrap_or(usize::MAX);
    write_built(store.kv(), scope, built, fresh, batch).await?;
    Ok(records)
}

/// Rows computed ahead of a rebuild, by collection, with the declarations
/// they were computed for.
pub type ComputedScopes = std::collections::HashMap<String, (Vec<Declared>, BuiltRows)>;

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// A row holds exactly the columns added, whatever their order:
        /// ascending runs longer than a run, repeats, and columns before
        /// the last (a collection's stored columns after deletes).
        #[test]
        fn an_appended_row_holds_the_columns_added(
            runs in proptest::collection::vec((0u32..1 << 20, 1usize..6000, 1u32..40), 1..6),
            strays in proptest::collection::vec(0u32..1 << 21, 0..200),
        ) {
            let mut row = AppendedRow::default();
            let mut model = std::collections::BTreeSet::new();
            let mut strays = strays.into_iter();
            for (start, len, step) in runs {
                for i in 0..len as u32 {
                    let column = start.saturating_add(i / 2 * step);
                    row.add(column);
                    model.insert(column);
                    if i % 97 == 0 && let Some(stray) = strays.next() {
                        row.add(stray);
                        model.insert(stray);
                    }
                }
            }
            let bits = row.finish();
            proptest::prop_assert_eq!(bits.iter().collect::<Vec<_>>(), model.into_iter().collect::<Vec<_>>());
        }
    }
}
