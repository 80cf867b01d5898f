//! [`Batch`]: puts and deletes applied to an in-memory draft of the tree,
//! each changed shard encoded and hashed once, at [`Batch::commit`].
//!
//! Every operation follows the Pail rules exactly as a single put or delete
//! would (the single-operation functions are batches of one), so a batch
//! gives the root that the same operations applied one by one give: a shard
//! is split when its exact encoded length exceeds `maxSize` after the put
//! that made it so, whether or not it is hashed then.
//!
//! A draft shard is a list of 8-byte slots: an unchanged entry of the shard
//! it started from (by index, its bytes reused verbatim) or an entry owned by
//! the batch. Owned entries live in one arena, their keys and values as
//! encoded bytes in one byte buffer, so a batch of many puts allocates
//! almost nothing per put and only changed entries are ever re-encoded.

use std::sync::Arc;

use cid::Cid;

use crate::{
    Mutation, cbor,
    error::Error,
    fetcher::ShardFetcher,
    shard::Shard,
    shard::ShardConfig,
    shard::{Span, key_head, span},
};

/// Encoded length of a link to a shard (CIDv1, dag-cbor, sha2-256: 36
/// bytes), which a draft's link will have once it is hashed.
const SHARD_LINK_LEN: usize = 2 + 2 + 37;

/// A run of bytes in the arena.
#[derive(Debug, Clone, Copy)]
struct Bytes {
    off: usize,
    len: u32,
}

/// A child shard: committed (its encoded link, in the arena) or a draft.
#[derive(Debug, Clone, Copy)]
enum Child {
    Clean(Bytes),
    Draft(usize),
}

/// An entry value: a link, user data (an encoded CID link), or both.
#[derive(Debug, Clone, Copy)]
struct Val {
    link: Option<Child>,
    data: Option<Bytes>,
}

#[derive(Debug, Clone, Copy)]
struct Owned {
    /// `key_head(key)`, for fast comparisons.
    head: u64,
    key: Bytes,
    val: Val,
}

#[derive(Debug, Clone, Copy)]
enum Slot {
    /// Entry `i` of the draft's base shard, unchanged.
    Base(u32),
    /// Entry `i` of the arena.
    Owned(u32),
}

/// Owned entries and the bytes of their keys and values.
#[derive(Debug, Default)]
struct Arena {
    bytes: Vec<u8>,
    entries: Vec<Owned>,
}

impl Arena {
    fn push_bytes(&mut self, b: &[u8]) -> Bytes {
        let off = self.bytes.len();
        self.bytes.extend_from_slice(b);
        Bytes {
            off,
            len: b.len() as u32,
        }
    }

    fn push_cid(&mut self, cid: &Cid) -> Bytes {
        let off = self.bytes.len();
        cbor::write_cid(&mut self.bytes, cid);
        Bytes {
            off,
            len: (self.bytes.len() - off) as u32,
        }
    }

    fn get(&self, b: Bytes) -> &[u8] {
        &self.bytes[b.off..b.off + b.len as usize]
    }

    fn push_entry(&mut self, key: Bytes, val: Val) -> Slot {
        let head = key_head(self.get(key));
        self.entries.push(Owned { head, key, val });
        Slot::Owned((self.entries.len() - 1) as u32)
    }

    fn same_val(&self, a: Val, b: Val) -> bool {
        let link_eq = match (a.link, b.link) {
            (None, None) => true,
            (Some(Child::Draft(x)), Some(Child::Draft(y))) => x == y,
            (Some(Child::Clean(x)), Some(Child::Clean(y))) => self.get(x) == self.get(y),
            _ => false,
        };
        let data_eq = match (a.data, b.data) {
            (None, None) => true,
            (Some(x), Some(y)) => self.get(x) == self.get(y),
            _ => false,
        };
        link_eq && data_eq
    }

    fn val_len(&self, v: Val) -> usize {
        let link = match v.link {
            None => 0,
            Some(Child::Clean(b)) => 1 + b.len as usize,
            Some(Child::Draft(_)) => 1 + SHARD_LINK_LEN,
        };
        link + v.data.map_or(0, |d| d.len as usize)
    }
}

