//! What a collection knows of the blocks it meets, in little memory.
//!
//! Every CID a collection meets (listed, linked, read) gets a dense id, the
//! order it was first met; what is known of a block is kept in vectors
//! indexed by id, its links as ids, the marks as bitmaps of ids. A CID's
//! bytes are kept once, in one buffer. About 80 bytes a block on a
//! million-record store, where maps keyed by `Cid` (96 bytes a key) and
//! lists of `Cid` links took ~650.

use std::hash::BuildHasher;

use cid::Cid;
use hashbrown::HashTable;

use crate::{error::Error, store::keys::BlockKey};

/// A CID's bytes: a block key past its 2-byte prefix.
pub(super) fn cid_bytes(key: &[u8]) -> &[u8] {
    key.get(2..).unwrap_or_default()
}

/// The table's hash of an entry from its 32 hash bits: spread over the
/// high bits, which pick a slot's tag, and the low bits, which pick the
/// slot.
fn placed(short: u32) -> u64 {
    u64::from(short).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// Ids of the CIDs met so far, from their bytes.
#[derive(Default)]
pub(super) struct CidIds {
    /// (id, 32 bits of the hash of its CID's bytes): a lookup compares
    /// the bytes only when those bits match, and the table grows without
    /// reading any CID again.
    table: HashTable<(u32, u32)>,
    /// Every CID's bytes, one after another, in id order.
    bytes: Vec<u8>,
    /// Where each id's bytes start in `bytes` (they end where the next
    /// id's start).
    starts: Vec<u64>,
    hasher: foldhash::fast::FixedState,
}

impl CidIds {
    /// How many ids there are.
    pub(super) fn len(&self) -> usize {
        self.starts.len()
    }

    fn bytes_of<'a>(bytes: &'a [u8], starts: &[u64], id: u32) -> &'a [u8] {
        let i = id as usize;
        let start = usize::try_from(starts[i]).unwrap_or(usize::MAX);
        let end = starts
            .get(i + 1)
            .map_or(bytes.len(), |e| usize::try_from(*e).unwrap_or(usize::MAX));
        &bytes[start..end]
    }

    /// The id of the CID whose bytes are `cid`, given now if it has none.
    pub(super) fn id_of_bytes(&mut self, cid: &[u8]) -> Result<u32, Error> {
        let Self {
            table,
            bytes,
            starts,
            hasher,
        } = self;
        let short = (hasher.hash_one(cid) >> 32) as u32;
        let entry = table.entry(
            placed(short),
            |&(id, s)| s == short && Self::bytes_of(bytes, starts, id) == cid,
            |&(_, s)| placed(s),
        );
        match entry {
            hashbrown::hash_table::Entry::Occupied(found) => Ok(found.get().0),
            hashbrown::hash_table::Entry::Vacant(slot) => {
                let id = u32::try_from(starts.len()).map_err(|_| Error::Malformed {
                    what: "store",
                    reason: "a collection met more than 4,294,967,295 blocks".into(),
                })?;
                starts.push(bytes.len() as u64);
                bytes.extend_from_slice(cid);
                slot.insert((id, short));
                Ok(id)
            }
        }
    }

    /// The id of `cid`, given now if it has none.
    pub(super) fn id(&mut self, cid: &Cid) -> Result<u32, Error> {
        self.id_of_bytes(cid_bytes(&BlockKey::new(cid)))
    }

    /// The CID of `id`.
    pub(super) fn cid(&self, id: u32) -> Result<Cid, Error> {
        Cid::read_bytes(Self::bytes_of(&self.bytes, &self.starts, id)).map_err(|e| {
            Error::Malformed {
                what: "CID",
                reason: e.to_string(),
            }
        })
    }
}

/// What reading a listed block found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Content {
    /// Not listed as a whole block: linked to, stored as a delta, or
    /// written since the listing.
    Unlisted,
    /// No links: not dag-cbor, not decodable, or a block that links nothing.
    Leaf,
    /// A dag-cbor block with links ([`Known::links`]).
    Links,
    /// Bytes that do not hash to the CID: an error only if reachable.
    Corrupt,
    /// A dag-cbor block listed past the links budget, not read yet.
    Unread,
}

