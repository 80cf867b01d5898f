//! The mapping between a collection's records and their columns, both ways.
//!
//! Two forms share record types `0x9` / `0xA` (`docs/storage-keys.md`):
//!
//! - **single entries**, written by commits: `0x9 (scope, rkey) → column`
//!   and `0xA (scope, column) → rkey`, for columns below 2^32;
//! - **packed blocks**, written by a fresh build, which numbers a
//!   collection's records 0, 1, … in rkey order: `0xA (scope, PACKED + k)`
//!   holds the rkeys of columns `256·k …` (at most 256, front-coded), and
//!   `0xA (scope, FENCES + j)` the first rkey of each of blocks `4096·j …`,
//!   so an rkey's block is found in memory ([`Packed`], loaded once per
//!   process and scope).
//!
//! Blocks are never rewritten. A deleted record's entry stays in its block
//! (its column is cleared from every row, so no query reaches it); a record
//! created again gets a new column as a single entry, which lookups by rkey
//! consult first. Columns `0 .. Packed::columns` are packed, later ones
//! single.

use bytes::Bytes;
use keycodec::{KeyRange, records};
use store::{Kv, WriteOp};

use crate::{
    error::{Error, malformed},
    rows::decode_column,
};

/// Columns per packed block.
const BLOCK: u64 = 256;
/// Blocks per fence chunk.
const FENCE_CHUNK: u64 = 4096;
/// `0xA` column fields at and past this name packed blocks.
const PACKED: u64 = records::COLUMN_PACKED;
/// `0xA` column fields at and past this name fence chunks.
const FENCES: u64 = records::COLUMN_FENCES;
/// Single columns are below this.
const SINGLE_END: u64 = 1 << 32;

/// The packed part of a scope's mapping.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Packed {
    /// Columns `0 .. columns` are packed.
    pub columns: u64,
    /// The first rkey of each block, in order.
    firsts: RkeyList,
}

impl Packed {
    /// The block that holds `rkey` if any block does: the last whose
    /// first rkey is not after it.
    fn block_of(&self, rkey: &str) -> Option<u64> {
        let after = self.firsts.partition_point(|f| f <= rkey);
        after.checked_sub(1).map(|b| b as u64)
    }

    fn blocks(&self) -> u64 {
        self.firsts.len() as u64
    }
}

/// Record keys in order, decoded into one buffer (a packed block's 256
/// or a fence chunk's thousands: one allocation each rather than one per
/// key, which was most of a just-opened query's record-key lookups).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RkeyList {
    /// The keys, one after the other.
    text: String,
    /// Where each key ends in `text`.
    ends: Vec<u32>,
}

impl RkeyList {
    /// How many keys.
    #[must_use]
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Key `i`.
    #[must_use]
    pub fn get(&self, i: usize) -> Option<&str> {
        let end = *self.ends.get(i)? as usize;
        let start = i
            .checked_sub(1)
            .map_or(0, |before| self.ends[before] as usize);
        self.text.get(start..end)
    }

    /// The keys, in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &str> + '_ {
        (0..self.len()).filter_map(|i| self.get(i))
    }

    /// The number of leading keys for which `before` holds (the keys
    /// being in order, it holds for a prefix of them).
    fn partition_point(&self, before: impl Fn(&str) -> bool) -> usize {
        let (mut low, mut high) = (0, self.len());
        while low < high {
            let mid = low + (high - low) / 2;
            if self.get(mid).is_some_and(&before) {
                low = mid + 1;
            } else {
                high = mid;
            }
        }
        low
    }

    /// Appends `key`; `None` when the buffer would pass 4 GiB.
    fn push(&mut self, key: &str) -> Option<()> {
        self.text.push_str(key);
        self.ends.push(u32::try_from(self.text.len()).ok()?);
        Some(())
    }

    fn extend(&mut self, other: &Self) -> Option<()> {
        other.iter().try_for_each(|key| self.push(key))
    }

    /// Bytes held on the heap.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.text.capacity() + 4 * self.ends.capacity()
    }
}

fn put_varint(out: &mut Vec<u8>, n: u64) {
    let mut buf = unsigned_varint::encode::u64_buffer();
    out.extend_from_slice(unsigned_varint::encode::u64(n, &mut buf));
}