/// Splits an encoded entry value into its link and data parts.
fn split_value(v: &[u8]) -> (Option<&[u8]>, Option<&[u8]>) {
    let link_len = |at: usize| {
        let mut pos = at + 2;
        cbor::read_head(v, &mut pos, cbor::MAJOR_BYTES)
            .map_or(v.len() - at, |n| pos - at + n as usize)
    };
    match v.first() {
        Some(0x81) => (v.get(1..), None),
        Some(0x82) => {
            let n = link_len(1).min(v.len() - 1);
            (v.get(1..1 + n), v.get(1 + n..))
        }
        _ => (None, Some(v)),
    }
}

#[derive(Debug)]
struct Draft {
    config: ShardConfig,
    base: Option<Arc<Shard>>,
    slots: Vec<Slot>,
    /// Sum of the slots' encoded lengths.
    entries_len: usize,
    /// Whether the slots differ from the base's entries.
    changed: bool,
}

impl Draft {
    fn from_base(base: Arc<Shard>) -> Self {
        let n = base.len();
        let entries_len = base
            .spans()
            .first()
            .zip(base.spans().last())
            .map_or(0, |(f, l)| (l.end - f.start) as usize);
        Self {
            config: base.config(),
            slots: (0..n as u32).map(Slot::Base).collect(),
            base: Some(base),
            entries_len,
            changed: false,
        }
    }

    fn new(config: ShardConfig, slots: Vec<Slot>, a: &Arena) -> Self {
        let mut d = Self {
            config,
            base: None,
            slots,
            entries_len: 0,
            changed: true,
        };
        d.entries_len = d.slots.iter().map(|s| d.slot_len(*s, a)).sum();
        d
    }

    fn base(&self) -> &Shard {
        // Base slots only exist in drafts made from a base shard.
        self.base.as_deref().unwrap_or_else(|| unreachable_base())
    }

    fn key<'a>(&'a self, i: usize, a: &'a Arena) -> &'a [u8] {
        match self.slots[i] {
            Slot::Base(b) => self.base().key_bytes(b as usize),
            Slot::Owned(e) => a.get(a.entries[e as usize].key),
        }
    }

    fn key_str<'a>(&'a self, i: usize, a: &'a Arena) -> &'a str {
        std::str::from_utf8(self.key(i, a)).unwrap_or_default()
    }

    /// The value of slot `i`, as arena bytes (copied in for base entries).
    fn val(&self, i: usize, a: &mut Arena) -> Val {
        match self.slots[i] {
            Slot::Owned(e) => a.entries[e as usize].val,
            Slot::Base(b) => {
                let (link, data) = split_value(self.base().value_bytes(b as usize));
                Val {
                    link: link.map(|l| Child::Clean(a.push_bytes(l))),
                    data: data.map(|d| a.push_bytes(d)),
                }
            }
        }
    }

    /// The data CID of slot `i`, if it has data.
    fn data_cid(&self, i: usize, a: &Arena) -> Option<Cid> {
        let data = match self.slots[i] {
            Slot::Owned(e) => a.get(a.entries[e as usize].val.data?),
            Slot::Base(b) => split_value(self.base().value_bytes(b as usize)).1?,
        };
        cbor::read_cid(data, &mut 0)
    }

    /// The key of slot `i`, as arena bytes (copied in for base entries).
    fn owned_key(&self, i: usize, a: &mut Arena) -> Bytes {
        match self.slots[i] {
            Slot::Owned(e) => a.entries[e as usize].key,
            Slot::Base(b) => a.push_bytes(self.base().key_bytes(b as usize)),
        }
    }

    /// Whether slot `i` links to a child, and whether it has data.
    fn shape(&self, i: usize, a: &Arena) -> (bool, bool) {
        match self.slots[i] {
            Slot::Owned(e) => {
                let v = a.entries[e as usize].val;
                (v.link.is_some(), v.data.is_some())
            }
            Slot::Base(b) => {
                let (link, data) = split_value(self.base().value_bytes(b as usize));
                (link.is_some(), data.is_some())
            }
        }
    }

    fn slot_len(&self, slot: Slot, a: &Arena) -> usize {
        match slot {
            Slot::Base(b) => {
                let s = self.base().spans()[b as usize];
                (s.end - s.start) as usize
            }
            Slot::Owned(e) => {
                let o = a.entries[e as usize];
                let key_len = o.key.len as usize;
                1 + cbor::head_len(key_len as u64) + key_len + a.val_len(o.val)
            }
        }
    }

    /// Exact encoded length of the shard this draft would become.
    fn size(&self) -> usize {
        cbor::header_len(self.slots.len())
            + self.entries_len
            + cbor::trailer_len(self.config.max_size, self.config.max_key_length)
    }

