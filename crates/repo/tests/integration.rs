//! The crate's integration tests: one behaviour per file, each file a module
//! of this one test binary (one link instead of one per file).
//! Tests that measure the process's allocations stay binaries of their own.

mod common;

mod blob_references_vs_model;
mod blobs_are_collected;
mod car_export_import;
mod check_finds_damage;
mod check_finds_damaged_sliced_rows;
mod check_finds_unsigned_commits_in_a_signed_history;
mod collecting_beside_a_commit_leaves_no_dangling_reference;
mod counts_and_histories_across_upgrades_and_imports;
mod crash_with_shard_deltas;
mod datetime_index_covers_the_whole_calendar;
mod deleting_a_repository_leaves_no_key;
mod event_frames;
mod export_order;
mod export_survives_gc;
mod gc_keeps_blocks_written_again;
mod group_commit;
mod history_vs_model;
mod import_checks_records;
mod import_checks_signatures;
mod import_in_batches;
mod import_interrupted_before_rebuild;
mod import_keeps_to_the_data_model;
mod import_rebuilds_indexes;
mod import_refuses_unusable_revs;
mod increments_need_the_records_they_leave_out;
mod index_add_on_a_handle_an_import_left_behind;
mod index_build_survives_gc;
mod index_built_beside_writes;
mod index_catch_up_holds_writers_briefly;
mod index_changes_reach_other_handles;
mod index_crash;
mod index_queries_vs_model;
mod lexicon_add_refuses_contradictions;
mod no_shard_limit;
mod pages_span_column_windows;
mod pin_window_holds_off_collection;
mod reader_queries_follow_the_writer;
mod record_encoding_boundaries;
mod records_refer_to_blobs_they_hold;
mod records_vs_atproto;
mod shard_blocks_for_readers;
mod shard_deltas;
mod signatures_vs_atproto_crypto;
mod signed_commit_format;
mod signed_repositories;
mod stream_events_follow_the_writes;
mod verify_finds_tampering;
mod writes_and_reads;
mod writes_meet_lexicons_added_meanwhile;
