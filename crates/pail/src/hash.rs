//! SHA-256 of shard bytes that resumes from a prefix shared with an older
//! version of the shard.
//!
//! A shard keeps SHA-256's state after every [`MARK_STRIDE`] bytes of its
//! encoding (its *marks*). A new version that begins with the same bytes as
//! the shard it replaces is hashed from the last mark inside that shared
//! prefix instead of from byte 0. That is the common case of a commit: every
//! shard above the changed key keeps its entry count and changes only the
//! link to the child below it, so only the bytes from that link on are new
//! (a shard's entry count is in its first bytes, so a shard that gains or
//! loses an entry is hashed whole). The digest is SHA-256 of the whole
//! encoding either way; marks only save work.

use sha2::{
    Digest, Sha256,
    digest::{
        array::Array,
        block_api::{Buffer, CoreProxy, UpdateCore},
    },
};

/// Bytes between two marks: a multiple of SHA-256's 64-byte block. Smaller
/// means less re-hashed per commit and more memory per shard (a mark is 40
/// bytes, so 512 adds 8% to a shard's bytes); see `docs/pail.md`.
pub(crate) const MARK_STRIDE: usize = 512;

const _: () = assert!(MARK_STRIDE.is_multiple_of(64) && MARK_STRIDE > 0);

/// SHA-256's block-level state: what it has absorbed of whole blocks.
type Core = <Sha256 as CoreProxy>::Core;

/// SHA-256 states of a shard's encoding: `states[i]` is the state after its
/// first `(i + 1) * MARK_STRIDE` bytes.
#[derive(Clone, Default)]
pub(crate) struct Marks {
    states: Box<[Core]>,
}

/// A shard version's bytes hashed, and the marks to hash its successors.
pub(crate) struct Hashed {
    pub(crate) digest: [u8; 32],
    pub(crate) marks: Marks,
}

/// SHA-256 of `bytes`, marked every [`MARK_STRIDE`] bytes.
///
/// With `base = Some((old_bytes, old_marks))`, where `old_marks` are the
/// marks of `old_bytes`, hashing starts at the last mark of `old_bytes`
/// whose bytes so far equal those of `bytes`.
pub(crate) fn sha256(bytes: &[u8], base: Option<(&[u8], &Marks)>) -> Hashed {
    let mut states = Vec::with_capacity(bytes.len() / MARK_STRIDE);
    let mut core = Core::default();
    if let Some((old, old_marks)) = base {
        // Marks whose prefix `bytes` shares, stride by stride.
        let shared = old_marks
            .states
            .iter()
            .zip(
                old.chunks_exact(MARK_STRIDE)
                    .zip(bytes.chunks_exact(MARK_STRIDE)),
            )
            .take_while(|(_, (a, b))| a == b)
            .count();
        if let Some(last) = shared.checked_sub(1) {
            states.extend_from_slice(&old_marks.states[..shared]);
            core = old_marks.states[last].clone();
        }
    }
    let mut chunks = bytes[states.len() * MARK_STRIDE..].chunks_exact(MARK_STRIDE);
    for chunk in &mut chunks {
        let (blocks, rest) = chunk.as_chunks::<64>();
        debug_assert!(rest.is_empty());
        core.update_blocks(Array::cast_slice_from_core(blocks));
        states.push(core.clone());
    }
    let mut tail = Sha256::compose(core, Buffer::<Core>::default());
    tail.update(chunks.remainder());
    Hashed {
        digest: tail.finalize().into(),
        marks: Marks {
            states: states.into_boxed_slice(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn plain(bytes: &[u8]) -> [u8; 32] {
        Sha256::digest(bytes).into()
    }

    #[test]
    fn equals_sha256_at_every_length_around_strides() {
        let data: Vec<u8> = (0..4 * MARK_STRIDE + 130)
            .map(|i| (i * 7 + 3) as u8)
            .collect();
        for len in 0..data.len() {
            let h = sha256(&data[..len], None);
            assert_eq!(h.digest, plain(&data[..len]), "length {len}");
            assert_eq!(h.marks.states.len(), len / MARK_STRIDE);
        }
    }

    proptest! {
        /// A version hashed from its base's marks equals SHA-256 of its
        /// bytes, wherever the two versions first differ, whatever their
        /// lengths; and its own marks then hash its successor right.
        #[test]
        fn resumed_equals_sha256(
            base in proptest::collection::vec(any::<u8>(), 0..6 * MARK_STRIDE),
            edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0..3usize), 1..4),
        ) {
            let mut version = base.clone();
            let mut marks = sha256(&version, None).marks;
            for (at, byte, kind) in edits {
                let old = version.clone();
                let i = if version.is_empty() { 0 } else { at.index(version.len()) };
                match kind {
                    0 if !version.is_empty() => version[i] ^= byte | 1,
                    1 => version.insert(i, byte),
                    _ if !version.is_empty() => { version.truncate(i); }
                    _ => version.push(byte),
                }
                let h = sha256(&version, Some((&old, &marks)));
                prop_assert_eq!(h.digest, plain(&version));
                prop_assert_eq!(h.marks.states.len(), version.len() / MARK_STRIDE);
                marks = h.marks;
            }
        }
    }
}