    fn search(&self, key: &[u8], a: &Arena) -> Result<usize, usize> {
        let head = key_head(key);
        let mut lo = 0;
        let mut hi = self.slots.len();
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let order = match self.slots[mid] {
                Slot::Base(b) => {
                    let base = self.base();
                    base.cmp_span(&base.spans()[b as usize], head, key)
                }
                Slot::Owned(e) => {
                    let o = &a.entries[e as usize];
                    o.head.cmp(&head).then_with(|| a.get(o.key).cmp(key))
                }
            };
            match order {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    fn set(&mut self, i: usize, slot: Slot, a: &Arena) -> Slot {
        self.entries_len =
            self.entries_len - self.slot_len(self.slots[i], a) + self.slot_len(slot, a);
        self.changed = true;
        std::mem::replace(&mut self.slots[i], slot)
    }

    fn insert(&mut self, i: usize, slot: Slot, a: &Arena) {
        self.entries_len += self.slot_len(slot, a);
        self.changed = true;
        self.slots.insert(i, slot);
    }

    fn remove(&mut self, i: usize, a: &Arena) -> Slot {
        let slot = self.slots.remove(i);
        self.entries_len -= self.slot_len(slot, a);
        self.changed = true;
        slot
    }

    /// Index range of the entries whose keys start with `prefix`.
    fn prefix_range(&self, prefix: &[u8], a: &Arena) -> (usize, usize) {
        let lo = match self.search(prefix, a) {
            Ok(i) | Err(i) => i,
        };
        let mut hi = lo;
        // Entries with the prefix are contiguous from `lo`; gallop, then bisect.
        let mut step = 1;
        while hi < self.slots.len() && self.key(hi, a).starts_with(prefix) {
            hi = (hi + step).min(self.slots.len());
            step *= 2;
        }
        let (mut x, mut y) = (lo, hi);
        while x < y {
            let mid = x + (y - x) / 2;
            if self.key(mid, a).starts_with(prefix) {
                x = mid + 1;
            } else {
                y = mid;
            }
        }
        (lo, x)
    }
}

#[cold]
fn unreachable_base() -> &'static Shard {
    // A draft without a base holds only owned slots; reaching here would be
    // a bug in this module. Fail loudly in tests, safely otherwise.
    debug_assert!(false, "base slot in a draft without a base shard");
    static EMPTY: std::sync::OnceLock<Shard> = std::sync::OnceLock::new();
    EMPTY.get_or_init(|| Shard::empty(ShardConfig::default()))
}

/// Removes the last character of `s`.
fn drop_last_char(s: &str) -> &str {
    s.char_indices().next_back().map_or("", |(i, _)| &s[..i])
}

/// What `put_entry` changed at which index, so a failed put can be undone.
enum Undo {
    /// The entry already held the value.
    Unchanged(usize),
    Replaced(usize, Slot),
    Inserted(usize),
}

impl Undo {
    /// The index of the entry put.
    fn index(&self) -> usize {
        match self {
            Self::Unchanged(i) | Self::Replaced(i, _) | Self::Inserted(i) => *i,
        }
    }
}

/// Many puts and deletes on one tree, committed together.
///
/// ```
/// # pollster::block_on(async {
/// use pail::{Batch, MemoryBlocks, Shard, ShardConfig};
/// use std::sync::Arc;
///
/// let blocks = MemoryBlocks::new();
/// let empty = Arc::new(Shard::empty(ShardConfig::default()));
/// blocks.insert(empty.clone());
/// let value = empty.cid(); // any CID will do as a value
///
/// let mut batch = Batch::new(&blocks, empty.cid()).await?;
/// batch.put("apple", value).await?;
/// batch.put("banana", value).await?;
/// batch.del("apple").await?;
/// let m = batch.commit();
/// blocks.apply(&m, true);
/// assert_eq!(pail::get(&blocks, m.root, "banana").await?, Some(value));
/// # Ok::<_, pail::Error>(()) }).unwrap();
/// ```
#[derive(Debug)]
pub struct Batch<'f, F> {
    fetcher: &'f F,
    /// `drafts[0]` is the root.
    drafts: Vec<Draft>,
    arena: Arena,
    /// Base shards of drafts that were dropped from the tree.
    dropped: Vec<Cid>,
}