fn take_varint(bytes: &mut &[u8]) -> Result<u64, Error> {
    let (n, rest) = unsigned_varint::decode::u64(bytes)
        .map_err(|e| malformed(format!("a packed column entry: {e}")))?;
    *bytes = rest;
    Ok(n)
}

fn take_len(bytes: &mut &[u8]) -> Result<usize, Error> {
    usize::try_from(take_varint(bytes)?).map_err(|_| malformed("a packed length is too large"))
}

/// A list of strings, front-coded: a count, then per string the bytes it
/// shares with the one before and the rest (`len`, bytes), each a varint.
fn encode_list<'a>(out: &mut Vec<u8>, items: impl ExactSizeIterator<Item = &'a str>) {
    put_varint(out, items.len() as u64);
    let mut prev: &[u8] = &[];
    for item in items {
        let item = item.as_bytes();
        let shared = prev.iter().zip(item).take_while(|(a, b)| a == b).count();
        put_varint(out, shared as u64);
        put_varint(out, (item.len() - shared) as u64);
        out.extend_from_slice(&item[shared..]);
        prev = item;
    }
}

/// Reads a front-coded list one entry at a time into one buffer, checking
/// each (bounds, UTF-8, strictly ascending).
struct ListReader<'a> {
    bytes: &'a [u8],
    left: usize,
    current: Vec<u8>,
    previous: Vec<u8>,
    read: usize,
}

impl<'a> ListReader<'a> {
    fn new(mut bytes: &'a [u8]) -> Result<Self, Error> {
        let left = take_len(&mut bytes)?;
        Ok(Self {
            bytes,
            left,
            current: Vec::new(),
            previous: Vec::new(),
            read: 0,
        })
    }

    fn len(&self) -> usize {
        self.read + self.left
    }

    /// The next entry, or `None` after the last.
    fn next(&mut self) -> Result<Option<&str>, Error> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        let shared = take_len(&mut self.bytes)?;
        let len = take_len(&mut self.bytes)?;
        if shared > self.current.len() || len > self.bytes.len() {
            return Err(malformed("a packed column entry is out of bounds"));
        }
        std::mem::swap(&mut self.previous, &mut self.current);
        self.current.clear();
        self.current.extend_from_slice(&self.previous[..shared]);
        self.current.extend_from_slice(&self.bytes[..len]);
        self.bytes = &self.bytes[len..];
        if self.read > 0 && self.previous >= self.current {
            return Err(malformed("packed rkeys are not in order"));
        }
        self.read += 1;
        std::str::from_utf8(&self.current)
            .map(Some)
            .map_err(|_| malformed("a packed rkey is not UTF-8"))
    }

    /// The bytes after the list (valid once every entry was read).
    fn rest(&self) -> &'a [u8] {
        self.bytes
    }
}

fn decode_list(bytes: &[u8]) -> Result<(RkeyList, &[u8]), Error> {
    let mut list = ListReader::new(bytes)?;
    let mut out = RkeyList {
        // The keys share prefixes: their text is at most a few times the
        // encoded bytes (a bound, not a promise: it grows past it).
        text: String::with_capacity(bytes.len().saturating_mul(2)),
        ends: Vec::with_capacity(list.len().min(bytes.len())),
    };
    while let Some(s) = list.next()? {
        out.push(s)
            .ok_or_else(|| malformed("a packed rkey list is too large"))?;
    }
    Ok((out, list.rest()))
}

/// The value of a packed block: the rkeys of its columns, in order.
pub(crate) fn encode_block<'a>(rkeys: impl ExactSizeIterator<Item = &'a str>) -> Vec<u8> {
    let mut out = Vec::new();
    encode_list(&mut out, rkeys);
    out
}

/// The rkeys of a packed block's value.
pub(crate) fn decode_block(bytes: &[u8]) -> Result<RkeyList, Error> {
    match decode_list(bytes)? {
        (rkeys, []) if !rkeys.is_empty() && rkeys.len() as u64 <= BLOCK => Ok(rkeys),
        _ => Err(malformed("a packed column block is malformed")),
    }
}

