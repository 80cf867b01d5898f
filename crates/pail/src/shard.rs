//! [`Shard`]: one block of the tree, kept as its encoded bytes plus an
//! index of where each entry lies in them.

use std::{collections::BTreeMap, fmt, sync::OnceLock};

use bytes::Bytes;
use cid::{Cid, multihash::Multihash};
use ipld_core::ipld::Ipld;
use multihash_codetable::{Code, MultihashDigest};

use crate::{
    cbor,
    error::Error,
    hash::{self, Marks},
    value::ShardValue,
};

/// Multicodec of dag-cbor, the codec of every shard.
pub const DAG_CBOR: u64 = 0x71;
/// Multicodec of SHA-256, the hash of every shard.
const SHA2_256: u64 = 0x12;
/// Default largest encoded shard, in bytes (512 KiB).
pub const DEFAULT_MAX_SIZE: u64 = 512 * 1024;
/// Default longest key piece stored in one shard, in characters.
pub const DEFAULT_MAX_KEY_LENGTH: u64 = 64;

/// A tree's limits, stored in (and copied into) every shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ShardConfig {
    /// Largest encoded shard in bytes before a put splits it.
    pub max_size: u64,
    /// Longest key piece, in characters, before a put chains shards.
    pub max_key_length: u64,
}

impl Default for ShardConfig {
    fn default() -> Self {
        Self {
            max_size: DEFAULT_MAX_SIZE,
            max_key_length: DEFAULT_MAX_KEY_LENGTH,
        }
    }
}

/// Where entry `i` lies in the shard bytes, and the first 8 bytes of its
/// key (big-endian, zero-padded) so that most comparisons in a search
/// never touch the key bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) head: u64,
    pub(crate) start: u32,
    pub(crate) key_start: u32,
    pub(crate) key_end: u32,
    pub(crate) end: u32,
}

/// The first 8 bytes of `key`, big-endian, zero-padded. When two heads
/// differ they order the keys as the keys themselves do; when equal, the
/// keys must be compared in full.
#[inline]
pub(crate) fn key_head(key: &[u8]) -> u64 {
    let mut buf = [0u8; 8];
    let n = key.len().min(8);
    buf[..n].copy_from_slice(&key[..n]);
    u64::from_be_bytes(buf)
}

/// One shard block: its CID, its canonical dag-cbor bytes, and an index of
/// its entries (sorted by key in UTF-8 byte order).
///
/// Reading a key or value reads the bytes in place; building a changed
/// shard copies runs of unchanged entries' bytes without re-encoding them.
#[derive(Clone)]
pub struct Shard {
    cid: Cid,
    /// The encoded block; `cid` is always the hash of exactly these bytes.
    bytes: Bytes,
    config: ShardConfig,
    spans: Vec<Span>,
    /// SHA-256 states part-way through `bytes`, to hash this shard's next
    /// version from where the two first differ.
    marks: Marks,
    /// The keys as one string, made on first use by [`Shard::key`], so that
    /// reading keys as `&str` validates UTF-8 once per shard, not per read.
    key_text: OnceLock<KeyText>,
    /// The shard this one is a new version of, when a batch made it from
    /// one (see [`Shard::previous`]).
    previous: Option<Cid>,
}

/// A shard's keys as `&str`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Keys<'a> {
    text: &'a str,
    ends: &'a [u32],
}

impl<'a> Keys<'a> {
    /// Key `i`.
    pub(crate) fn get(self, i: usize) -> &'a str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        self.text
            .get(start..self.ends[i] as usize)
            .unwrap_or_default()
    }
}

#[derive(Debug, Clone, Default)]
struct KeyText {
    text: String,
    /// End of key `i` in `text`.
    ends: Vec<u32>,
}

impl fmt::Debug for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shard")
            .field("cid", &self.cid)
            .field("entries", &self.spans.len())
            .field("bytes", &self.bytes.len())
            .finish_non_exhaustive()
    }
}

/// The CID of dag-cbor `bytes` hashed with SHA-256.
#[must_use]
pub fn shard_cid(bytes: &[u8]) -> Cid {
    Cid::new_v1(DAG_CBOR, Code::Sha2_256.digest(bytes))
}

impl Shard {
    /// An empty shard with `config`.
    #[must_use]
    pub fn empty(config: ShardConfig) -> Self {
        let mut bytes = Vec::new();
        cbor::write_header(&mut bytes, 0);
        cbor::write_trailer(&mut bytes, config.max_size, config.max_key_length);
        Self::from_parts(bytes, config, Vec::new(), None)
    }