impl<'f, F: ShardFetcher> Batch<'f, F> {
    /// Starts a batch on the tree at `root`.
    ///
    /// # Errors
    ///
    /// When the root shard cannot be fetched.
    pub async fn new(fetcher: &'f F, root: Cid) -> Result<Self, Error> {
        let shard = fetcher.get_shard(&root).await?;
        Ok(Self {
            fetcher,
            drafts: vec![Draft::from_base(shard)],
            arena: Arena::default(),
            dropped: Vec::new(),
        })
    }

    /// Makes the child behind slot `i` of draft `d` a draft; returns its index.
    async fn open_child(&mut self, d: usize, i: usize) -> Result<Option<usize>, Error> {
        let a = &mut self.arena;
        let val = self.drafts[d].val(i, a);
        let link = match val.link {
            None => return Ok(None),
            Some(Child::Draft(c)) => return Ok(Some(c)),
            Some(Child::Clean(b)) => {
                let mut pos = 0;
                cbor::read_cid(a.get(b), &mut pos).ok_or_else(|| Error::CorruptTree {
                    cid: self.drafts[d]
                        .base
                        .as_ref()
                        .map(|s| s.cid())
                        .unwrap_or_default(),
                    reason: "unreadable shard link".into(),
                })?
            }
        };
        let shard = self.fetcher.get_shard(&link).await?;
        let c = self.drafts.len();
        self.drafts.push(Draft::from_base(shard));
        let a = &mut self.arena;
        let key = self.drafts[d].owned_key(i, a);
        let slot = a.push_entry(
            key,
            Val {
                link: Some(Child::Draft(c)),
                data: val.data,
            },
        );
        // Same encoded length; not a change unless the child changes.
        let draft = &mut self.drafts[d];
        let changed = draft.changed;
        draft.set(i, slot, a);
        draft.changed = changed;
        Ok(Some(c))
    }

    /// Finds the draft holding `key`: returns the path of (draft, slot)
    /// links taken, the target draft and the byte offset of the key within it.
    ///
    /// Within a shard, an exact match stops the descent; otherwise the only
    /// entry that can be a linked prefix of the key is its immediate
    /// predecessor (a link's key prefixes no other entry of its shard).
    async fn traverse(&mut self, key: &str) -> Result<(Vec<(usize, usize)>, usize, usize), Error> {
        let mut path = Vec::new();
        let (mut d, mut offset) = (0, 0);
        loop {
            let rel = &key.as_bytes()[offset..];
            let draft = &self.drafts[d];
            let pos = match draft.search(rel, &self.arena) {
                Ok(_) => break,
                Err(pos) => pos,
            };
            if pos == 0 || !rel.starts_with(draft.key(pos - 1, &self.arena)) {
                break;
            }
            let prefix_len = draft.key(pos - 1, &self.arena).len();
            match self.open_child(d, pos - 1).await? {
                Some(c) => {
                    path.push((d, pos - 1));
                    d = c;
                    offset += prefix_len;
                }
                None => break,
            }
        }
        Ok((path, d, offset))
    }

    /// Puts `value` under `key`; returns the value it replaced, if any.
    ///
    /// # Errors
    ///
    /// [`Error::ShardLimit`] when the target shard would exceed `maxSize`
    /// and cannot be split; the batch is then as it was before this call.
    /// Fetch errors also leave the batch's contents unchanged.
    pub async fn put(&mut self, key: &str, value: Cid) -> Result<Option<Cid>, Error> {
        let (_, d, offset) = self.traverse(key).await?;
        let skey = &key[offset..];
        // `traverse` stops at the draft that holds `key` if anything does.
        let old = self.drafts[d]
            .search(skey.as_bytes(), &self.arena)
            .ok()
            .and_then(|i| self.drafts[d].data_cid(i, &self.arena));
        let config = self.drafts[d].config;
        let max_chars = usize::try_from(config.max_key_length)
            .unwrap_or(usize::MAX)
            .max(1);

        let (entry_key, entry_val) = if skey.chars().count() > max_chars {
            self.chain(skey, value, config, max_chars)
        } else {
            let k = self.arena.push_bytes(skey.as_bytes());
            let v = self.arena.push_cid(&value);
            (
                k,
                Val {
                    link: None,
                    data: Some(v),
                },
            )
        };

        // The size rule applies after every put, also one that changed
        // nothing: a split moves only one common-prefix group, so a shard
        // can stay over `maxSize`, and the next put into it splits again
        // (as the spec says and the reference does).
        let undo = self.put_entry(d, entry_key, entry_val);
        if self.drafts[d].size() as u64 > config.max_size
            && let Err(e) = self.split(d, undo.index())
        {
            let draft = &mut self.drafts[d];
            match undo {
                Undo::Replaced(i, old) => {
                    draft.set(i, old, &self.arena);
                }
                Undo::Inserted(i) => {
                    draft.remove(i, &self.arena);
                }
                Undo::Unchanged(_) => {}
            }
            return Err(match e {
                Error::ShardLimit { .. } => Error::ShardLimit {
                    key: key.to_owned(),
                },
                other => other,
            });
        }
        Ok(old)
    }