/// Both decoders over `bytes` (for the fuzz target): whether each accepted.
pub(crate) fn fuzz_decode(bytes: &[u8]) -> (bool, bool) {
    let block = decode_block(bytes).is_ok();
    let _ = position_in_block(bytes, "3k");
    (block, decode_fences(bytes).is_ok())
}

/// The value of a fence chunk: the packed column count, then the first
/// rkey of each of its blocks.
pub(crate) fn encode_fences<'a>(
    columns: u64,
    firsts: impl ExactSizeIterator<Item = &'a str>,
) -> Vec<u8> {
    let mut out = Vec::new();
    put_varint(&mut out, columns);
    encode_list(&mut out, firsts);
    out
}

fn decode_fences(mut bytes: &[u8]) -> Result<(u64, RkeyList), Error> {
    let columns = take_varint(&mut bytes)?;
    match decode_list(bytes)? {
        (firsts, []) => Ok((columns, firsts)),
        _ => Err(malformed("a column fence chunk is malformed")),
    }
}

/// The writes of a fresh build's mapping: `rkeys` are the records in rkey
/// order, numbered 0, 1, ….
pub(crate) fn packed_ops(scope: u32, rkeys: &[String]) -> Vec<WriteOp> {
    let columns = rkeys.len() as u64;
    let mut ops = Vec::new();
    let blocks: Vec<&[String]> = rkeys.chunks(BLOCK as usize).collect();
    for (k, block) in blocks.iter().enumerate() {
        ops.push(WriteOp::Put(
            records::column_rkey_key(scope, PACKED + k as u64),
            Bytes::from(encode_block(block.iter().map(String::as_str))),
        ));
    }
    for (j, chunk) in blocks.chunks(FENCE_CHUNK as usize).enumerate() {
        ops.push(WriteOp::Put(
            records::column_rkey_key(scope, FENCES + j as u64),
            Bytes::from(encode_fences(columns, chunk.iter().map(|b| b[0].as_str()))),
        ));
    }
    ops
}

fn column_rkey_range(scope: u32, from: u64, to: u64) -> KeyRange {
    KeyRange {
        start: records::column_rkey_key(scope, from),
        end: Some(records::column_rkey_key(scope, to)),
    }
}

/// The packed part of a scope's mapping (empty when no build packed one):
/// one get, and a scan only past 2^20 packed columns (one fence chunk).
pub async fn load_packed<K: Kv>(kv: &K, scope: u32) -> Result<Packed, Error> {
    let Some(first) = kv.get(&records::column_rkey_key(scope, FENCES)).await? else {
        return Ok(Packed::default());
    };
    let (columns, firsts) = decode_fences(&first)?;
    let mut packed = Packed { columns, firsts };
    if packed.blocks() < packed.columns.div_ceil(BLOCK) {
        let rest = kv
            .scan(
                &column_rkey_range(scope, FENCES + 1, u64::MAX),
                false,
                usize::MAX,
            )
            .await?;
        for (j, (k, v)) in rest.iter().enumerate() {
            let Ok(records::DecodedKey::ColumnRkey { column, .. }) = records::decode_key(k) else {
                return Err(malformed("a column fence key does not decode"));
            };
            let (columns, firsts) = decode_fences(v)?;
            if column != FENCES + 1 + j as u64 || columns != packed.columns {
                return Err(malformed("column fence chunks disagree"));
            }
            packed
                .firsts
                .extend(&firsts)
                .ok_or_else(|| malformed("column fence chunks are too large"))?;
        }
    }
    if packed.blocks() != packed.columns.div_ceil(BLOCK) {
        return Err(malformed(format!(
            "{} packed columns in {} blocks",
            packed.columns,
            packed.blocks()
        )));
    }
    Ok(packed)
}

/// How many columns the build of `scope` packed (0 when none): the first
/// fence chunk's count alone, its rkeys (one per block: thousands, which
/// only a lookup by rkey needs) left undecoded.
pub(crate) async fn load_packed_columns<K: Kv>(kv: &K, scope: u32) -> Result<u64, Error> {
    match kv.get(&records::column_rkey_key(scope, FENCES)).await? {
        Some(first) => take_varint(&mut &first[..]),
        None => Ok(0),
    }
}

/// Where a column's rkey is: in packed block `k` at `i`, or a single entry.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Place {
    Packed(u64, usize),
    Single,
}

