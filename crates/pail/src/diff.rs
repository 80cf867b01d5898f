//! [`diff`] between two trees, and [`merge`] of trees into a base.

use std::{collections::HashSet, sync::Arc};

use cid::Cid;

use crate::{Mutation, batch::Batch, error::Error, fetcher::ShardFetcher, shard::Shard};

/// One key whose value differs between two trees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyChange {
    /// The key.
    pub key: String,
    /// Its value in the first tree (`None`: created).
    pub old: Option<Cid>,
    /// Its value in the second tree (`None`: deleted).
    pub new: Option<Cid>,
}

/// The difference between two trees.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diff {
    /// Changed keys, in key order.
    pub keys: Vec<KeyChange>,
    /// Shards of the second tree that the first does not reach: every
    /// shard only the second tree reaches, each once. May also name a
    /// shard whose contents equal those of one inside a subtree both trees
    /// share (equal contents, one CID), which the walk did not open.
    pub additions: Vec<Cid>,
    /// Shards of the first tree that the second does not reach, with the
    /// same caveat: check reachability before deleting blocks.
    pub removals: Vec<Cid>,
}

/// The next thing a tree walk yields, in key order.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Item {
    /// A key with user data.
    Data(String, Cid),
    /// A whole subtree: every key in it extends this full key.
    Subtree(String, Cid),
}

impl Item {
    /// Orders items: a subtree at `k` comes after the data at `k` and
    /// before any key that does not extend `k`.
    fn cmp_position(&self, other: &Self) -> std::cmp::Ordering {
        use std::cmp::Ordering::{Greater, Less};
        match (self, other) {
            (Self::Data(a, _), Self::Data(b, _)) | (Self::Subtree(a, _), Self::Subtree(b, _)) => {
                a.cmp(b)
            }
            (Self::Data(a, _), Self::Subtree(b, _)) => {
                if a.as_str() <= b.as_str() {
                    Less
                } else {
                    Greater
                }
            }
            (Self::Subtree(a, _), Self::Data(b, _)) => {
                if b.as_str() <= a.as_str() {
                    Greater
                } else {
                    Less
                }
            }
        }
    }
}

/// A walk over one tree that can skip or open subtrees.
struct Walk {
    stack: Vec<(Arc<Shard>, String, usize, bool)>,
    visited: Vec<Cid>,
}

impl Walk {
    fn new(root: Arc<Shard>) -> Self {
        Self {
            visited: vec![root.cid()],
            stack: vec![(root, String::new(), 0, false)],
        }
    }

    /// The next item, without consuming it.
    fn peek(&mut self) -> Option<Item> {
        loop {
            let (shard, prefix, i, data_done) = self.stack.last()?;
            if *i == shard.len() {
                self.stack.pop();
                continue;
            }
            let key = format!("{prefix}{}", shard.key(*i));
            let value = shard.value(*i);
            return Some(match (value.data(), value.link()) {
                (Some(data), _) if !data_done => Item::Data(key, data),
                (_, Some(link)) => Item::Subtree(key, link),
                // Data already yielded and no link: move on.
                _ => {
                    self.advance();
                    continue;
                }
            });
        }
    }

    /// Consumes the current item (for a subtree: skips it unopened).
    fn advance(&mut self) {
        let Some((shard, _, i, data_done)) = self.stack.last_mut() else {
            return;
        };
        let value = shard.value(*i);
        if value.data().is_some() && !*data_done && value.link().is_some() {
            *data_done = true;
        } else {
            *i += 1;
            *data_done = false;
        }
    }

    /// Replaces the current item, a subtree, by its contents.
    async fn open<F: ShardFetcher>(
        &mut self,
        fetcher: &F,
        key: String,
        link: Cid,
    ) -> Result<(), Error> {
        self.advance();
        let child = fetcher.get_shard(&link).await?;
        self.visited.push(link);
        self.stack.push((child, key, 0, false));
        Ok(())
    }
}

/// The key-level changes from tree `a` to tree `b`, and the shards added
/// and removed.
///
/// Subtrees that both trees hold under the same key with the same CID are
/// skipped unopened; everything else is compared key by key, so trees of
/// different shapes (Pail's shape depends on history) still diff correctly.
///
/// # Errors
///
/// When a shard cannot be fetched.
pub async fn diff<F: ShardFetcher>(fetcher: &F, a: Cid, b: Cid) -> Result<Diff, Error> {
    if a == b {
        return Ok(Diff::default());
    }
    let mut wa = Walk::new(fetcher.get_shard(&a).await?);
    let mut wb = Walk::new(fetcher.get_shard(&b).await?);
    let mut keys = Vec::new();
    loop {
        let (ia, ib) = (wa.peek(), wb.peek());
        match (ia, ib) {
            (None, None) => break,
            (Some(Item::Subtree(ka, la)), Some(Item::Subtree(kb, lb))) if ka == kb && la == lb => {
                wa.advance();
                wb.advance();
            }
            (Some(Item::Data(ka, va)), Some(Item::Data(kb, vb))) if ka == kb => {
                if va != vb {
                    keys.push(KeyChange {
                        key: ka,
                        old: Some(va),
                        new: Some(vb),
                    });
                }
                wa.advance();
                wb.advance();
            }
            (ia, ib) => {
                // Take the first item by position; open it if it is a subtree.
                let take_a = match (&ia, &ib) {
                    (Some(x), Some(y)) => x.cmp_position(y).is_le(),
                    (Some(_), None) => true,
                    _ => false,
                };
                let (walk, item) = if take_a { (&mut wa, ia) } else { (&mut wb, ib) };
                match item {
                    Some(Item::Subtree(k, link)) => walk.open(fetcher, k, link).await?,
                    Some(Item::Data(k, v)) => {
                        walk.advance();
                        keys.push(if take_a {
                            KeyChange {
                                key: k,
                                old: Some(v),
                                new: None,
                            }
                        } else {
                            KeyChange {
                                key: k,
                                old: None,
                                new: Some(v),
                            }
                        });
                    }
                    None => break,
                }
            }
        }
    }
    let seen_a: HashSet<Cid> = wa.visited.iter().copied().collect();
    let seen_b: HashSet<Cid> = wb.visited.iter().copied().collect();
    let mut additions: Vec<Cid> = seen_b.difference(&seen_a).copied().collect();
    let mut removals: Vec<Cid> = seen_a.difference(&seen_b).copied().collect();
    additions.sort();
    removals.sort();
    Ok(Diff {
        keys,
        additions,
        removals,
    })
}

/// Applies to `base` every key change that each target made relative to
/// `base`, in target order (a later target wins on the same key).
///
/// The fetcher must hold the shards of `base` and of every target.
///
/// # Errors
///
/// When a shard cannot be fetched, or a put cannot fit.
pub async fn merge<F: ShardFetcher>(
    fetcher: &F,
    base: Cid,
    targets: &[Cid],
) -> Result<Mutation, Error> {
    let mut diffs = Vec::with_capacity(targets.len());
    for target in targets {
        diffs.push(diff(fetcher, base, *target).await?);
    }
    let mut batch = Batch::new(fetcher, base).await?;
    for d in diffs {
        for change in d.keys {
            match change.new {
                Some(value) => batch.put(&change.key, value).await?,
                None => batch.del(&change.key).await?,
            };
        }
    }
    Ok(batch.commit())
}