    /// New drafts for a key longer than `maxKeyLength` characters: each holds
    /// one `max_chars` piece linking to the next; the last holds the value.
    /// Returns the entry for the first piece.
    fn chain(
        &mut self,
        skey: &str,
        value: Cid,
        config: ShardConfig,
        max_chars: usize,
    ) -> (Bytes, Val) {
        let mut pieces = Vec::new();
        let mut rest = skey;
        while !rest.is_empty() {
            let cut = rest
                .char_indices()
                .nth(max_chars)
                .map_or(rest.len(), |(i, _)| i);
            pieces.push(&rest[..cut]);
            rest = &rest[cut..];
        }
        let a = &mut self.arena;
        let mut key = a.push_bytes(pieces[pieces.len() - 1].as_bytes());
        let mut val = Val {
            link: None,
            data: Some(a.push_cid(&value)),
        };
        for piece in pieces[..pieces.len() - 1].iter().rev() {
            let slot = self.arena.push_entry(key, val);
            let c = self.drafts.len();
            self.drafts
                .push(Draft::new(config, vec![slot], &self.arena));
            key = self.arena.push_bytes(piece.as_bytes());
            val = Val {
                link: Some(Child::Draft(c)),
                data: None,
            };
        }
        (key, val)
    }

    /// Puts an entry into draft `d` by the Pail rules.
    fn put_entry(&mut self, d: usize, key: Bytes, new: Val) -> Undo {
        let a = &mut self.arena;
        let draft = &mut self.drafts[d];
        match draft.search(a.get(key), a) {
            Ok(i) => {
                let old = draft.val(i, a);
                // A new link keeps the data stored under its key (the
                // reference drops it when the old value is plain data); new
                // data keeps the link.
                let merged = Val {
                    link: new.link.or(old.link),
                    data: new.data.or(old.data),
                };
                if a.same_val(merged, old) {
                    return Undo::Unchanged(i);
                }
                let slot = a.push_entry(key, merged);
                let old_slot = draft.set(i, slot, a);
                Undo::Replaced(i, old_slot)
            }
            Err(i) => {
                let slot = a.push_entry(key, new);
                draft.insert(i, slot, a);
                Undo::Inserted(i)
            }
        }
    }