    /// Builds a shard from bytes this crate encoded and their index. With
    /// `replaces`, the shard this one is a new version of, hashing resumes
    /// where the two versions' bytes first differ.
    pub(crate) fn from_parts(
        bytes: Vec<u8>,
        config: ShardConfig,
        spans: Vec<Span>,
        replaces: Option<&Shard>,
    ) -> Self {
        let hashed = hash::sha256(&bytes, replaces.map(|old| (&old.bytes[..], &old.marks)));
        let digest =
            Multihash::wrap(SHA2_256, &hashed.digest).expect("a 32-byte digest fits a multihash");
        Self {
            cid: Cid::new_v1(DAG_CBOR, digest),
            bytes: Bytes::from(bytes),
            config,
            spans,
            marks: hashed.marks,
            key_text: OnceLock::new(),
            previous: replaces.map(|old| old.cid),
        }
    }

    /// Builds a shard from entries given in key order.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidShard`] if keys are not strictly increasing.
    pub fn from_entries<'a>(
        config: ShardConfig,
        entries: impl IntoIterator<Item = (&'a str, ShardValue)>,
    ) -> Result<Self, Error> {
        let entries: Vec<_> = entries.into_iter().collect();
        if entries
            .windows(2)
            .any(|w| w[0].0.as_bytes() >= w[1].0.as_bytes())
        {
            return Err(Error::InvalidShard {
                reason: "entries are not in strictly increasing key order".into(),
            });
        }
        let mut bytes = Vec::new();
        cbor::write_header(&mut bytes, entries.len());
        let mut spans = Vec::with_capacity(entries.len());
        for (key, value) in &entries {
            let start = bytes.len();
            let key_start = cbor::write_entry(&mut bytes, key, value);
            spans.push(span(key.as_bytes(), start, key_start, bytes.len())?);
        }
        cbor::write_trailer(&mut bytes, config.max_size, config.max_key_length);
        Ok(Self::from_parts(bytes, config, spans, None))
    }

    /// Decodes shard bytes received from anywhere (a store, a CAR file).
    ///
    /// The bytes must be canonical dag-cbor of a Pail 0.5 shard: a map of
    /// exactly `entries`, `maxSize` and `maxKeyLength`, entries `[key,
    /// value]` strictly increasing by key, values a CID, `[link]` or
    /// `[link, data]`. Never panics.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidShard`] saying what is wrong.
    pub fn decode(bytes: &[u8]) -> Result<Self, Error> {
        // Canonical shards (all that this crate and the reference write)
        // are read in place; anything else takes the general path, which
        // says what is wrong.
        match Self::read_canonical(bytes) {
            Some(shard) => Ok(shard),
            None => Self::decode_general(bytes),
        }
    }

    /// The shard `bytes` encode if they are canonical: the entries are read
    /// where they lie, then re-encoded, and the result must be `bytes`.
    fn read_canonical(bytes: &[u8]) -> Option<Self> {
        let mut pos = 0;
        let n = cbor::read_header(bytes, &mut pos)?;
        // Each entry takes at least 4 bytes: never reserve more than the
        // input could hold.
        let mut entries = Vec::with_capacity(usize::try_from(n).ok()?.min(bytes.len() / 4));
        for _ in 0..n {
            entries.push(cbor::read_entry(bytes, &mut pos)?);
        }
        let (max_size, max_key_length) = cbor::read_trailer(bytes, pos)?;
        let config = ShardConfig {
            max_size,
            max_key_length,
        };
        let shard = Self::from_entries(config, entries).ok()?;
        (shard.bytes[..] == *bytes).then_some(shard)
    }

