//! `query --sort PATH [--desc]`: matching records ordered by their value
//! at an indexed path, ties by record key, records without a value last;
//! a record with several values sorts by its smallest ascending and its
//! largest descending. Pages carry a cursor naming the head they were
//! read at: a cursor of another head is refused (a write may have moved a
//! record across the page boundary), never silently skipped or repeated.

use std::cmp::Ordering;
use std::collections::HashMap;

use index::{IndexKind, Keyword};
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
        self.sync_cache().await?;
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
        let head = self
            .store
            .head(&self.id)
            .await?
            .map(|h| h.commit.to_string())
            .unwrap_or_default();
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
        let Some((reader, bits)) = self.matching(collection, where_).await? else {
            return Ok(QueryPage {
                records: Vec::new(),
                cursor: None,
            });
        };
        // Each matching column's value: its smallest ascending, largest
        // descending.
        let mut best: HashMap<u32, SortValue> = HashMap::new();
        let mut keep = |column: u32, value: SortValue| {
            best.entry(column)
                .and_modify(|b| {
                    if (descending && value > *b) || (!descending && value < *b) {
                        *b = value.clone();
                    }
                })
                .or_insert(value);
        };
        match kind {
            IndexKind::Keyword => {
                for (column, value) in reader.keyword_values(path, &bits).await? {
                    keep(column, SortValue::Keyword(value));
                }
            }
            IndexKind::Integer | IndexKind::Datetime => {
                for (column, value) in reader.values(path, &bits).await? {
                    keep(column, SortValue::Number(value));
                }
            }
            IndexKind::Text => {}
        }
        let columns: Vec<u32> = bits.iter().collect();
        let rkeys = reader.rkeys(&columns).await?;
        let mut places: Vec<Place> = columns
            .iter()
            .zip(rkeys)
            .map(|(column, rkey)| Place {
                value: best.remove(column),
                rkey,
            })
            .collect();
        places.sort_by(|a, b| compare(a, b, descending));
        let start = match &after {
            Some(last) => {
                places.partition_point(|p| compare(p, last, descending) != Ordering::Greater)
            }
            None => 0,
        };
        let end = start.saturating_add(limit).min(places.len());
        let page = &places[start..end];
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