    /// Splits draft `d` once by the longest-common-prefix rule, starting
    /// from entry `start`.
    fn split(&mut self, d: usize, start: usize) -> Result<(), Error> {
        let a = &self.arena;
        let draft = &self.drafts[d];
        let n = draft.slots.len();
        let mut i = start;
        let found = loop {
            let mut prefix = drop_last_char(draft.key_str(i, a));
            let mut hit = None;
            while !prefix.is_empty() {
                let (lo, hi) = draft.prefix_range(prefix.as_bytes(), a);
                if hi - lo > 1 {
                    hit = Some((prefix.to_owned(), lo, hi));
                    break;
                }
                prefix = drop_last_char(prefix);
            }
            if hit.is_some() {
                break hit;
            }
            i = (i + 1) % n;
            if i == start {
                break None;
            }
        };
        let Some((prefix, lo, hi)) = found else {
            return Err(Error::ShardLimit {
                key: draft.key_str(start, a).to_owned(),
            });
        };
        // The entry equal to the prefix, if any, sorts first among matches.
        let has_prefix_entry = draft.key(lo, a) == prefix.as_bytes();
        if has_prefix_entry && draft.shape(lo, a).0 {
            return Err(Error::CorruptTree {
                cid: draft.base.as_ref().map(|b| b.cid()).unwrap_or_default(),
                reason: format!("expected {prefix:?} to be a value but found a shard link"),
            });
        }
        let plen = prefix.len();
        // Lengths of the entries leaving the parent, before their keys shrink.
        let removed_len: usize = (lo..hi).map(|j| draft.slot_len(draft.slots[j], a)).sum();
        let a = &mut self.arena;
        let draft = &self.drafts[d];
        let prefix_data = if has_prefix_entry {
            draft.val(lo, a).data
        } else {
            None
        };
        let first = lo + usize::from(has_prefix_entry);
        let mut moved = Vec::with_capacity(hi - first);
        for j in first..hi {
            let slot = match draft.slots[j] {
                Slot::Owned(e) => {
                    // Owned entries move as they are, their keys shortened.
                    let o = &mut a.entries[e as usize];
                    o.key.off += plen;
                    o.key.len -= plen as u32;
                    let key = o.key;
                    o.head = key_head(&a.bytes[key.off..key.off + key.len as usize]);
                    Slot::Owned(e)
                }
                Slot::Base(b) => {
                    let key = a.push_bytes(&draft.base().key_bytes(b as usize)[plen..]);
                    let val = draft.val(j, a);
                    a.push_entry(key, val)
                }
            };
            moved.push(slot);
        }
        let config = draft.config;
        let c = self.drafts.len();
        self.drafts.push(Draft::new(config, moved, &self.arena));
        let a = &mut self.arena;
        let draft = &mut self.drafts[d];
        draft.slots.drain(lo..hi);
        draft.entries_len -= removed_len;
        draft.changed = true;
        let key = a.push_bytes(prefix.as_bytes());
        let slot = a.push_entry(
            key,
            Val {
                link: Some(Child::Draft(c)),
                data: prefix_data,
            },
        );
        draft.insert(lo, slot, a);
        Ok(())
    }

    /// Deletes `key`; returns the value it had, if any. Deleting an absent
    /// key, or a key that only names a link to a shard, changes nothing.
    ///
    /// # Errors
    ///
    /// When a shard on the way cannot be fetched.
    pub async fn del(&mut self, key: &str) -> Result<Option<Cid>, Error> {
        let (mut path, d, offset) = self.traverse(key).await?;
        let skey = &key.as_bytes()[offset..];
        let a = &mut self.arena;
        let Ok(i) = self.drafts[d].search(skey, a) else {
            return Ok(None);
        };
        let old = self.drafts[d].data_cid(i, a);
        match self.drafts[d].shape(i, a) {
            (_, false) => return Ok(None),
            (true, true) => {
                let val = self.drafts[d].val(i, a);
                let k = self.drafts[d].owned_key(i, a);
                let slot = a.push_entry(
                    k,
                    Val {
                        link: val.link,
                        data: None,
                    },
                );
                self.drafts[d].set(i, slot, a);
                return Ok(old);
            }
            (false, true) => {
                self.drafts[d].remove(i, a);
            }
        }
        // An emptied non-root shard leaves its parent: the parent's entry
        // becomes plain data if it has data, else it goes too (and so on up).
        let mut current = d;
        while self.drafts[current].slots.is_empty() {
            let Some((parent, slot)) = path.pop() else {
                break;
            };
            if let Some(base) = &self.drafts[current].base {
                self.dropped.push(base.cid());
            }
            let val = self.drafts[parent].val(slot, a);
            if val.data.is_some() {
                let k = self.drafts[parent].owned_key(slot, a);
                let s = a.push_entry(
                    k,
                    Val {
                        link: None,
                        data: val.data,
                    },
                );
                self.drafts[parent].set(slot, s, a);
                break;
            }
            self.drafts[parent].remove(slot, a);
            current = parent;
        }
        Ok(old)
    }

    /// Encodes and hashes every changed shard, once; returns the new root,
    /// the shards added and the CIDs of the shards they replace.
    #[must_use]
    pub fn commit(self) -> Mutation {
        let mut out = Commit {
            drafts: &self.drafts,
            arena: &self.arena,
            cids: vec![None; self.drafts.len()],
            additions: Vec::new(),
            removals: self.dropped.clone(),
        };
        let root = out.commit(0);
        let Commit {
            mut additions,
            mut removals,
            ..
        } = out;
        additions.sort_by_key(|s| s.cid());
        additions.dedup_by_key(|s| s.cid());
        removals.sort();
        removals.dedup();
        // A shard both added and removed (equal contents) stays.
        removals.retain(|cid| additions.binary_search_by_key(cid, |s| s.cid()).is_err());
        Mutation {
            root,
            additions,
            removals,
        }
    }
}

