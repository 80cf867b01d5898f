//! Queries over the field indexes: matching records, counts, top values
//! and stats, through the repository's row cache.

use std::sync::Arc;

use roaring::RoaringBitmap;
use store::Kv;

use index::{Bucket, Declared, Group, IndexDecl, IndexKind, Interval, Reader, Stats, TopValue};

use crate::{error::Error, record::Record, repository::state::Repository};

/// One page of [`Repository::query`].
#[derive(Debug, Clone)]
pub struct QueryPage {
    /// (rkey, record), in rkey order (descending with `reverse`).
    pub records: Vec<(String, Record)>,
    /// Where the next page starts, present when more may follow.
    pub cursor: Option<String>,
}

/// A page when column order is not rkey order: walk the columns by rkey.
async fn page_by_rkey<K: Kv>(
    reader: &Reader<'_, K>,
    bits: &RoaringBitmap,
    cursor: Option<&str>,
    reverse: bool,
    limit: usize,
) -> Result<Vec<String>, Error> {
    let mut out = Vec::with_capacity(limit);
    let packed = reader.packed().await?;
    let mut walk = index::Walk::new(reader.kv, reader.scope, &packed, cursor, reverse).await?;
    while out.len() < limit {
        let Some((rkey, column)) = walk.next().await? else {
            break;
        };
        if bits.contains(column) {
            out.push(rkey);
        }
    }
    Ok(out)
}

/// Record reads a page's task keeps waiting at once: a read not in
/// SlateDB's block cache waits on a file read made on a blocking thread.
const READS_IN_FLIGHT: usize = 8;

impl<K: Kv> Repository<K> {
    pub(super) fn clear_cache(&self) {
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
    }

    /// The declarations of `collection`, through the cache.
    pub(super) async fn declared(&self, collection: &str) -> Result<Arc<Vec<Declared>>, Error> {
        if let Some(d) = self.lock_cache().declared(collection) {
            return Ok(d);
        }
        let d = Arc::new(index::declarations(self.store.kv(), &self.id, Some(collection)).await?);
        self.lock_cache().set_declared(collection, Arc::clone(&d));
        Ok(d)
    }

    /// The index declarations of `collection`, without their scopes.
    async fn declared_indexes(&self, collection: &str) -> Result<Vec<IndexDecl>, Error> {
        Ok(self
            .declared(collection)
            .await?
            .iter()
            .map(|d| d.decl.clone())
            .collect())
    }

    pub(super) fn lock_cache(&self) -> std::sync::MutexGuard<'_, index::IndexCache> {
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Empties the cache unless it is of the current head and index epoch:
    /// that head (`None` for a repository without commits).
    ///
    /// # Errors
    ///
    /// [`Error::IndexRebuildPending`] while the indexes do not describe
    /// the records (an import's rebuild not finished).
    pub(super) async fn sync_cache(&self) -> Result<Option<cid::Cid>, Error> {
        let kv = self.store.kv();
        // Taken before the reads: a write they might miss changes it.
        let stamp = kv.read_stamp();
        let now = self.env.now_micros();
        if let Some(stamp) = stamp
            && let Some(head) = self.lock_cache().checked_head(stamp, now)
        {
            return Ok(head);
        }
        let head = self.store.head(&self.id).await?.map(|h| h.commit);
        // The store's one writer changes the epoch only here, emptying the
        // cache each time: while the cache follows the head, its epoch is
        // current (one point read per query saved).
        if kv.sole_writer() {
            let mut cache = self.lock_cache();
            if cache.synced_with(head) {
                cache.set_checked(stamp, now);
                return Ok(head);
            }
        }
        let epoch = index::epoch(kv, &self.id).await?;
        if epoch.rebuild_pending {
            return Err(Error::IndexRebuildPending(self.id.clone()));
        }
        let mut cache = self.lock_cache();
        cache.sync(head, epoch.number);
        cache.set_checked(stamp, now);
        Ok(head)
    }

