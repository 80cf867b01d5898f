//! The dag-cbor bytes of a shard, written directly.
//!
//! A shard has one fixed shape, so its canonical dag-cbor encoding is a
//! handful of heads around the entries:
//!
//! ```text
//! a3                          map(3), keys in dag-cbor order (length, then bytes)
//!   67 "entries"  9x/98..     array(n)
//!     82 <text key> <value>   each entry: [key, value]
//!   67 "maxSize"  <uint>
//!   6c "maxKeyLength" <uint>
//! value: d8 2a <bytes 00 ‖ cid>                    a CID (tag 42)
//!      | 81 d8 2a <bytes 00 ‖ link>                [link]
//!      | 82 d8 2a <bytes 00 ‖ link> d8 2a <…data>  [link, data]
//! ```
//!
//! Writing it here (rather than through `serde_ipld_dagcbor`) lets a shard
//! keep every entry's bytes and reuse them unchanged; the test
//! `encoding_matches_serde_ipld_dagcbor` checks that the bytes are exactly
//! what `serde_ipld_dagcbor` produces. Decoding reads this layout in place
//! and accepts the bytes only if re-encoding what it read gives them back;
//! anything else goes through `serde_ipld_dagcbor`, to say what is wrong
//! (a property test checks the two accept exactly the same bytes).

use cid::{Cid, multihash::Multihash};

use crate::value::ShardValue;

pub(crate) const MAJOR_BYTES: u8 = 2;
pub(crate) const MAJOR_TEXT: u8 = 3;
pub(crate) const MAJOR_ARRAY: u8 = 4;
const MAJOR_UINT: u8 = 0;
const TAG_CID: [u8; 2] = [0xd8, 0x2a];

/// Length of a CBOR head whose argument is `n`.
pub(crate) const fn head_len(n: u64) -> usize {
    match n {
        0..=23 => 1,
        24..=0xff => 2,
        0x100..=0xffff => 3,
        0x1_0000..=0xffff_ffff => 5,
        _ => 9,
    }
}

/// Appends the shortest CBOR head for major type `major` and argument `n`.
pub(crate) fn write_head(out: &mut Vec<u8>, major: u8, n: u64) {
    let m = major << 5;
    match n {
        0..=23 => out.push(m | n as u8),
        24..=0xff => out.extend_from_slice(&[m | 24, n as u8]),
        0x100..=0xffff => {
            out.push(m | 25);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(m | 26);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        }
        _ => {
            out.push(m | 27);
            out.extend_from_slice(&n.to_be_bytes());
        }
    }
}

pub(crate) fn write_cid(out: &mut Vec<u8>, cid: &Cid) {
    out.extend_from_slice(&TAG_CID);
    write_head(out, MAJOR_BYTES, cid.encoded_len() as u64 + 1);
    out.push(0);
    // Writing to a Vec cannot fail.
    let _ = cid.write_bytes(&mut *out);
}

pub(crate) fn write_value(out: &mut Vec<u8>, value: &ShardValue) {
    match value {
        ShardValue::Data(cid) => write_cid(out, cid),
        ShardValue::Link(link) => {
            out.push(0x81);
            write_cid(out, link);
        }
        ShardValue::LinkData { link, data } => {
            out.push(0x82);
            write_cid(out, link);
            write_cid(out, data);
        }
    }
}

/// Appends an entry; returns the offset of the key's first byte.
pub(crate) fn write_entry(out: &mut Vec<u8>, key: &str, value: &ShardValue) -> usize {
    out.push(0x82);
    write_head(out, MAJOR_TEXT, key.len() as u64);
    let key_start = out.len();
    out.extend_from_slice(key.as_bytes());
    write_value(out, value);
    key_start
}

const ENTRIES_KEY: &[u8] = b"\x67entries";
const MAX_SIZE_KEY: &[u8] = b"\x67maxSize";
const MAX_KEY_LENGTH_KEY: &[u8] = b"\x6cmaxKeyLength";

/// Bytes before the first entry of a shard with `n` entries.
pub(crate) fn header_len(n: usize) -> usize {
    1 + ENTRIES_KEY.len() + head_len(n as u64)
}

pub(crate) fn write_header(out: &mut Vec<u8>, n: usize) {
    out.push(0xa3);
    out.extend_from_slice(ENTRIES_KEY);
    write_head(out, MAJOR_ARRAY, n as u64);
}

/// Bytes after the last entry.
pub(crate) fn trailer_len(max_size: u64, max_key_length: u64) -> usize {
    MAX_SIZE_KEY.len() + head_len(max_size) + MAX_KEY_LENGTH_KEY.len() + head_len(max_key_length)
}

pub(crate) fn write_trailer(out: &mut Vec<u8>, max_size: u64, max_key_length: u64) {
    out.extend_from_slice(MAX_SIZE_KEY);
    write_head(out, MAJOR_UINT, max_size);
    out.extend_from_slice(MAX_KEY_LENGTH_KEY);
    write_head(out, MAJOR_UINT, max_key_length);
}