pub(crate) fn place(packed_columns: u64, column: u32) -> Place {
    let c = u64::from(column);
    if c < packed_columns {
        Place::Packed(c / BLOCK, (c % BLOCK) as usize)
    } else {
        Place::Single
    }
}

/// The rkey of single entry `column`.
pub(crate) async fn single_rkey<K: Kv>(
    kv: &K,
    scope: u32,
    column: u32,
) -> Result<Option<String>, Error> {
    match kv
        .get(&records::column_rkey_key(scope, u64::from(column)))
        .await?
    {
        Some(v) => String::from_utf8(v.to_vec())
            .map(Some)
            .map_err(|_| malformed("a column's rkey is not UTF-8")),
        None => Ok(None),
    }
}

/// The value of packed block `k`.
async fn block_value<K: Kv>(kv: &K, scope: u32, k: u64) -> Result<Bytes, Error> {
    kv.get(&records::column_rkey_key(scope, PACKED + k))
        .await?
        .ok_or_else(|| malformed(format!("packed column block {k} is missing")))
}

/// The rkeys of packed block `k`.
pub(crate) async fn block<K: Kv>(kv: &K, scope: u32, k: u64) -> Result<RkeyList, Error> {
    decode_block(&block_value(kv, scope, k).await?)
}

/// The position of `rkey` in a packed block's value, read without
/// decoding the entries after it.
fn position_in_block(value: &[u8], rkey: &str) -> Result<Option<usize>, Error> {
    let mut list = ListReader::new(value)?;
    if list.len() == 0 || list.len() as u64 > BLOCK {
        return Err(malformed("a packed column block is malformed"));
    }
    let mut i = 0;
    while let Some(r) = list.next()? {
        match r.cmp(rkey) {
            std::cmp::Ordering::Equal => return Ok(Some(i)),
            std::cmp::Ordering::Greater => return Ok(None),
            std::cmp::Ordering::Less => i += 1,
        }
    }
    Ok(None)
}

/// The column of `rkey` (a deleted record's old column if its packed entry
/// remains: ask only for records that exist, or to position a cursor).
pub async fn column_of<K: Kv>(
    kv: &K,
    scope: u32,
    packed: &Packed,
    rkey: &str,
) -> Result<Option<u32>, Error> {
    if let Some(v) = kv.get(&records::column_key(scope, rkey)).await? {
        return Ok(Some(decode_column(&v)?));
    }
    let Some(k) = packed.block_of(rkey) else {
        return Ok(None);
    };
    let value = block_value(kv, scope, k).await?;
    Ok(position_in_block(&value, rkey)?.map(|i| column_in(k, i)))
}

fn column_in(block: u64, i: usize) -> u32 {
    // Packed columns are below the single ones' 2^32 bound.
    u32::try_from(block * BLOCK + i as u64).unwrap_or(u32::MAX)
}

/// The highest column given out, if any.
pub(crate) async fn max_column<K: Kv>(
    kv: &K,
    scope: u32,
    packed: &Packed,
) -> Result<Option<u64>, Error> {
    Ok(max_single_column(kv, scope)
        .await?
        .max(packed.columns.checked_sub(1)))
}

/// The highest column of a single entry, if any.
pub(crate) async fn max_single_column<K: Kv>(kv: &K, scope: u32) -> Result<Option<u64>, Error> {
    Ok(
        match kv
            .scan(&column_rkey_range(scope, 0, SINGLE_END), true, 1)
            .await?
            .into_iter()
            .next()
        {
            Some((k, _)) => match records::decode_key(&k) {
                Ok(records::DecodedKey::ColumnRkey { column, .. }) => Some(column),
                _ => return Err(malformed("a column-rkey key does not decode")),
            },
            None => None,
        },
    )
}

/// The highest rkey mapped (packed entries of deleted records included).
pub(crate) async fn max_rkey<K: Kv>(
    kv: &K,
    scope: u32,
    packed: &Packed,
) -> Result<Option<String>, Error> {
    let range = records::scope_range(records::RecordType::Column, scope, None);
    let single = match kv.scan(&range, true, 1).await?.into_iter().next() {
        Some((k, _)) => match records::decode_key(&k) {
            Ok(records::DecodedKey::Column { rkey, .. }) => Some(rkey.into_owned()),
            _ => return Err(malformed("a column key does not decode")),
        },
        None => None,
    };
    let last = match packed.blocks().checked_sub(1) {
        Some(k) => block(kv, scope, k).await?.iter().last().map(str::to_owned),
        None => None,
    };
    Ok(single.max(last))
}