    /// [`Shard::decode`] through a generic dag-cbor decoder.
    fn decode_general(bytes: &[u8]) -> Result<Self, Error> {
        let invalid = |reason: &str| Error::InvalidShard {
            reason: reason.to_owned(),
        };
        let ipld: Ipld = serde_ipld_dagcbor::from_slice(bytes)
            .map_err(|e| invalid(&format!("not dag-cbor: {e}")))?;
        let Ipld::Map(map) = ipld else {
            return Err(invalid("not a map"));
        };
        if map.len() != 3 {
            return Err(invalid(
                "expected exactly the fields entries, maxKeyLength, maxSize",
            ));
        }
        let uint = |map: &BTreeMap<String, Ipld>, name: &str| match map.get(name) {
            Some(Ipld::Integer(n)) => {
                u64::try_from(*n).map_err(|_| invalid(&format!("{name} out of range")))
            }
            _ => Err(invalid(&format!("{name} missing or not an integer"))),
        };
        let config = ShardConfig {
            max_size: uint(&map, "maxSize")?,
            max_key_length: uint(&map, "maxKeyLength")?,
        };
        let Some(Ipld::List(list)) = map.get("entries") else {
            return Err(invalid("entries missing or not a list"));
        };
        let mut entries = Vec::with_capacity(list.len());
        for item in list {
            let Ipld::List(pair) = item else {
                return Err(invalid("an entry is not a list"));
            };
            let [Ipld::String(key), value] = pair.as_slice() else {
                return Err(invalid("an entry is not [string key, value]"));
            };
            let value = match value {
                Ipld::Link(cid) => ShardValue::Data(*cid),
                Ipld::List(links) => match links.as_slice() {
                    [Ipld::Link(link)] => ShardValue::Link(*link),
                    [Ipld::Link(link), Ipld::Link(data)] => ShardValue::LinkData {
                        link: *link,
                        data: *data,
                    },
                    _ => return Err(invalid("a link value is not [link] or [link, data]")),
                },
                _ => return Err(invalid("an entry value is not a CID or a list of CIDs")),
            };
            entries.push((key.as_str(), value));
        }
        let shard = Self::from_entries(config, entries)?;
        if shard.bytes[..] != *bytes {
            return Err(invalid("not in canonical dag-cbor form"));
        }
        Ok(shard)
    }

    /// The shard's CID.
    #[must_use]
    pub fn cid(&self) -> Cid {
        self.cid
    }

    /// The shard this one is a new version of, if a [`crate::batch::Batch`] made
    /// it by changing that one; `None` for a shard decoded or built from
    /// entries. The two usually share most of their bytes, which a store may
    /// use to keep this one as a change to that one.
    #[must_use]
    pub fn previous(&self) -> Option<Cid> {
        self.previous
    }

    /// The shard's encoded bytes, shared (no copy): the block to store
    /// under [`Shard::cid`].
    #[must_use]
    pub fn encoded(&self) -> Bytes {
        self.bytes.clone()
    }

    /// The shard's encoded bytes.
    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The tree limits stored in this shard.
    #[must_use]
    pub fn config(&self) -> ShardConfig {
        self.config
    }

    /// Number of entries.
    #[must_use]
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether the shard has no entries.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    pub(crate) fn spans(&self) -> &[Span] {
        &self.spans
    }

    /// The key of entry `i` as bytes.
    pub(crate) fn key_bytes(&self, i: usize) -> &[u8] {
        let s = self.spans[i];
        &self.bytes[s.key_start as usize..s.key_end as usize]
    }

    /// The key of entry `i` (relative to the shard's position in the tree).
    ///
    /// # Panics
    ///
    /// If `i >= self.len()`.
    #[must_use]
    pub fn key(&self, i: usize) -> &str {
        self.keys().get(i)
    }

