//! [`Batch`]: puts and deletes applied to an in-memory draft of the tree,
//! each changed shard encoded and hashed once, at [`Batch::commit`].
//!
//! Every operation follows the Pail rules exactly as a single put or delete
//! would (the single-operation functions are batches of one), so a batch
//! gives the root that the same operations applied one by one give: a shard
//! is split when its exact encoded length exceeds `maxSize` after the put
//! that made it so, whether or not it is hashed then.
//!
//! A draft shard is a list of slots: an unchanged entry of the shard it
//! started from (by index, its bytes reused verbatim) or an entry owned by
//! the draft. Only entries that change are ever re-encoded.

use std::sync::Arc;

use cid::Cid;

use crate::{
    Error, Mutation, Shard, ShardConfig, ShardFetcher, ShardValue, cbor,
    shard::{Span, key_head, span},
};

/// Encoded length of a link to a shard (CIDv1, dag-cbor, sha2-256: 36
/// bytes), which a draft's link will have once it is hashed.
const SHARD_LINK_LEN: usize = 2 + 2 + 37;

/// A child shard: committed (by CID) or a draft (by arena index).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Child {
    Clean(Cid),
    Draft(usize),
}

impl Child {
    fn encoded_len(self) -> usize {
        match self {
            Self::Clean(cid) => cbor::cid_len(&cid),
            Self::Draft(_) => SHARD_LINK_LEN,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DraftValue {
    Data(Cid),
    Link(Child),
    LinkData(Child, Cid),
}

impl DraftValue {
    fn from_value(v: ShardValue) -> Self {
        match v {
            ShardValue::Data(d) => Self::Data(d),
            ShardValue::Link(l) => Self::Link(Child::Clean(l)),
            ShardValue::LinkData { link, data } => Self::LinkData(Child::Clean(link), data),
        }
    }

    fn child(self) -> Option<Child> {
        match self {
            Self::Link(c) | Self::LinkData(c, _) => Some(c),
            Self::Data(_) => None,
        }
    }

    fn encoded_len(self) -> usize {
        match self {
            Self::Data(d) => cbor::cid_len(&d),
            Self::Link(c) => 1 + c.encoded_len(),
            Self::LinkData(c, d) => 1 + c.encoded_len() + cbor::cid_len(&d),
        }
    }
}

/// 16 bytes, so that a draft of a large shard is cheap to build.
#[derive(Debug, Clone)]
enum Slot {
    /// Entry `i` of the draft's base shard, unchanged.
    Base(u32),
    /// An entry owned by the draft.
    Owned(Box<Owned>),
}

#[derive(Debug, Clone)]
struct Owned {
    /// `key_head(key)`, for fast comparisons.
    head: u64,
    key: String,
    value: DraftValue,
}

fn owned(key: String, value: DraftValue) -> Slot {
    Slot::Owned(Box::new(Owned {
        head: key_head(key.as_bytes()),
        key,
        value,
    }))
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

    fn new(config: ShardConfig, entries: Vec<(String, DraftValue)>) -> Self {
        let mut d = Self {
            config,
            base: None,
            slots: Vec::with_capacity(entries.len()),
            entries_len: 0,
            changed: true,
        };
        for (key, value) in entries {
            d.entries_len += cbor::entry_len(&key, value.encoded_len());
            d.slots.push(owned(key, value));
        }
        d
    }

    fn base(&self) -> &Shard {
        // Base slots only exist in drafts made from a base shard.
        self.base.as_deref().unwrap_or_else(|| unreachable_base())
    }

    fn key(&self, i: usize) -> &[u8] {
        match &self.slots[i] {
            Slot::Base(b) => self.base().key_bytes(*b as usize),
            Slot::Owned(o) => o.key.as_bytes(),
        }
    }

    fn key_str(&self, i: usize) -> &str {
        std::str::from_utf8(self.key(i)).unwrap_or_default()
    }

    fn value(&self, i: usize) -> DraftValue {
        match &self.slots[i] {
            Slot::Base(b) => DraftValue::from_value(self.base().value(*b as usize)),
            Slot::Owned(o) => o.value,
        }
    }

    fn slot_len(&self, slot: &Slot) -> usize {
        match slot {
            Slot::Base(b) => {
                let s = self.base().spans()[*b as usize];
                (s.end - s.start) as usize
            }
            Slot::Owned(o) => cbor::entry_len(&o.key, o.value.encoded_len()),
        }
    }

    /// Exact encoded length of the shard this draft would become.
    fn size(&self) -> usize {
        cbor::header_len(self.slots.len())
            + self.entries_len
            + cbor::trailer_len(self.config.max_size, self.config.max_key_length)
    }

    fn search(&self, key: &[u8]) -> Result<usize, usize> {
        let head = key_head(key);
        let mut lo = 0;
        let mut hi = self.slots.len();
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let order = match &self.slots[mid] {
                Slot::Base(b) => {
                    let base = self.base();
                    base.cmp_span(&base.spans()[*b as usize], head, key)
                }
                Slot::Owned(o) => o.head.cmp(&head).then_with(|| o.key.as_bytes().cmp(key)),
            };
            match order {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    fn set(&mut self, i: usize, slot: Slot) -> Slot {
        self.entries_len = self.entries_len - self.slot_len(&self.slots[i]) + self.slot_len(&slot);
        self.changed = true;
        std::mem::replace(&mut self.slots[i], slot)
    }

    fn insert(&mut self, i: usize, slot: Slot) {
        self.entries_len += self.slot_len(&slot);
        self.changed = true;
        self.slots.insert(i, slot);
    }

    fn remove(&mut self, i: usize) -> Slot {
        let slot = self.slots.remove(i);
        self.entries_len -= self.slot_len(&slot);
        self.changed = true;
        slot
    }

    /// Index range of the entries whose keys start with `prefix`.
    fn prefix_range(&self, prefix: &[u8]) -> (usize, usize) {
        let lo = match self.search(prefix) {
            Ok(i) | Err(i) => i,
        };
        let mut hi = lo;
        // Entries with the prefix are contiguous from `lo`; gallop, then bisect.
        let mut step = 1;
        while hi < self.slots.len() && self.key(hi).starts_with(prefix) {
            hi = (hi + step).min(self.slots.len());
            step *= 2;
        }
        let (mut a, mut b) = (lo, hi);
        while a < b {
            let mid = a + (b - a) / 2;
            if self.key(mid).starts_with(prefix) {
                a = mid + 1;
            } else {
                b = mid;
            }
        }
        (lo, a)
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

/// What `put_entry` changed, so a failed put can be undone.
enum Undo {
    Replaced(usize, Slot),
    Inserted(usize),
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
    /// The arena; `drafts[0]` is the root.
    drafts: Vec<Draft>,
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
            dropped: Vec::new(),
        })
    }

    /// Makes the child behind slot `i` of draft `d` a draft; returns its index.
    async fn open_child(&mut self, d: usize, i: usize) -> Result<Option<usize>, Error> {
        let value = self.drafts[d].value(i);
        let child = match value.child() {
            None => return Ok(None),
            Some(Child::Draft(c)) => return Ok(Some(c)),
            Some(Child::Clean(cid)) => cid,
        };
        let shard = self.fetcher.get_shard(&child).await?;
        let c = self.drafts.len();
        self.drafts.push(Draft::from_base(shard));
        let key = self.drafts[d].key_str(i).to_owned();
        let value = match value {
            DraftValue::LinkData(_, data) => DraftValue::LinkData(Child::Draft(c), data),
            _ => DraftValue::Link(Child::Draft(c)),
        };
        // Same encoded length; not a change unless the child changes.
        let draft = &mut self.drafts[d];
        let changed = draft.changed;
        draft.set(i, owned(key, value));
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
            let pos = match self.drafts[d].search(rel) {
                Ok(_) => break,
                Err(pos) => pos,
            };
            if pos == 0 || !rel.starts_with(self.drafts[d].key(pos - 1)) {
                break;
            }
            let prefix_len = self.drafts[d].key(pos - 1).len();
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

    /// Puts `value` under `key`.
    ///
    /// # Errors
    ///
    /// [`Error::ShardLimit`] when the target shard would exceed `maxSize`
    /// and cannot be split; the batch is then as it was before this call.
    /// Fetch errors also leave the batch's contents unchanged.
    pub async fn put(&mut self, key: &str, value: Cid) -> Result<(), Error> {
        let (_, d, offset) = self.traverse(key).await?;
        let skey = &key[offset..];
        let config = self.drafts[d].config;
        let max_chars = usize::try_from(config.max_key_length)
            .unwrap_or(usize::MAX)
            .max(1);

        let (entry_key, entry_value) = if skey.chars().count() > max_chars {
            self.chain(skey, value, config, max_chars)
        } else {
            (skey.to_owned(), DraftValue::Data(value))
        };

        let Some(undo) = self.put_entry(d, entry_key.clone(), entry_value) else {
            return Ok(());
        };
        if self.drafts[d].size() as u64 > config.max_size
            && let Err(e) = self.split(d, &entry_key)
        {
            {
                let draft = &mut self.drafts[d];
                match undo {
                    Undo::Replaced(i, old) => {
                        draft.set(i, old);
                    }
                    Undo::Inserted(i) => {
                        draft.remove(i);
                    }
                }
                return Err(match e {
                    Error::ShardLimit { .. } => Error::ShardLimit {
                        key: key.to_owned(),
                    },
                    other => other,
                });
            }
        }
        Ok(())
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
    ) -> (String, DraftValue) {
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
        let mut entry = (pieces[pieces.len() - 1].to_owned(), DraftValue::Data(value));
        for piece in pieces[..pieces.len() - 1].iter().rev() {
            let c = self.drafts.len();
            self.drafts.push(Draft::new(config, vec![entry]));
            entry = ((*piece).to_owned(), DraftValue::Link(Child::Draft(c)));
        }
        entry
    }

    /// Puts an entry into draft `d` by the Pail rules. `None` when nothing changed.
    fn put_entry(&mut self, d: usize, key: String, new: DraftValue) -> Option<Undo> {
        let draft = &mut self.drafts[d];
        match draft.search(key.as_bytes()) {
            Ok(i) => {
                let old = draft.value(i);
                let merged = match (new, old) {
                    // A new link keeps the data already stored under its key
                    // (the reference drops it when the old value is plain data).
                    (
                        DraftValue::Link(c),
                        DraftValue::Data(data) | DraftValue::LinkData(_, data),
                    ) => DraftValue::LinkData(c, data),
                    (DraftValue::Data(data), DraftValue::Link(c) | DraftValue::LinkData(c, _)) => {
                        DraftValue::LinkData(c, data)
                    }
                    (new, _) => new,
                };
                if merged == old {
                    return None;
                }
                let old_slot = draft.set(i, owned(key, merged));
                Some(Undo::Replaced(i, old_slot))
            }
            Err(i) => {
                draft.insert(i, owned(key, new));
                Some(Undo::Inserted(i))
            }
        }
    }

    /// Splits draft `d` once by the longest-common-prefix rule, starting
    /// from the entry `base_key`.
    fn split(&mut self, d: usize, base_key: &str) -> Result<(), Error> {
        let draft = &self.drafts[d];
        let n = draft.slots.len();
        let start = draft.search(base_key.as_bytes()).unwrap_or(0);
        let mut i = start;
        let found = loop {
            let mut prefix = drop_last_char(draft.key_str(i));
            let mut hit = None;
            while !prefix.is_empty() {
                let (lo, hi) = draft.prefix_range(prefix.as_bytes());
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
                key: base_key.to_owned(),
            });
        };
        // The entry equal to the prefix, if any, sorts first among matches.
        let prefix_data = if draft.key(lo) == prefix.as_bytes() {
            match draft.value(lo) {
                DraftValue::Data(data) => Some(data),
                _ => {
                    return Err(Error::CorruptTree {
                        cid: draft.base.as_ref().map(|b| b.cid()).unwrap_or_default(),
                        reason: format!("expected {prefix:?} to be a value but found a shard link"),
                    });
                }
            }
        } else {
            None
        };
        let first = lo + usize::from(prefix_data.is_some());
        let moved: Vec<(String, DraftValue)> = (first..hi)
            .map(|j| (draft.key_str(j)[prefix.len()..].to_owned(), draft.value(j)))
            .collect();
        let config = draft.config;
        let c = self.drafts.len();
        self.drafts.push(Draft::new(config, moved));
        let draft = &mut self.drafts[d];
        for j in (lo..hi).rev() {
            draft.remove(j);
        }
        let value = match prefix_data {
            Some(data) => DraftValue::LinkData(Child::Draft(c), data),
            None => DraftValue::Link(Child::Draft(c)),
        };
        draft.insert(lo, owned(prefix, value));
        Ok(())
    }

    /// Deletes `key`. Deleting an absent key, or a key that only names a
    /// link to a shard, changes nothing.
    ///
    /// # Errors
    ///
    /// When a shard on the way cannot be fetched.
    pub async fn del(&mut self, key: &str) -> Result<(), Error> {
        let (mut path, d, offset) = self.traverse(key).await?;
        let skey = &key.as_bytes()[offset..];
        let Ok(i) = self.drafts[d].search(skey) else {
            return Ok(());
        };
        match self.drafts[d].value(i) {
            DraftValue::Link(_) => return Ok(()),
            DraftValue::LinkData(c, _) => {
                let key = self.drafts[d].key_str(i).to_owned();
                self.drafts[d].set(i, owned(key, DraftValue::Link(c)));
                return Ok(());
            }
            DraftValue::Data(_) => {
                self.drafts[d].remove(i);
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
            match self.drafts[parent].value(slot) {
                DraftValue::LinkData(_, data) => {
                    let key = self.drafts[parent].key_str(slot).to_owned();
                    self.drafts[parent].set(slot, owned(key, DraftValue::Data(data)));
                    break;
                }
                _ => {
                    self.drafts[parent].remove(slot);
                    current = parent;
                }
            }
        }
        Ok(())
    }

    /// Encodes and hashes every changed shard, once; returns the new root,
    /// the shards added and the CIDs of the shards they replace.
    #[must_use]
    pub fn commit(self) -> Mutation {
        let mut out = Commit {
            drafts: &self.drafts,
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
    cids: Vec<Option<Cid>>,
    additions: Vec<Arc<Shard>>,
    removals: Vec<Cid>,
}

impl Commit<'_> {
    fn child_cid(&mut self, child: Child) -> Cid {
        match child {
            Child::Clean(cid) => cid,
            Child::Draft(c) => self.commit(c),
        }
    }

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
            if let Slot::Owned(o) = slot
                && let Some(Child::Draft(c)) = o.value.child()
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

    fn encode(&mut self, draft: &Draft) -> Shard {
        let n = draft.slots.len();
        let mut bytes = Vec::with_capacity(draft.size());
        cbor::write_header(&mut bytes, n);
        let mut spans: Vec<Span> = Vec::with_capacity(n);
        let mut i = 0;
        while i < n {
            match &draft.slots[i] {
                Slot::Base(first) => {
                    // A run of consecutive base entries is one copy.
                    let first = *first as usize;
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
                Slot::Owned(o) => {
                    let key = &o.key;
                    let value = match o.value {
                        DraftValue::Data(data) => ShardValue::Data(data),
                        DraftValue::Link(c) => ShardValue::Link(self.child_cid(c)),
                        DraftValue::LinkData(c, data) => ShardValue::LinkData {
                            link: self.child_cid(c),
                            data,
                        },
                    };
                    let start = bytes.len();
                    let key_start = cbor::write_entry(&mut bytes, key, &value);
                    // Offsets fit in u32: shards are far below 4 GiB.
                    if let Ok(s) = span(key.as_bytes(), start, key_start, bytes.len()) {
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
        Shard::from_parts(bytes, draft.config, spans)
    }
}