/// Every mapping of a scope in rkey order (descending with `reverse`),
/// after (before) an rkey: the single entries and the packed blocks merged.
/// An rkey in both (a packed record deleted and created again) is given
/// once, with its single entry's column.
pub struct Walk<'a, K: Kv> {
    kv: &'a K,
    scope: u32,
    packed: &'a Packed,
    reverse: bool,
    /// Single entries not yet given, and the range still to scan.
    singles: std::collections::VecDeque<(String, u32)>,
    single_range: Option<KeyRange>,
    /// The packed block being read, its rkeys still to give (in walk
    /// order), and the next block's number.
    block: std::collections::VecDeque<(String, u32)>,
    next_block: Option<u64>,
}

const WALK_PAGE: usize = 1024;

impl<'a, K: Kv> Walk<'a, K> {
    /// A walk of `scope`'s columns in rkey order, after the rkey `after`.
    pub async fn new(
        kv: &'a K,
        scope: u32,
        packed: &'a Packed,
        after: Option<&str>,
        reverse: bool,
    ) -> Result<Self, Error> {
        let mut range = records::scope_range(records::RecordType::Column, scope, None);
        if let Some(at) = after {
            let at = records::column_key(scope, at);
            if reverse {
                range.end = Some(at);
            } else {
                range.start = [at.as_slice(), &[0]].concat();
            }
        }
        let first = match (after, reverse) {
            (None, false) => (packed.blocks() > 0).then_some(0),
            (None, true) => packed.blocks().checked_sub(1),
            (Some(at), false) => Some(packed.block_of(at).unwrap_or(0)),
            (Some(at), true) => packed.block_of(at),
        };
        let mut walk = Self {
            kv,
            scope,
            packed,
            reverse,
            singles: std::collections::VecDeque::new(),
            single_range: Some(range),
            block: std::collections::VecDeque::new(),
            next_block: first.filter(|k| *k < packed.blocks()),
        };
        if let Some(at) = after {
            // Drop the first block's entries up to the cursor.
            walk.fill_block().await?;
            while walk.block.front().is_some_and(|(r, _)| {
                if reverse {
                    r.as_str() >= at
                } else {
                    r.as_str() <= at
                }
            }) {
                walk.block.pop_front();
            }
        }
        Ok(walk)
    }

    async fn fill_block(&mut self) -> Result<(), Error> {
        while self.block.is_empty() {
            let Some(k) = self.next_block else {
                return Ok(());
            };
            let rkeys = block(self.kv, self.scope, k).await?;
            let mut entries: Vec<(String, u32)> = rkeys
                .iter()
                .enumerate()
                .map(|(i, r)| (r.to_owned(), column_in(k, i)))
                .collect();
            if self.reverse {
                entries.reverse();
                self.next_block = k.checked_sub(1);
            } else {
                self.next_block = Some(k + 1).filter(|n| *n < self.packed.blocks());
            }
            self.block = entries.into();
        }
        Ok(())
    }

    async fn fill_singles(&mut self) -> Result<(), Error> {
        if !self.singles.is_empty() {
            return Ok(());
        }
        let Some(range) = self.single_range.take() else {
            return Ok(());
        };
        let page = self.kv.scan(&range, self.reverse, WALK_PAGE).await?;
        if page.len() == WALK_PAGE
            && let Some((k, _)) = page.last()
        {
            let mut next = range;
            if self.reverse {
                next.end = Some(k.to_vec());
            } else {
                next.start = [k.as_ref(), &[0]].concat();
            }
            self.single_range = Some(next);
        }
        for (k, v) in page {
            let Ok(records::DecodedKey::Column { rkey, .. }) = records::decode_key(&k) else {
                return Err(malformed("a column key does not decode"));
            };
            self.singles
                .push_back((rkey.into_owned(), decode_column(&v)?));
        }
        Ok(())
    }

