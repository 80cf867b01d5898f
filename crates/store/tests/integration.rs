//! The crate's integration tests: one behaviour per file, each file a module
//! of this one test binary (one link instead of one per file).

mod common;

mod blobs_are_stored_under_their_cid;
mod blocks_read_together_match_point_reads;
mod bulk_commit;
mod crash_during_bulk_commits;
mod crash_during_commits;
mod fault_injection;
mod full_disk_names_the_cause;
mod garbage_collection;
mod handles_are_claimed_once;
mod large_writes_are_flushed_at_close;
mod memory_kv_bulk;
mod one_writer_many_readers;
mod partitions_are_chosen_by_hash;
mod read_stamps_change_with_what_reads_see;
mod reader_manifests_are_collected;
mod reads_see_only_durable_commits;
mod reads_through_the_writers_socket;
mod record_index_inline;
mod shard_cache;
mod short_lived_writers;
mod store_semantics;
mod stream_events_are_timed_in_commit_order;
mod superseded_metadata_is_collected_after_30s;
mod wal_backlog_is_bounded;