struct Commit<'a> {
    drafts: &'a [Draft],
    arena: &'a Arena,
    cids: Vec<Option<Cid>>,
    additions: Vec<Arc<Shard>>,
    removals: Vec<Cid>,
}

impl Commit<'_> {
    fn commit(&mut self, d: usize) -> Cid {
        if let Some(cid) = self.cids[d] {
            return cid;
        }
        let drafts = self.drafts;
        let draft = &drafts[d];
        // Children first; a draft that did not change and whose children
        // kept their CIDs keeps its own.
        let mut children_same = true;
        for slot in &draft.slots {
            if let Slot::Owned(e) = slot
                && let Some(Child::Draft(c)) = self.arena.entries[*e as usize].val.link
            {
                let cid = self.commit(c);
                let base = drafts[c].base.as_ref().map(|b| b.cid());
                children_same &= base == Some(cid);
            }
        }
        let cid = match &draft.base {
            Some(base) if !draft.changed && children_same => base.cid(),
            _ => {
                let shard = self.encode(draft);
                let cid = shard.cid();
                if let Some(base) = &draft.base {
                    if base.cid() != cid {
                        self.removals.push(base.cid());
                        self.additions.push(Arc::new(shard));
                    }
                } else {
                    self.additions.push(Arc::new(shard));
                }
                cid
            }
        };
        self.cids[d] = Some(cid);
        cid
    }

    fn write_link(&mut self, out: &mut Vec<u8>, link: Child) {
        match link {
            Child::Clean(b) => out.extend_from_slice(self.arena.get(b)),
            Child::Draft(c) => {
                let cid = self.commit(c);
                cbor::write_cid(out, &cid);
            }
        }
    }

    fn encode(&mut self, draft: &Draft) -> Shard {
        let n = draft.slots.len();
        let mut bytes = Vec::with_capacity(draft.size());
        cbor::write_header(&mut bytes, n);
        let mut spans: Vec<Span> = Vec::with_capacity(n);
        let mut i = 0;
        while i < n {
            match draft.slots[i] {
                Slot::Base(first) => {
                    // A run of consecutive base entries is one copy.
                    let first = first as usize;
                    let mut len = 1;
                    while i + len < n
                        && matches!(draft.slots[i + len], Slot::Base(b) if b as usize == first + len)
                    {
                        len += 1;
                    }
                    let base = draft.base();
                    let run = &base.spans()[first..first + len];
                    let from = run[0].start as usize;
                    let to = run[len - 1].end as usize;
                    let shift = bytes.len() as i64 - from as i64;
                    bytes.extend_from_slice(&base.bytes()[from..to]);
                    let at = |x: u32| (i64::from(x) + shift) as u32;
                    spans.extend(run.iter().map(|s| Span {
                        head: s.head,
                        start: at(s.start),
                        key_start: at(s.key_start),
                        key_end: at(s.key_end),
                        end: at(s.end),
                    }));
                    i += len;
                }
                Slot::Owned(e) => {
                    let o = self.arena.entries[e as usize];
                    let key = self.arena.get(o.key);
                    let start = bytes.len();
                    bytes.push(0x82);
                    cbor::write_head(&mut bytes, cbor::MAJOR_TEXT, key.len() as u64);
                    let key_start = bytes.len();
                    bytes.extend_from_slice(key);
                    match (o.val.link, o.val.data) {
                        (Some(link), Some(data)) => {
                            bytes.push(0x82);
                            self.write_link(&mut bytes, link);
                            bytes.extend_from_slice(self.arena.get(data));
                        }
                        (Some(link), None) => {
                            bytes.push(0x81);
                            self.write_link(&mut bytes, link);
                        }
                        (None, Some(data)) => bytes.extend_from_slice(self.arena.get(data)),
                        // Every entry has a link or data: puts set data, and
                        // deletes remove an entry rather than empty it.
                        (None, None) => debug_assert!(false, "entry with neither link nor data"),
                    }
                    // Offsets fit in u32: shards are far below 4 GiB.
                    if let Ok(s) = span(key, start, key_start, bytes.len()) {
                        spans.push(s);
                    }
                    i += 1;
                }
            }
        }
        cbor::write_trailer(
            &mut bytes,
            draft.config.max_size,
            draft.config.max_key_length,
        );
        Shard::from_parts(bytes, draft.config, spans, draft.base.as_deref())
    }
}