    /// Every key as `&str`, validated once per shard (see [`Shard::key`]).
    pub(crate) fn keys(&self) -> Keys<'_> {
        let kt = self.key_text.get_or_init(|| {
            // Copy the keys together and validate UTF-8 once, over contiguous
            // bytes: each key is valid UTF-8, so each key boundary is a
            // character boundary of the whole.
            let mut text = Vec::with_capacity(
                self.spans
                    .iter()
                    .map(|s| (s.key_end - s.key_start) as usize)
                    .sum(),
            );
            let mut ends = Vec::with_capacity(self.spans.len());
            for i in 0..self.spans.len() {
                text.extend_from_slice(self.key_bytes(i));
                ends.push(text.len() as u32);
            }
            KeyText {
                // Keys were validated as UTF-8 when the shard was built or decoded.
                text: String::from_utf8(text).unwrap_or_default(),
                ends,
            }
        });
        Keys {
            text: &kt.text,
            ends: &kt.ends,
        }
    }

    /// The value of entry `i`.
    ///
    /// # Panics
    ///
    /// If `i >= self.len()`.
    #[must_use]
    pub fn value(&self, i: usize) -> ShardValue {
        let s = self.spans[i];
        let mut pos = s.key_end as usize;
        // Values were validated when the shard was built or decoded.
        cbor::read_value(&self.bytes, &mut pos).unwrap_or(ShardValue::Data(Cid::default()))
    }

    /// The encoded value of entry `i`.
    pub(crate) fn value_bytes(&self, i: usize) -> &[u8] {
        let s = self.spans[i];
        &self.bytes[s.key_end as usize..s.end as usize]
    }

    /// The user data of entry `i`, if any (parses only that CID).
    #[must_use]
    pub fn data(&self, i: usize) -> Option<Cid> {
        cbor::read_data(&self.bytes, self.spans[i].key_end as usize)
    }

    /// The child shard link of entry `i`, if any (parses only that CID).
    #[must_use]
    pub fn link(&self, i: usize) -> Option<Cid> {
        cbor::read_link(&self.bytes, self.spans[i].key_end as usize)
    }

    /// Binary search for `key`: `Ok(index)` when present, else `Err(insertion index)`.
    pub(crate) fn search(&self, key: &[u8]) -> Result<usize, usize> {
        let head = key_head(key);
        self.spans.binary_search_by(|s| self.cmp_span(s, head, key))
    }

    /// Orders entry `s` against a key with head `head`.
    #[inline]
    pub(crate) fn cmp_span(&self, s: &Span, head: u64, key: &[u8]) -> std::cmp::Ordering {
        s.head
            .cmp(&head)
            .then_with(|| self.bytes[s.key_start as usize..s.key_end as usize].cmp(key))
    }

    /// Index of the first entry whose key fails `pred` (keys in order).
    pub(crate) fn partition_point(&self, mut pred: impl FnMut(&[u8]) -> bool) -> usize {
        self.spans
            .partition_point(|s| pred(&self.bytes[s.key_start as usize..s.key_end as usize]))
    }

    /// The entries in key order.
    pub fn entries(
        &self,
    ) -> impl DoubleEndedIterator<Item = (&str, ShardValue)> + ExactSizeIterator + '_ {
        (0..self.len()).map(|i| (self.key(i), self.value(i)))
    }
}

pub(crate) fn span(key: &[u8], start: usize, key_start: usize, end: usize) -> Result<Span, Error> {
    let key_end = key_start + key.len();
    let to_u32 = |n: usize| {
        u32::try_from(n).map_err(|_| Error::InvalidShard {
            reason: "shard larger than 4 GiB".into(),
        })
    };
    Ok(Span {
        head: key_head(key),
        start: to_u32(start)?,
        key_start: to_u32(key_start)?,
        key_end: to_u32(key_end)?,
        end: to_u32(end)?,
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn cid(n: u8, codec: u64) -> Cid {
        Cid::new_v1(codec, Code::Sha2_256.digest(&[n]))
    }

    /// A valid shard from generated parts: keys made unique and sorted.
    fn shard(keys: Vec<(String, u8)>, max_size: u64, max_key_length: u64) -> Shard {
        let keys: BTreeMap<String, u8> = keys.into_iter().collect();
        let entries = keys.iter().map(|(k, &n)| {
            let value = match n % 3 {
                0 => ShardValue::Data(cid(n, 0x55)),
                1 => ShardValue::Link(cid(n, DAG_CBOR)),
                _ => ShardValue::LinkData {
                    link: cid(n, DAG_CBOR),
                    data: cid(n.wrapping_add(1), 0x71),
                },
            };
            (k.as_str(), value)
        });
        let config = ShardConfig {
            max_size,
            max_key_length,
        };
        Shard::from_entries(config, entries).unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        /// Reading in place accepts exactly what the general decoder
        /// accepts, with the same result: valid shards and shards with a
        /// few bytes changed, cut off or inserted.
        #[test]
        fn reading_in_place_agrees_with_the_general_decoder(
            keys in prop::collection::vec(("[a-c\u{e9}0-9]{0,5}", any::<u8>()), 0..12),
            max_size in prop_oneof![Just(0u64), Just(24), Just(4096), any::<u64>()],
            max_key_length in 0u64..300,
            edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 0..3),
        ) {
            let mut bytes = shard(keys, max_size, max_key_length).bytes().to_vec();
            for (at, byte, kind) in edits {
                if bytes.is_empty() {
                    break;
                }
                let i = at.index(bytes.len());
                match kind {
                    0 => bytes[i] = byte,
                    1 => bytes.truncate(i),
                    _ => bytes.insert(i, byte),
                }
            }
            let general = Shard::decode_general(&bytes).ok();
            let in_place = Shard::read_canonical(&bytes);
            prop_assert_eq!(
                in_place.as_ref().map(|s| (s.cid(), s.bytes().to_vec())),
                general.as_ref().map(|s| (s.cid(), s.bytes().to_vec()))
            );
        }
    }
}
