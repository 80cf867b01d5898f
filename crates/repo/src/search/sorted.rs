//! `query --sort PATH [--desc]`: matching records ordered by their value
//! at an indexed path, ties by record key, records without a value last;
//! a record with several values sorts by its smallest ascending and its
//! largest descending. Pages carry a cursor naming the head they were
//! read at: a cursor of another head is refused (a write may have moved a
//! record across the page boundary), never silently skipped or repeated.

use std::cmp::Ordering;
use std::collections::HashMap;

use index::{IndexKind, Keyword, Reader};
use roaring::RoaringBitmap;
use store::Kv;

use super::query::QueryPage;
use crate::{error::Error, repository::state::Repository};

/// A record's sort value.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum SortValue {
    /// An integer, or a datetime in microseconds.
    Number(i64),
    /// A keyword: strings by their bytes, then booleans.
    Keyword(Keyword),
}

impl SortValue {
    fn to_json(&self) -> serde_json::Value {
        match self {
            Self::Number(n) => (*n).into(),
            Self::Keyword(k) => serde_json::json!({ "k": k.to_json() }),
        }
    }

    fn from_json(v: &serde_json::Value) -> Option<Self> {
        if let Some(n) = v.as_i64() {
            return Some(Self::Number(n));
        }
        match v.get("k")? {
            serde_json::Value::String(s) => Some(Self::Keyword(Keyword::Str(s.clone()))),
            serde_json::Value::Bool(b) => Some(Self::Keyword(Keyword::Bool(*b))),
            _ => None,
        }
    }
}

/// Where a record falls in the order: (no value, value, rkey).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Place {
    value: Option<SortValue>,
    rkey: String,
}