    /// The reader of `collection`'s indexes and the plan of `where_` over
    /// them (`None` without one); `None` when no `where` was given and the
    /// collection has no index (or its indexes await a rebuild: the record
    /// index answers then).
    async fn planned<'a>(
        &'a self,
        collection: &str,
        where_: Option<&str>,
    ) -> Result<Option<(Reader<'a, K>, Option<index::Plan>)>, Error> {
        rkey::validate_nsid(collection)?;
        let expr = parse_where(where_)?;
        match self.sync_cache().await {
            Err(Error::IndexRebuildPending(_)) if expr.is_none() => return Ok(None),
            synced => synced?,
        };
        self.planned_synced(collection, expr.as_ref()).await
    }

    /// [`Repository::planned`] for a caller that has synced the cache (and
    /// parsed `expr`) in this query.
    async fn planned_synced<'a>(
        &'a self,
        collection: &str,
        expr: Option<&index::Expr>,
    ) -> Result<Option<(Reader<'a, K>, Option<index::Plan>)>, Error> {
        let declared = self.declared(collection).await?;
        let plan = expr
            .map(|e| index::eval_plan(collection, e, &declared))
            .transpose()?;
        let Some(scope) = declared.first().map(|d| d.scope) else {
            return Ok(None);
        };
        Ok(Some((
            Reader::new(self.store.kv(), &self.cache, scope),
            plan,
        )))
    }

    /// The matching columns of `collection` and the reader that found
    /// them, for a caller that has synced the cache (and parsed `expr`) in
    /// this query; `None` as [`Repository::planned`].
    pub(super) async fn matching_synced<'a>(
        &'a self,
        collection: &str,
        expr: Option<&index::Expr>,
    ) -> Result<Option<(Reader<'a, K>, index::Matches)>, Error> {
        let Some((reader, plan)) = self.planned_synced(collection, expr).await? else {
            return Ok(None);
        };
        let bits = match &plan {
            Some(p) => reader.eval(p).await?,
            None => reader.all().await?,
        };
        Ok(Some((reader, bits)))
    }

    /// The records of `collection` matching `where_` (every record without
    /// it), in rkey order (descending with `reverse`), up to `limit` after
    /// `cursor`, as `listRecords` pages them.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidQuery`] naming the position or path at fault, or a
    /// storage error.
    pub async fn query(
        &self,
        collection: &str,
        where_: Option<&str>,
        cursor: Option<&str>,
        reverse: bool,
        limit: usize,
    ) -> Result<QueryPage, Error>
    where
        K: 'static,
    {
        let limit = limit.max(1);
        // One more than asked tells whether another page follows.
        let want = limit.saturating_add(1);
        let _search = self.search.read().await;
        let Some((reader, plan)) = self.planned(collection, where_).await? else {
            let mut records = self.list_records(collection, cursor, reverse, want).await?;
            let more = records.len() > limit;
            records.truncate(limit);
            let cursor = records.last().filter(|_| more).map(|(k, _)| k.clone());
            return Ok(QueryPage { records, cursor });
        };
        let mut items: Vec<String> = if reader.out_of_order().await?.is_empty() {
            let columns = reader
                .first_columns(plan.as_ref(), cursor, reverse, want)
                .await?;
            reader.rkeys(&columns).await?
        } else {
            let bits = match &plan {
                Some(p) => reader.eval(p).await?,
                None => reader.all().await?,
            };
            page_by_rkey(&reader, &bits, cursor, reverse, want).await?
        };
        let more = items.len() > limit;
        items.truncate(limit);
        let records = self.read_records(collection, items).await?;
        let cursor = records.last().filter(|_| more).map(|(k, _)| k.clone());
        Ok(QueryPage { records, cursor })
    }

    /// The records of a page: from the cache where it holds them, the
    /// rest read in two tasks (the reads are lookups that mostly wait on
    /// memory, and a page's are independent) and cached. Called with the
    /// search lock held, so no commit lands between the cache's head and
    /// the reads.
    pub(super) async fn read_records(
        &self,
        collection: &str,
        items: Vec<String>,
    ) -> Result<Vec<(String, Record)>, Error>
    where
        K: 'static,
    {
        let path = |rkey: &str| format!("{collection}/{rkey}");
        let mut found: Vec<Option<store::Block>> = {
            let mut path = String::with_capacity(collection.len() + 1 + rkey::TID_LEN);
            let mut cache = self.lock_cache();
            items
                .iter()
                .map(|rkey| {
                    path.clear();
                    path.push_str(collection);
                    path.push('/');
                    path.push_str(rkey);
                    cache.record(&path)
                })
                .collect()
        };
        let missing: Vec<String> = items
            .iter()
            .zip(&found)
            .filter(|(_, f)| f.is_none())
            .map(|(rkey, _)| rkey.clone())
            .collect();
        let mut read = self.read_blocks(collection, missing).await?.into_iter();
        {
            let mut cache = self.lock_cache();
            for (rkey, slot) in items.iter().zip(&mut found) {
                if slot.is_none()
                    && let Some(block) = read.next()
                {
                    cache.insert_record(path(rkey), block.clone());
                    *slot = Some(block);
                }
            }
        }
        Ok(items
            .into_iter()
            .zip(found)
            .filter_map(|(rkey, block)| Some((rkey, Record::stored(block?))))
            .collect())
    }

    /// The blocks of `rkeys`' records in `collection`, in order, read in two
    /// tasks.
    async fn read_blocks(
        &self,
        collection: &str,
        rkeys: Vec<String>,
    ) -> Result<Vec<store::Block>, Error>
    where
        K: 'static,
    {
        if rkeys.is_empty() {
            return Ok(Vec::new());
        }
        let half = rkeys.len().div_ceil(2);
        let mut tasks = Vec::new();
        for chunk in rkeys.chunks(half) {
            let (store, id, collection, chunk) = (
                Arc::clone(&self.store),
                self.id.clone(),
                collection.to_owned(),
                chunk.to_vec(),
            );
            tasks.push(tokio::spawn(async move {
                use futures::{StreamExt as _, TryStreamExt as _};
                let (store, id, collection) = (&store, &id, &collection);
                futures::stream::iter(chunk)
                    .map(|rkey| async move {
                        store
                            .written_record_block(id, collection, &rkey)
                            .await?
                            .ok_or_else(|| {
                                Error::MalformedIndex(format!(
                                    "{collection}/{rkey} is indexed but not stored"
                                ))
                            })
                    })
                    .buffered(READS_IN_FLIGHT)
                    .try_collect::<Vec<_>>()
                    .await
            }));
        }
        let mut blocks = Vec::with_capacity(rkeys.len());
        for t in tasks {
            blocks.extend(t.await.map_err(|e| {
                Error::Io(std::io::Error::other(format!("a read task failed: {e}")))
            })??);
        }
        Ok(blocks)
    }

    /// How many records of `collection` match `where_` (all without it).
    ///
    /// # Errors
    ///
    /// As [`Repository::query`].
    pub async fn count(&self, collection: &str, where_: Option<&str>) -> Result<u64, Error> {
        let _search = self.search.read().await;
        match self.planned(collection, where_).await? {
            Some((reader, Some(plan))) => Ok(reader.count(&plan).await?),
            Some((reader, None)) => Ok(reader.all().await?.len()),
            None => self.record_count(collection).await,
        }
    }

    pub(super) fn index_of(
        declared: &[IndexDecl],
        collection: &str,
        path: &str,
        want: IndexKind,
        what: &str,
    ) -> Result<(), Error> {
        match declared.iter().find(|d| d.path == path) {
            Some(d) if d.kind == want => Ok(()),
            Some(d) => Err(Error::InvalidQuery(format!(
                "{what} needs {} index; {path} of {collection} has {} index",
                want.with_article(),
                d.kind.with_article()
            ))),
            None => Err(Error::InvalidQuery(format!(
                "{path} has no index in {collection}; add one with `datarepo index add {collection} {path} --kind {want}`"
            ))),
        }
    }

    /// The `limit` most frequent values of the keyword index at `path`
    /// among the records matching `where_`, by count descending then value.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidQuery`] when `path` has no keyword index, or as
    /// [`Repository::query`].
    pub async fn top_values(
        &self,
        collection: &str,
        path: &str,
        where_: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TopValue>, Error> {
        let _search = self.search.read().await;
        rkey::validate_nsid(collection)?;
        self.sync_cache().await?;
        let declared = self.declared_indexes(collection).await?;
        // A text index's values are its words: `--top` gives the most
        // frequent words among the matches.
        if !declared
            .iter()
            .any(|d| d.path == path && d.kind == IndexKind::Text)
        {
            Self::index_of(&declared, collection, path, IndexKind::Keyword, "--top")?;
        }
        let expr = parse_where(where_)?;
        let Some((reader, bits)) = self.matching_synced(collection, expr.as_ref()).await? else {
            return Ok(Vec::new());
        };
        Ok(reader.top(path, &bits, limit).await?)
    }

    /// Count, sum, min and max of the values of the integer index at
    /// `path` among the records matching `where_`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidQuery`] when `path` has no integer index, or as
    /// [`Repository::query`].
    pub async fn stats(
        &self,
        collection: &str,
        path: &str,
        where_: Option<&str>,
    ) -> Result<Stats, Error> {
        let _search = self.search.read().await;
        rkey::validate_nsid(collection)?;
        self.sync_cache().await?;
        let declared = self.declared_indexes(collection).await?;
        Self::index_of(&declared, collection, path, IndexKind::Integer, "--stats")?;
        let expr = parse_where(where_)?;
        let Some((reader, bits)) = self.matching_synced(collection, expr.as_ref()).await? else {
            return Ok(Stats::default());
        };
        Ok(reader.stats(path, &bits).await?)
    }

    /// Every combination of values at `paths` (keyword indexes, at most
    /// [`MAX_GROUP_PATHS`]) among the records matching `where_`, with how
    /// many records have it and, with `stats_path` (an integer index),
    /// the stats of its values over them: by count descending, then key.
    /// A record with several values at a path is in each of their groups.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidQuery`] when a path has no index of the kind it
    /// needs, or there are no paths or too many; as [`Repository::query`].
    pub async fn group_by(
        &self,
        collection: &str,
        paths: &[String],
        where_: Option<&str>,
        stats_path: Option<&str>,
    ) -> Result<Vec<Group>, Error> {
        if paths.is_empty() || paths.len() > MAX_GROUP_PATHS {
            return Err(Error::InvalidQuery(format!(
                "--group-by takes 1 to {MAX_GROUP_PATHS} paths, not {}",
                paths.len()
            )));
        }
        let _search = self.search.read().await;
        rkey::validate_nsid(collection)?;
        self.sync_cache().await?;
        let declared = self.declared_indexes(collection).await?;
        for path in paths {
            Self::index_of(
                &declared,
                collection,
                path,
                IndexKind::Keyword,
                "--group-by",
            )?;
        }
        if let Some(p) = stats_path {
            Self::index_of(&declared, collection, p, IndexKind::Integer, "--stats")?;
        }
        let expr = parse_where(where_)?;
        let Some((reader, bits)) = self.matching_synced(collection, expr.as_ref()).await? else {
            return Ok(Vec::new());
        };
        Ok(reader.groups(paths, &bits, stats_path).await?)
    }
}