    /// The next mapping, or `None` at the end.
    pub async fn next(&mut self) -> Result<Option<(String, u32)>, Error> {
        self.fill_block().await?;
        self.fill_singles().await?;
        let order = match (self.singles.front(), self.block.front()) {
            (None, None) => return Ok(None),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (Some((s, _)), Some((p, _))) => {
                let o = s.cmp(p);
                if self.reverse { o.reverse() } else { o }
            }
        };
        Ok(match order {
            std::cmp::Ordering::Less => self.singles.pop_front(),
            std::cmp::Ordering::Greater => self.block.pop_front(),
            std::cmp::Ordering::Equal => {
                self.block.pop_front();
                self.singles.pop_front()
            }
        })
    }
}

/// How the stored mapping differs from `built` (every record's rkey and
/// column): each record's column must name it back, and each single entry
/// must belong to a record. One line per difference.
pub async fn differences<K: Kv>(
    kv: &K,
    scope: u32,
    packed: &Packed,
    built: &[(String, u32)],
) -> Result<Vec<String>, Error> {
    let mut out = Vec::new();
    let by_column: std::collections::HashMap<u32, &str> =
        built.iter().map(|(r, c)| (*c, r.as_str())).collect();
    let mut singles = std::collections::HashSet::new();
    for (k, v) in kv
        .scan(&column_rkey_range(scope, 0, SINGLE_END), false, usize::MAX)
        .await?
    {
        let Ok(records::DecodedKey::ColumnRkey { column, .. }) = records::decode_key(&k) else {
            out.push("a column-rkey key does not decode".to_owned());
            continue;
        };
        let named = u32::try_from(column).ok().and_then(|c| by_column.get(&c));
        if named.map(|r| r.as_bytes()) != Some(v.as_ref()) {
            out.push(format!(
                "column {column} names {:?}, which is not its record",
                String::from_utf8_lossy(&v)
            ));
        }
        singles.insert(column);
    }
    let mut in_order: Vec<&(String, u32)> = built.iter().collect();
    in_order.sort_unstable_by_key(|(_, c)| *c);
    let mut current: Option<(u64, RkeyList)> = None;
    for (rkey, column) in in_order {
        let c = u64::from(*column);
        if c >= packed.columns {
            if !singles.contains(&c) {
                out.push(format!("column {c} of {rkey:?} names no record"));
            }
            continue;
        }
        let k = c / BLOCK;
        if current.as_ref().is_none_or(|(at, _)| *at != k) {
            current = Some((k, block(kv, scope, k).await?));
        }
        let named = current
            .as_ref()
            .and_then(|(_, rkeys)| rkeys.get((c % BLOCK) as usize));
        if named != Some(rkey.as_str()) {
            out.push(format!(
                "packed column {c} names {named:?}, not its record {rkey:?}"
            ));
        }
    }
    Ok(out)
}