/// Reads a CBOR head at `bytes[*pos]` of the given major type; returns its
/// argument. Bounds-checked: `None` on anything else, never a panic.
pub(crate) fn read_head(bytes: &[u8], pos: &mut usize, major: u8) -> Option<u64> {
    let first = *bytes.get(*pos)?;
    if first >> 5 != major {
        return None;
    }
    let info = first & 0x1f;
    let (n, len) = match info {
        0..=23 => (u64::from(info), 1),
        24 => (u64::from(*bytes.get(*pos + 1)?), 2),
        25 => (
            u64::from(u16::from_be_bytes(*bytes.get(*pos + 1..)?.first_chunk()?)),
            3,
        ),
        26 => (
            u64::from(u32::from_be_bytes(*bytes.get(*pos + 1..)?.first_chunk()?)),
            5,
        ),
        27 => (
            u64::from_be_bytes(*bytes.get(*pos + 1..)?.first_chunk()?),
            9,
        ),
        _ => return None,
    };
    *pos += len;
    Some(n)
}

/// Reads the bytes before a shard's first entry; returns the entry count.
pub(crate) fn read_header(bytes: &[u8], pos: &mut usize) -> Option<u64> {
    *pos = 0;
    expect(bytes, pos, &[0xa3])?;
    expect(bytes, pos, ENTRIES_KEY)?;
    read_head(bytes, pos, MAJOR_ARRAY)
}

/// Reads an entry `[key, value]` at `bytes[*pos]`.
pub(crate) fn read_entry<'a>(bytes: &'a [u8], pos: &mut usize) -> Option<(&'a str, ShardValue)> {
    if *bytes.get(*pos)? != 0x82 {
        return None;
    }
    *pos += 1;
    let len = usize::try_from(read_head(bytes, pos, MAJOR_TEXT)?).ok()?;
    let key = bytes.get(*pos..pos.checked_add(len)?)?;
    *pos += len;
    let key = std::str::from_utf8(key).ok()?;
    Some((key, read_value(bytes, pos)?))
}

/// Reads the bytes after a shard's last entry, which must end `bytes`;
/// returns (`maxSize`, `maxKeyLength`).
pub(crate) fn read_trailer(bytes: &[u8], mut pos: usize) -> Option<(u64, u64)> {
    expect(bytes, &mut pos, MAX_SIZE_KEY)?;
    let max_size = read_head(bytes, &mut pos, MAJOR_UINT)?;
    expect(bytes, &mut pos, MAX_KEY_LENGTH_KEY)?;
    let max_key_length = read_head(bytes, &mut pos, MAJOR_UINT)?;
    (pos == bytes.len()).then_some((max_size, max_key_length))
}

/// Skips `expected` at `bytes[*pos]`, if it is there.
fn expect(bytes: &[u8], pos: &mut usize, expected: &[u8]) -> Option<()> {
    let end = pos.checked_add(expected.len())?;
    (bytes.get(*pos..end)? == expected).then(|| *pos = end)
}

/// Reads a CID link at `bytes[*pos]`.
pub(crate) fn read_cid(bytes: &[u8], pos: &mut usize) -> Option<Cid> {
    if bytes.get(*pos..*pos + 2)? != TAG_CID {
        return None;
    }
    *pos += 2;
    let n = usize::try_from(read_head(bytes, pos, MAJOR_BYTES)?).ok()?;
    let raw = bytes.get(*pos..pos.checked_add(n)?)?;
    *pos += n;
    let (&zero, cid_bytes) = raw.split_first()?;
    if zero != 0 {
        return None;
    }
    // Fast path for the common shape: CIDv1, one-byte codec, sha2-256.
    if let [0x01, codec, 0x12, 0x20, digest @ ..] = cid_bytes
        && *codec < 0x80
        && digest.len() == 32
    {
        return Multihash::wrap(0x12, digest)
            .ok()
            .map(|mh| Cid::new_v1(u64::from(*codec), mh));
    }
    Cid::try_from(cid_bytes).ok()
}

/// Reads an entry value at `bytes[*pos]`.
pub(crate) fn read_value(bytes: &[u8], pos: &mut usize) -> Option<ShardValue> {
    match *bytes.get(*pos)? {
        0x81 => {
            *pos += 1;
            read_cid(bytes, pos).map(ShardValue::Link)
        }
        0x82 => {
            *pos += 1;
            let link = read_cid(bytes, pos)?;
            let data = read_cid(bytes, pos)?;
            Some(ShardValue::LinkData { link, data })
        }
        _ => read_cid(bytes, pos).map(ShardValue::Data),
    }
}

/// Skips a CID link at `bytes[*pos]` without parsing it.
fn skip_cid(bytes: &[u8], pos: &mut usize) -> Option<()> {
    *pos += 2;
    let n = usize::try_from(read_head(bytes, pos, MAJOR_BYTES)?).ok()?;
    *pos += n;
    Some(())
}

/// The user data of the entry value at `bytes[pos]`, parsing only it.
pub(crate) fn read_data(bytes: &[u8], mut pos: usize) -> Option<Cid> {
    match *bytes.get(pos)? {
        0x81 => None,
        0x82 => {
            pos += 1;
            skip_cid(bytes, &mut pos)?;
            read_cid(bytes, &mut pos)
        }
        _ => read_cid(bytes, &mut pos),
    }
}

/// The shard link of the entry value at `bytes[pos]`, parsing only it.
pub(crate) fn read_link(bytes: &[u8], mut pos: usize) -> Option<Cid> {
    match *bytes.get(pos)? {
        0x81 | 0x82 => {
            pos += 1;
            read_cid(bytes, &mut pos)
        }
        _ => None,
    }
}