impl<K: Kv> Repository<K> {
    /// `--histogram`: how many records matching `where_` have a value of
    /// the integer or datetime index at `path` in each bucket of
    /// `interval` (`docs/indexes.md`), from the first bucket to the last
    /// (or over `[from, to)`), empty ones included; and the index's kind.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidQuery`] when `path` has no integer or datetime
    /// index, the interval or a bound does not fit it, or there would be
    /// too many buckets; as [`Repository::query`].
    pub async fn histogram(
        &self,
        collection: &str,
        path: &str,
        where_: Option<&str>,
        interval: &str,
        from: Option<&str>,
        to: Option<&str>,
    ) -> Result<(IndexKind, Vec<Bucket>), Error> {
        let _search = self.search.read().await;
        rkey::validate_nsid(collection)?;
        self.sync_cache().await?;
        let declared = self.declared(collection).await?;
        let kind = match declared.iter().find(|d| d.decl.path == path) {
            Some(d) if matches!(d.decl.kind, IndexKind::Integer | IndexKind::Datetime) => {
                d.decl.kind
            }
            Some(d) => {
                return Err(Error::InvalidQuery(format!(
                    "--histogram needs an integer or datetime index; {path} of {collection} has {} index",
                    d.decl.kind.with_article()
                )));
            }
            None => {
                return Err(Error::InvalidQuery(format!(
                    "{path} has no index in {collection}; add one with `datarepo index add {collection} {path} --kind datetime` (or integer)"
                )));
            }
        };
        let interval = Interval::parse(kind, interval).map_err(Error::InvalidQuery)?;
        let bound = |flag: &str, text: Option<&str>| {
            text.map(|t| index::parse_bound(kind, flag, t))
                .transpose()
                .map_err(Error::InvalidQuery)
        };
        let (from, to) = (bound("--from", from)?, bound("--to", to)?);
        let expr = parse_where(where_)?;
        let Some((reader, bits)) = self.matching_synced(collection, expr.as_ref()).await? else {
            return Ok((kind, Vec::new()));
        };
        let buckets = reader.histogram(path, &bits, interval, from, to).await?;
        Ok((kind, buckets))
    }
}

/// Most paths one `--group-by` takes.
pub const MAX_GROUP_PATHS: usize = 3;

/// A query's `where` expression, parsed.
pub(super) fn parse_where(where_: Option<&str>) -> Result<Option<index::Expr>, Error> {
    where_
        .map(index::parse_where)
        .transpose()
        .map_err(Error::InvalidQuery)
}