fn compare(a: &Place, b: &Place, descending: bool) -> Ordering {
    let by_value = match (&a.value, &b.value) {
        (Some(x), Some(y)) if descending => y.cmp(x),
        (Some(x), Some(y)) => x.cmp(y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    };
    by_value.then_with(|| a.rkey.cmp(&b.rkey))
}

/// A page's cursor: the head, and the last record's place.
fn encode_cursor(head: &str, last: &Place) -> String {
    let json = serde_json::json!({
        "head": head,
        "value": last.value.as_ref().map(SortValue::to_json),
        "rkey": last.rkey,
    });
    format!("s{}", hex::encode(json.to_string()))
}

fn decode_cursor(cursor: &str) -> Option<(String, Place)> {
    let bytes = hex::decode(cursor.strip_prefix('s')?).ok()?;
    let json: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let value = match json.get("value")? {
        serde_json::Value::Null => None,
        v => Some(SortValue::from_json(v)?),
    };
    Some((
        json.get("head")?.as_str()?.to_owned(),
        Place {
            value,
            rkey: json.get("rkey")?.as_str()?.to_owned(),
        },
    ))
}

impl<K: Kv> Repository<K> {
    /// The records of `collection` matching `where_`, ordered by their
    /// value at `path` (an integer, datetime or keyword index; descending
    /// with `descending`), ties by record key, records without a value
    /// last; up to `limit` after `cursor`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidQuery`] when `path` has no index, or the cursor is
    /// not one of a sorted page or was read at another head; as
    /// [`Repository::query`].
    pub async fn query_sorted(
        &self,
        collection: &str,
        where_: Option<&str>,
        path: &str,
        descending: bool,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<QueryPage, Error>
    where
        K: 'static,
    {
        let limit = limit.max(1);
        let _search = self.search.read().await;
        rkey::validate_nsid(collection)?;
        let head = self.sync_cache().await?;
        let declared = self.declared(collection).await?;
        let Some(kind) = declared
            .iter()
            .find(|d| d.decl.path == path)
            .map(|d| d.decl.kind)
        else {
            return Err(Error::InvalidQuery(format!(
                "--sort {path}: it has no index in {collection}; add one with `datarepo index add {collection} {path} --kind integer` (or datetime, keyword)"
            )));
        };
        if kind == IndexKind::Text {
            return Err(Error::InvalidQuery(format!(
                "--sort {path}: it has a text index, whose values are words, not an order; \
                 sort by an integer, datetime or keyword index"
            )));
        }
        let head = head.map(|h| h.to_string()).unwrap_or_default();
        let after = match cursor {
            None => None,
            Some(c) => {
                let (at, place) = decode_cursor(c).ok_or_else(|| {
                    Error::InvalidQuery(format!("cursor {c:?} is not a cursor of sorted pages"))
                })?;
                if at != head {
                    return Err(Error::InvalidQuery(
                        "the repository has changed since this sorted page was read (a write may \
                         have moved records across pages): start the sorted query again"
                            .into(),
                    ));
                }
                Some(place)
            }
        };
        let expr = super::query::parse_where(where_)?;
        let Some((reader, bits)) = self.matching_synced(collection, expr.as_ref()).await? else {
            return Ok(QueryPage {
                records: Vec::new(),
                cursor: None,
            });
        };
        // One more than the page, to know whether another follows.
        let want = limit.saturating_add(1);
        let mut places = match kind {
            IndexKind::Keyword => {
                keyword_places(&reader, path, &bits, after.as_ref(), descending, want).await?
            }
            _ => number_places(&reader, path, &bits, after.as_ref(), descending, want).await?,
        };
        if places.len() < want {
            // Records without a value, last, by record key.
            let rest = &*bits - reader.existing_columns(path, &bits).await?;
            let columns: Vec<u32> = rest.iter().collect();
            let mut missing: Vec<Place> = reader
                .rkeys(&columns)
                .await?
                .into_iter()
                .map(|rkey| Place { value: None, rkey })
                .filter(|p| {
                    after
                        .as_ref()
                        .is_none_or(|a| compare(p, a, descending) == Ordering::Greater)
                })
                .collect();
            missing.sort_by(|a, b| a.rkey.cmp(&b.rkey));
            missing.truncate(want - places.len());
            places.extend(missing);
        }
        let end = limit.min(places.len());
        let page = &places[..end];
        let next = (end < places.len())
            .then(|| page.last().map(|last| encode_cursor(&head, last)))
            .flatten();
        let rkeys = page.iter().map(|p| p.rkey.clone()).collect();
        let records = self.read_records(collection, rkeys).await?;
        Ok(QueryPage {
            records,
            cursor: next,
        })
    }
}

/// The columns of `set` whose record key sorts after `rkey`.
async fn rkeys_after<K: Kv>(
    reader: &Reader<'_, K>,
    set: &RoaringBitmap,
    rkey: &str,
) -> Result<RoaringBitmap, Error> {
    let columns: Vec<u32> = set.iter().collect();
    let rkeys = reader.rkeys(&columns).await?;
    Ok(columns
        .into_iter()
        .zip(rkeys)
        .filter(|(_, k)| k.as_str() > rkey)
        .map(|(c, _)| c)
        .collect())
}

/// The columns of `best` (each with its best value) as places in sort
/// order, the first `want` of them.
async fn first_places<K: Kv>(
    reader: &Reader<'_, K>,
    best: HashMap<u32, SortValue>,
    descending: bool,
    want: usize,
) -> Result<Vec<Place>, Error> {
    let columns: Vec<u32> = best.keys().copied().collect();
    let rkeys = reader.rkeys(&columns).await?;
    let mut best = best;
    let mut places: Vec<Place> = columns
        .iter()
        .zip(rkeys)
        .map(|(column, rkey)| Place {
            value: best.remove(column),
            rkey,
        })
        .collect();
    places.sort_by(|a, b| compare(a, b, descending));
    places.truncate(want);
    Ok(places)
}

/// The first `want` records of `bits` with a value at the integer or
/// datetime index `path`, after `after`: those whose best value is past
/// the cursor's are dropped with one comparison over the bit-sliced rows,
/// the ties at the cursor's value kept for their record keys, then the
/// first of the rest found by the top-k walk ([`Reader::top_columns`]);
/// only those candidates' values are read back.
///
/// While columns are in record-key order (no column out of order), ties
/// are taken by column, lowest first, so a page among thousands of equal
/// values reads the page's record keys, not every tie's.
async fn number_places<K: Kv>(
    reader: &Reader<'_, K>,
    path: &str,
    bits: &RoaringBitmap,
    after: Option<&Place>,
    descending: bool,
    want: usize,
) -> Result<Vec<Place>, Error> {
    let in_order = reader.out_of_order().await?.is_empty();
    // The matches not placed yet; those without a value at `path` among
    // them are passed over by every comparison below (each starts from
    // the columns with a value).
    let mut pool = std::borrow::Cow::Borrowed(bits);
    let mut places = Vec::new();
    match after {
        Some(Place {
            value: Some(SortValue::Number(v)),
            rkey,
        }) => {
            // A record's best value is past the cursor's when some value is.
            let (past, tied) = reader.past_and_tied(path, *v, descending, &pool).await?;
            let left = pool.to_mut();
            *left -= past;
            *left -= &tied;
            if in_order {
                let mut tied = tied;
                // The ties whose record keys sort after the cursor's.
                match reader.column_near(rkey, false).await? {
                    Some((column, true)) => {
                        tied.remove_range(..=column);
                    }
                    Some((column, false)) => {
                        tied.remove_range(..column);
                    }
                    None => tied.clear(),
                }
                let columns: Vec<u32> = tied.iter().take(want).collect();
                places = reader
                    .rkeys(&columns)
                    .await?
                    .into_iter()
                    .map(|rkey| Place {
                        value: Some(SortValue::Number(*v)),
                        rkey,
                    })
                    .collect();
            } else {
                let tied = rkeys_after(reader, &tied, rkey).await?;
                let best = tied.iter().map(|c| (c, SortValue::Number(*v))).collect();
                places = first_places(reader, best, descending, want).await?;
            }
        }
        Some(_) => return Ok(Vec::new()),
        None => {}
    }
    if places.len() < want && !pool.is_empty() {
        let need = (want - places.len()) as u64;
        let split = if in_order {
            reader
                .top_columns_split(path, &pool, need, descending)
                .await?
        } else {
            None
        };
        let candidates = match split {
            // Those tied at the last value that the page has room for: the
            // lowest columns, which hold the lowest record keys.
            Some((before, tied)) => {
                let room = need.saturating_sub(before.len());
                let room = usize::try_from(room).unwrap_or(usize::MAX);
                before | tied.iter().take(room).collect::<RoaringBitmap>()
            }
            None => reader.top_columns(path, &pool, need, descending).await?,
        };
        let mut best: HashMap<u32, SortValue> = HashMap::new();
        for (column, value) in reader.values(path, &candidates).await? {
            let value = SortValue::Number(value);
            best.entry(column)
                .and_modify(|b| {
                    if (descending && value > *b) || (!descending && value < *b) {
                        *b = value.clone();
                    }
                })
                .or_insert(value);
        }
        places.extend(first_places(reader, best, descending, want - places.len()).await?);
    }
    Ok(places)
}

/// The first `want` records of `bits` with a value at the keyword index
/// `path`, after `after`: the dictionary's rows walked in value order
/// (reversed descending), each record taking the value of the first row
/// it is in (its smallest ascending, largest descending), until the page
/// is full with the last row's ties.
async fn keyword_places<K: Kv>(
    reader: &Reader<'_, K>,
    path: &str,
    bits: &RoaringBitmap,
    after: Option<&Place>,
    descending: bool,
    want: usize,
) -> Result<Vec<Place>, Error> {
    if after.is_some_and(|a| a.value.is_none()) {
        return Ok(Vec::new());
    }
    let mut rows = reader.rows_in_value_order(path).await?;
    if descending {
        rows.reverse();
    }
    let mut seen = RoaringBitmap::new();
    let mut best: HashMap<u32, SortValue> = HashMap::new();
    let mut kept = 0usize;
    for (value, row) in rows {
        let value = SortValue::Keyword(value);
        let columns = (reader.keyword_columns(path, row).await? & bits) - &seen;
        seen |= &columns;
        if let Some(a) = after.and_then(|a| a.value.as_ref()) {
            let before = if descending { value > *a } else { value < *a };
            if before {
                continue;
            }
        }
        let columns = match after {
            Some(a) if a.value.as_ref() == Some(&value) => {
                rkeys_after(reader, &columns, &a.rkey).await?
            }
            _ => columns,
        };
        kept += columns.len() as usize;
        best.extend(columns.iter().map(|c| (c, value.clone())));
        if kept >= want {
            break;
        }
    }
    first_places(reader, best, descending, want).await
}
