//! Reads: [`get`] and ordered, ranged [`entries`].

use std::{ops::ControlFlow, sync::Arc};

use cid::Cid;

use crate::{error::Error, fetcher::ShardFetcher, shard::Shard};

/// The value stored under `key`, if any.
///
/// # Errors
///
/// When a shard on the way cannot be fetched.
pub async fn get<F: ShardFetcher>(fetcher: &F, root: Cid, key: &str) -> Result<Option<Cid>, Error> {
    let mut shard = fetcher.get_shard(&root).await?;
    let mut rel = key.as_bytes();
    loop {
        match shard.search(rel) {
            Ok(i) => return Ok(shard.data(i)),
            Err(0) => return Ok(None),
            Err(pos) => {
                let prefix = shard.key_bytes(pos - 1);
                let Some(link) = shard
                    .value(pos - 1)
                    .link()
                    .filter(|_| rel.starts_with(prefix))
                else {
                    return Ok(None);
                };
                rel = &rel[prefix.len()..];
                shard = fetcher.get_shard(&link).await?;
            }
        }
    }
}

/// Which entries [`entries`] lists, in which order, and how many.
///
/// Bounds combine: a key is listed when it satisfies every bound given.
/// Keys compare in UTF-8 byte order (= Unicode code point order).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntriesOptions {
    /// Only keys that start with this.
    pub prefix: Option<String>,
    /// Only keys greater than this.
    pub gt: Option<String>,
    /// Only keys greater than or equal to this.
    pub gte: Option<String>,
    /// Only keys less than this.
    pub lt: Option<String>,
    /// Only keys less than or equal to this.
    pub lte: Option<String>,
    /// Descending key order.
    pub reverse: bool,
    /// At most this many entries.
    pub limit: Option<usize>,
}

/// A lower or upper bound on keys.
#[derive(Debug, Clone)]
struct Bound {
    key: Vec<u8>,
    inclusive: bool,
}

#[derive(Debug, Clone, Default)]
struct Range {
    lower: Vec<Bound>,
    upper: Vec<Bound>,
}

impl Range {
    fn new(o: &EntriesOptions) -> Self {
        let mut r = Self::default();
        let b = |s: &String, inclusive| Bound {
            key: s.as_bytes().to_vec(),
            inclusive,
        };
        r.lower.extend(o.gt.iter().map(|s| b(s, false)));
        r.lower.extend(o.gte.iter().map(|s| b(s, true)));
        r.upper.extend(o.lt.iter().map(|s| b(s, false)));
        r.upper.extend(o.lte.iter().map(|s| b(s, true)));
        if let Some(p) = &o.prefix {
            r.lower.push(b(p, true));
            // Keys starting with `p` are below p's successor (UTF-8 has no 0xff).
            if let Some(last) = p.as_bytes().last() {
                let mut succ = p.as_bytes().to_vec();
                if let Some(l) = succ.last_mut() {
                    *l = last + 1;
                }
                r.upper.push(Bound {
                    key: succ,
                    inclusive: false,
                });
            }
        }
        r
    }

    fn contains(&self, key: &[u8]) -> bool {
        if self.lower.is_empty() && self.upper.is_empty() {
            return true;
        }
        self.lower.iter().all(|b| {
            if b.inclusive {
                key >= &b.key[..]
            } else {
                key > &b.key[..]
            }
        }) && self.upper.iter().all(|b| {
            if b.inclusive {
                key <= &b.key[..]
            } else {
                key < &b.key[..]
            }
        })
    }

    /// Whether some key strictly extending `p` may lie in the range.
    fn may_hold_extensions_of(&self, p: &[u8]) -> bool {
        self.lower
            .iter()
            .all(|b| b.key.as_slice() <= p || b.key.starts_with(p))
            && self.upper.iter().all(|b| p < b.key.as_slice())
    }
}

struct Frame {
    shard: Arc<Shard>,
    /// Length of the full-key buffer before this shard's keys.
    prefix_len: usize,
    /// The entries that may matter: `lo..hi`.
    lo: usize,
    hi: usize,
    /// Next entry (forward) or one past it (reverse).
    cursor: usize,
    /// Reverse only: the child of entry `cursor - 1` was already listed.
    child_done: bool,
}

