//! datarepo's storage.
//!
//! - [`Kv`]: the ordered key/value interface datarepo needs (get, atomic
//!   write, range scan), with [`MemoryKv`] (a `BTreeMap`, for tests) and
//!   [`SlateKv`] (SlateDB on a local directory).
//! - [`Store`]: blocks checked against their CIDs on every write and read,
//!   a decoded-shard cache (it is the persistent [`pail::ShardFetcher`]),
//!   repository heads, the commit log and the record index, and atomic
//!   commits with a compare-and-swap on the head.
//!
//! Every key is built by `keycodec` (see `docs/storage-keys.md`).
//!
//! This crate is not the repository model (see `repo`): it stores bytes
//! under keys and knows nothing of records' contents.

#![warn(clippy::unwrap_used)]

mod bitmap;
mod blobs;
mod block;
mod delta;
mod error;
mod gc;
mod handle_claims;
mod kv;
mod lease;
mod members;
mod partitions;
mod record_counts;
mod shard_cache;
mod store;
mod wal_backlog;
pub use wal_backlog::{MAX_BACKLOG_AGE, MIN_FLUSH_GAP, WAL_REPLAY_BYTES, WAL_REPLAY_LIMIT};

pub use bitmap::{CONTAINER_BITS, ContainerDelta, ContainerError, ContainerGroup, SHORT_LIMIT};
pub use blobs::{
    BlobBytes, BlobError, Blobs, ListedBlob, RAW_CODEC, SNIFF_BYTES, StoredBlob, blob_cid,
};
pub use block::Block;
pub use error::{Conflict, Error};
pub use gc::{GcOptions, GcProgress, GcReport, Retention};
pub use handle_claims::{Claim, HANDLES_PREFIX, HandleClaims, HeldClaim};
pub use kv::interface::{Durability, EngineMetric, EngineMetricValue, Kv, ReadStamp, WriteOp};
pub use kv::location::{Location, S3_PROBE_TIMEOUT};
pub use kv::memory::MemoryKv;
pub use kv::options::{
    DEFAULT_BULK_BATCH_BYTES, DEFAULT_FLUSH_INTERVAL, DEFAULT_L0_SST_SIZE_BYTES,
    DEFAULT_S3_FLUSH_INTERVAL, DEFAULT_SCAN_READ_AHEAD, LOCAL_COMPACTION_POLL,
    LOCAL_METADATA_MIN_AGE, LOCAL_WAL_FENCE_MIN_AGE, MIN_L0_SST_SIZE_BYTES,
    PARTITIONS_BLOCK_CACHE_BYTES, PARTITIONS_META_CACHE_BYTES, SST_BLOCK_BYTES, SharedCache,
    SlateOptions,
};
#[cfg(unix)]
pub use kv::read_socket::{READ_SOCKET, ReadSocket};
pub use kv::reader_manifests::COLLECT_AT as READER_MANIFESTS_COLLECTED_AT;
pub use kv::slate::SlateKv;
pub use lease::{LEASE_OBJECT, Lease, LeaseHolder, LeaseVersion};
pub use members::{MEMBERS_PREFIX, Members};
pub use partitions::{MAX_PARTITIONS, PARTITIONS_OBJECT, Partitions};
pub use record_counts::{record_count_change, record_count_op};
pub use store::commit::{Commit, Head, IndexRow, LogChange, RecordChange, StreamEvents};
pub use store::index_value::INLINE_RECORD_BYTES;
pub use store::merged_events::{MergedEvent, MergedLog};
pub use store::state::{
    AnchorMemo, DEFAULT_DURABILITY_TIMEOUT, DEFAULT_SHARD_CACHE_BYTES, PinWindow, PinnedCommit,
    Store,
};
pub use store::write::PendingCommit;