/// The blocks a collection has met: each id's listed length, content and
/// links.
#[derive(Default)]
pub(super) struct Known {
    pub(super) ids: CidIds,
    /// Stored length of each id listed as a whole block.
    len: Vec<u64>,
    content: Vec<Content>,
    /// Where each id's links start in `links`, and how many (ids whose
    /// content is [`Content::Links`]).
    link_start: Vec<u32>,
    link_count: Vec<u32>,
    /// Links of listed blocks, as ids.
    links: Vec<u32>,
}

impl Known {
    /// The id of `cid`, with room for what is known of it.
    pub(super) fn id(&mut self, cid: &Cid) -> Result<u32, Error> {
        let id = self.ids.id(cid)?;
        self.grow();
        Ok(id)
    }

    /// The id of the CID whose bytes are `cid`, with room for what is
    /// known of it.
    pub(super) fn id_of_bytes(&mut self, cid: &[u8]) -> Result<u32, Error> {
        let id = self.ids.id_of_bytes(cid)?;
        self.grow();
        Ok(id)
    }

    fn grow(&mut self) {
        let n = self.ids.len();
        if self.len.len() < n {
            self.len.resize(n, 0);
            self.content.resize(n, Content::Unlisted);
            self.link_start.resize(n, 0);
            self.link_count.resize(n, 0);
        }
    }

    /// Notes `id` as listed: `len` bytes stored, what it holds, and its
    /// links (for [`Content::Links`]).
    pub(super) fn list(
        &mut self,
        id: u32,
        len: u64,
        content: Content,
        links: &[u32],
    ) -> Result<(), Error> {
        let i = id as usize;
        self.len[i] = len;
        self.content[i] = content;
        if content == Content::Links {
            let too_many = || Error::Malformed {
                what: "store",
                reason: "a collection kept more than 4,294,967,295 links".into(),
            };
            self.link_start[i] = u32::try_from(self.links.len()).map_err(|_| too_many())?;
            self.link_count[i] = u32::try_from(links.len()).map_err(|_| too_many())?;
            self.links.extend_from_slice(links);
        }
        Ok(())
    }

    /// What listing `id` found.
    pub(super) fn content(&self, id: u32) -> Content {
        self.content[id as usize]
    }

    /// The links of `id`, listed as [`Content::Links`].
    pub(super) fn links(&self, id: u32) -> &[u32] {
        let i = id as usize;
        let start = self.link_start[i] as usize;
        &self.links[start..start + self.link_count[i] as usize]
    }

    /// How many links are kept.
    pub(super) fn links_kept(&self) -> usize {
        self.links.len()
    }

    /// The stored length of `id` if it was listed as a whole block.
    pub(super) fn listed_len(&self, id: u32) -> Option<u64> {
        (self.content[id as usize] != Content::Unlisted).then(|| self.len[id as usize])
    }

    /// How many ids there are.
    pub(super) fn count(&self) -> usize {
        self.ids.len()
    }
}

#[cfg(test)]
mod tests {
    use multihash_codetable::{Code, MultihashDigest};

    use super::*;

    fn cid(i: u32, codec: u64) -> Cid {
        Cid::new_v1(codec, Code::Sha2_256.digest(&i.to_le_bytes()))
    }

    /// Ids against a map from CID to the order of first meeting.
    #[test]
    fn ids_are_the_order_cids_were_first_met() {
        let mut ids = CidIds::default();
        let mut model: std::collections::HashMap<Cid, u32> = std::collections::HashMap::new();
        // Repeats, two codecs and a CIDv0 among 20,000 CIDs.
        let v0 = Cid::new_v0(Code::Sha2_256.digest(b"v0")).unwrap();
        for i in 0..20_000u32 {
            let c = match i % 7 {
                0 => v0,
                1 => cid(i / 2, 0x55),
                _ => cid(i % 5_000, 0x71),
            };
            let next = u32::try_from(model.len()).unwrap();
            let expected = *model.entry(c).or_insert(next);
            assert_eq!(ids.id(&c).unwrap(), expected);
        }
        assert_eq!(ids.len(), model.len());
        for (c, id) in &model {
            assert_eq!(ids.cid(*id).unwrap(), *c);
        }
    }
}