/// Calls `visit` for each entry of the tree at `root` that `options`
/// selects, in order, until it returns `Break` or the limit is reached.
///
/// Shards whose keys cannot be in range are not fetched, so listing a page
/// with `gt` (a cursor) and `limit` costs a walk down the tree, not a scan.
///
/// # Errors
///
/// When a shard on the way cannot be fetched.
pub async fn for_each_entry<F: ShardFetcher>(
    fetcher: &F,
    root: Cid,
    options: &EntriesOptions,
    mut visit: impl FnMut(&str, Cid) -> ControlFlow<()>,
) -> Result<(), Error> {
    let range = Range::new(options);
    let mut remaining = options.limit.unwrap_or(usize::MAX);
    if remaining == 0 {
        return Ok(());
    }
    let mut key = String::new();
    let root = fetcher.get_shard(&root).await?;
    let mut stack = vec![frame(root, "", &range, options.reverse)];
    while let Some(top) = stack.last_mut() {
        // Walk this shard's entries until one opens a child (or the end).
        let shard = Arc::clone(&top.shard);
        let keys = shard.keys();
        let prefix_len = top.prefix_len;
        let mut open = None;
        loop {
            let (i, descend) = if options.reverse {
                if top.cursor == top.lo {
                    break;
                }
                let i = top.cursor - 1;
                if top.child_done {
                    top.child_done = false;
                    top.cursor -= 1;
                    (i, false)
                } else {
                    top.child_done = true;
                    (i, true)
                }
            } else {
                if top.cursor == top.hi {
                    break;
                }
                top.cursor += 1;
                (top.cursor - 1, true)
            };
            key.truncate(prefix_len);
            key.push_str(keys.get(i));
            let emit_data = !options.reverse || !descend;
            if emit_data
                && range.contains(key.as_bytes())
                && let Some(data) = shard.data(i)
            {
                if visit(&key, data).is_break() {
                    return Ok(());
                }
                remaining -= 1;
                if remaining == 0 {
                    return Ok(());
                }
            }
            if descend
                && let Some(link) = shard.link(i)
                && range.may_hold_extensions_of(key.as_bytes())
            {
                open = Some(link);
                break;
            }
        }
        match open {
            Some(link) => {
                let child = fetcher.get_shard(&link).await?;
                stack.push(frame(child, &key, &range, options.reverse));
            }
            None => {
                stack.pop();
            }
        }
    }
    Ok(())
}

/// A frame over the entries of `shard` (at full-key `prefix`) that can
/// matter for `range`, found by binary search.
fn frame(shard: Arc<Shard>, prefix: &str, range: &Range, reverse: bool) -> Frame {
    let p = prefix.as_bytes();
    let mut lo = 0;
    let mut hi = shard.len();
    for b in &range.lower {
        if let Some(rel) = b.key.strip_prefix(p) {
            let mut i = shard.partition_point(|k| k < rel);
            // The entry just before may be a link whose keys extend past `rel`.
            if i > 0
                && rel.starts_with(shard.key_bytes(i - 1))
                && shard.value(i - 1).link().is_some()
            {
                i -= 1;
            }
            lo = lo.max(i);
        }
    }
    for b in &range.upper {
        if let Some(rel) = b.key.strip_prefix(p) {
            let i = if b.inclusive {
                shard.partition_point(|k| k <= rel)
            } else {
                shard.partition_point(|k| k < rel)
            };
            hi = hi.min(i);
        }
    }
    let hi = hi.max(lo);
    Frame {
        shard,
        prefix_len: p.len(),
        lo,
        hi,
        cursor: if reverse { hi } else { lo },
        child_done: false,
    }
}

/// The entries that `options` selects, as (key, value) pairs.
///
/// # Errors
///
/// When a shard on the way cannot be fetched.
pub async fn entries<F: ShardFetcher>(
    fetcher: &F,
    root: Cid,
    options: &EntriesOptions,
) -> Result<Vec<(String, Cid)>, Error> {
    let mut out = Vec::new();
    for_each_entry(fetcher, root, options, |k, v| {
        out.push((k.to_owned(), v));
        ControlFlow::Continue(())
    })
    .await?;
    Ok(out)
}