/// The column of `rkey`, or of the first rkey mapped after (`reverse`:
/// before) it, and whether that is `rkey` itself.
pub(crate) async fn near<K: Kv>(
    kv: &K,
    scope: u32,
    packed: &Packed,
    rkey: &str,
    reverse: bool,
) -> Result<Option<(u32, bool)>, Error> {
    if let Some(c) = column_of(kv, scope, packed, rkey).await? {
        return Ok(Some((c, true)));
    }
    let mut walk = Walk::new(kv, scope, packed, Some(rkey), reverse).await?;
    Ok(walk.next().await?.map(|(_, c)| (c, false)))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Any bytes: the decoders answer without panicking.
        #[test]
        fn decoding_any_bytes_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode_block(&bytes);
            let _ = decode_fences(&bytes);
            let _ = position_in_block(&bytes, "b");
        }

        /// Sorted rkeys (any length, shared prefixes or not) round-trip.
        #[test]
        fn blocks_and_fences_round_trip(
            set in prop::collection::btree_set("[a-z0-9:~._-]{1,40}|3k[a-z2-7]{11}", 1..=256),
            columns in any::<u64>(),
        ) {
            let rkeys: Vec<&str> = set.iter().map(String::as_str).collect();
            let block = encode_block(rkeys.iter().copied());
            let decoded = decode_block(&block).unwrap();
            prop_assert_eq!(decoded.iter().collect::<Vec<_>>(), rkeys.clone());
            for (i, r) in rkeys.iter().enumerate() {
                prop_assert_eq!(position_in_block(&block, r).unwrap(), Some(i));
            }
            prop_assert_eq!(position_in_block(&block, "\u{7f}").unwrap(), None);
            prop_assert_eq!(position_in_block(&block, "").unwrap(), None);
            let (c, firsts) = decode_fences(&encode_fences(columns, rkeys.iter().copied())).unwrap();
            prop_assert_eq!(c, columns);
            prop_assert_eq!(firsts.iter().collect::<Vec<_>>(), rkeys);
        }
    }

    #[test]
    fn a_block_is_front_coded_as_documented() {
        // docs/storage-keys.md: count, then (shared, suffix length, suffix).
        let rkeys = ["3kabc", "3kabd", "3l"];
        let bytes = encode_block(rkeys.iter().copied());
        let expected: Vec<u8> = [
            vec![3],
            vec![0, 5],
            b"3kabc".to_vec(),
            vec![4, 1],
            b"d".to_vec(),
            vec![1, 1],
            b"l".to_vec(),
        ]
        .concat();
        assert_eq!(bytes, expected);
        let decoded = decode_block(&bytes).unwrap();
        assert_eq!(decoded.iter().collect::<Vec<_>>(), rkeys);
        // A fence chunk: the packed column count (600 = varint d8 04), then
        // the blocks' first rkeys, front-coded alike.
        let fences = encode_fences(600, ["b", "d", "f"].into_iter());
        assert_eq!(fences, [0xd8, 0x04, 3, 0, 1, b'b', 0, 1, b'd', 0, 1, b'f']);
        let (columns, firsts) = decode_fences(&fences).unwrap();
        assert_eq!(
            (columns, firsts.iter().collect::<Vec<_>>()),
            (600, vec!["b", "d", "f"])
        );
    }

    #[test]
    fn damaged_blocks_are_errors_not_panics() {
        let good = encode_block(["a", "b"].into_iter());
        for cut in 0..good.len() {
            assert!(decode_block(&good[..cut]).is_err());
        }
        // Out of order, a shared prefix longer than the previous rkey.
        assert!(decode_block(&[2, 0, 1, b'b', 0, 1, b'a']).is_err());
        assert!(decode_block(&[2, 0, 1, b'a', 5, 1, b'b']).is_err());
        assert!(decode_block(&[0]).is_err());
    }

    fn list(keys: &[&str]) -> RkeyList {
        let mut out = RkeyList::default();
        for k in keys {
            out.push(k).unwrap();
        }
        out
    }

    proptest! {
        /// An `RkeyList` answers as the `Vec<String>` it stands for: each
        /// key, and where a key would go among them.
        #[test]
        fn an_rkey_list_is_its_keys(
            set in prop::collection::btree_set("[a-c]{0,4}", 0..20),
            probe in "[a-c]{0,4}",
        ) {
            let keys: Vec<&str> = set.iter().map(String::as_str).collect();
            let listed = list(&keys);
            prop_assert_eq!(listed.len(), keys.len());
            for (i, k) in keys.iter().enumerate() {
                prop_assert_eq!(listed.get(i), Some(*k));
            }
            prop_assert_eq!(listed.get(keys.len()), None);
            prop_assert_eq!(listed.iter().collect::<Vec<_>>(), keys.clone());
            prop_assert_eq!(
                listed.partition_point(|k| k <= probe.as_str()),
                keys.partition_point(|k| *k <= probe.as_str())
            );
            let mut twice = listed.clone();
            twice.extend(&listed).unwrap();
            prop_assert_eq!(twice.iter().skip(keys.len()).collect::<Vec<_>>(), keys);
        }
    }

    #[test]
    fn an_rkey_is_looked_up_in_the_block_whose_range_holds_it() {
        let packed = Packed {
            columns: 600,
            firsts: list(&["b", "d", "f"]),
        };
        assert_eq!(packed.block_of("a"), None);
        assert_eq!(packed.block_of("b"), Some(0));
        assert_eq!(packed.block_of("c"), Some(0));
        assert_eq!(packed.block_of("d"), Some(1));
        assert_eq!(packed.block_of("z"), Some(2));
    }
}
