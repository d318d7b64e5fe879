//! The queues between a pipeline's inputs and its workers.
//!
//! Inputs push whole batches; workers take batches of up to `pipeline.batch.size` items,
//! waiting at most `pipeline.batch.delay` for a batch to fill. A full queue blocks its
//! writers (back-pressure, never a drop). This crate stores opaque items or byte records: it
//! knows nothing of events.
//!
//! - [`memory::MemoryQueue`]: items stay in RAM, bounded by a count. Every lock is taken
//!   once per batch, never per item.
//! - [`persisted::PersistedQueue`]: records in append-only page files on disk, acked after
//!   processing, replayed after a crash. The rest of this page is about it.
//! - [`dlq`]: the dead letter queue's segment files (events outputs could not deliver), in
//!   the same record framing, with a writer and a reader of their own.
//!
//! # On disk
//!
//! A queue is one directory (byte layouts in [`mod@format`]):
//! - `page.<N>`: a 32-byte header (magic, version, page number, first sequence; checksummed),
//!   then records back to back, each `crc | length | sequence | payload`, the checksum covering
//!   payload and sequence. The payload is an event (`sluice_event::binary`, first byte
//!   `0x01`) or, under `queue.compression`, a zstd frame holding one ([`compression`]).
//!   Sequences run on without gaps from page to page. A page takes
//!   records until the next one would pass `queue.page_capacity`; a record larger than that
//!   gets a page of its own (stored, never refused after its source was told "done"). The
//!   newest page is the head page, older ones are tail pages.
//! - `checkpoint`: two slots, each a checksummed, generation-numbered list of the pages with,
//!   per page, its record count and byte length (a durable prefix) and its first unacked
//!   record. Rewritten in place, the two slots alternately.
//! - `spare.<N>`: a page whose records were all acked, kept to be written over as the next
//!   page ([`page::reuse_spare`]); at most one, removed at a graceful stop and at start-up.
//! - `.lock`: held by the process that has the queue open ([`storage::lock_dir`]).
//! - `inflight` and `suspects`: which records were being processed when a process died, so
//!   that a record that crashes the process every time is set aside instead of replayed into
//!   the same crash at every start ([`inflight`]; advisory, outside the durability argument).
//!
//! # Limits
//!
//! Sequences and offsets are 64-bit (no wraparound in any queue's life: Vector #19759). A page
//! is at most 4 GiB (`queue.page_capacity`, or the one record larger than it), so a record is
//! too. `queue.max_bytes` bounds the
//! bytes of the page files (headers included, Logstash #14566), `queue.max_events` the unacked
//! events; an empty queue takes any batch, so an event that alone exceeds a limit cannot hang
//! its writer (Logstash #16172).
//!
//! # Data flow
//!
//! [`persisted::writer`]: a push appends its batch to the head page under a short lock (one
//! `write_at`, a copy into the page cache) and publishes it; pushes wait for one sync per
//! `queue.checkpoint.writes` records, which the flusher does for every waiting writer at once.
//! [`persisted::reader`]: workers read batches in sequence order through a
//! [`scan::RecordCursor`] and ack them in any order ([`ackset`]). [`persisted::flusher`]: syncs,
//! then writes the checkpoint, then deletes pages whose records are all acked (or keeps one as
//! a spare).
//!
//! # What is durable when, and what recovery trusts
//!
//! Each rule, and the test that proves it (tests in `tests/` of this crate unless named
//! otherwise; "binary" tests run the real `sluice` in the workspace's `tests/`):
//!
//! 1. A pushed record is in its page file when `push` returns: a killed process loses
//!    nothing. — `model` (kill operations), `killed_process_loses_nothing_pushed`, binary
//!    `sigkill_loses_nothing_and_sigterm_duplicates_nothing`.
//! 2. With `queue.checkpoint.writes = N`, a push returns only with fewer than N records
//!    unsynced: a power loss can take at most the last N - 1 records of returned pushes (N = 0
//!    is no limit, as in Logstash: pages are synced when full, every second, at a stop). One
//!    fsync serves every waiting writer (group commit), so `N = 1` makes every push durable
//!    (Vector #22489: acking the source before the data is durable). — `power_loss_at_every_write_boundary*`,
//!    `group_commit_shares_syncs_among_concurrent_writers`.
//! 3. A page file, its header and its directory entry are synced before any record goes in it
//!    (Logstash #12040: "expected version 2, found 0" after a power loss). — power-loss tests
//!    (every create and directory sync is a crash point), `a_page_whose_creation_never_completed_is_removed_logstash_12040`.
//! 4. A checkpoint vouches only for synced records: the flusher snapshots the page list, syncs
//!    the pages, then writes the snapshot. — power-loss tests.
//! 5. Replacing the checkpoint is atomic: in place, a checkpoint goes into the slot that does
//!    not hold the newest synced one, which stays intact; a new file (first checkpoint, or more
//!    pages than the slots hold) is written whole as `checkpoint.tmp`, synced, renamed, and the
//!    directory synced (Logstash #8218: a checkpoint left 0 bytes long). A checkpoint that only
//!    records acks is not synced (for at most a second): a power loss may return to the synced
//!    one, bringing back acked events (at-least-once), never losing any; the final checkpoint
//!    of a graceful stop, and any that lets a page go, are synced. —
//!    `checkpoint_replacement_survives_a_crash_at_every_step_logstash_8218`, `checkpoint` unit
//!    tests, power-loss tests with acks.
//! 6. A page file is deleted only after a durable checkpoint no longer lists it; a page left
//!    behind by a crash is recognised (below the head page, not listed) and deleted. —
//!    power-loss tests with acks.
//! 7. Freeing acked pages needs no new disk space (the checkpoint is rewritten in place), and
//!    opening a queue needs none either (nothing is created; the last page goes on as the head
//!    page), so a full disk never stalls a queue for good (Logstash #8098, #16389). —
//!    `full_disk_*` tests here, binary `full_disk_*` tests on a small tmpfs.
//! 8. Opening reads the checkpoint (the valid slot with the highest generation), trusts tail
//!    pages as listed without reading them (a large backlog opens in milliseconds: Vector
//!    #26035, #7380), and scans the head page from its durable prefix and every newer page.
//!    What it finds past damage is kept ([`survey`]): a torn tail (nothing intact after it) is
//!    what a crash leaves and is cut off; damaged bytes with intact records after them cost
//!    those records only; a missing page or a gap between pages is loss. Every loss is logged
//!    with its count and sequences and counted in [`QueueStats::lost_events`]. —
//!    `recovery_never_panics_on_damage`, `scan` unit tests, binary corruption matrix.
//! 9. The reader checks every record's checksum and sequence as it reads; a damaged record is
//!    skipped and counted, never retried forever (Vector #18336, #17644). Records whose
//!    source the pushing caller still holds are not read back ([`PersistedQueue::read_batch_with`]):
//!    the caller's copy is what was written. — `scan` unit tests,
//!    `intact_records_around_a_damaged_one_are_delivered`,
//!    `corrupt_record_costs_that_record_only_and_never_stalls_the_reader_vector_18336`.
//! 10. A failed fsync fails the queue: nothing written since the last good sync can be called
//!     durable again. — `failed_fsync_*`.
//!
//! `sluice queue inspect | verify | repair` ([`tools`]) read a directory with the same
//! [`survey`] as start-up. All I/O goes through [`storage::Storage`], byte-level operations
//! only, so that [`sim::SimStorage`] can tear any write, lose any unsynced directory change,
//! fail syncs and fill the disk under everything above.

pub mod ackset;
pub mod checkpoint;
pub mod compression;
pub mod dlq;
pub mod error;
pub mod format;
pub mod inflight;
pub mod memory;
pub mod page;
pub mod persisted;
pub mod recovery;
pub mod repeated;
pub mod scan;
pub mod sim;
pub mod storage;
pub mod survey;
pub mod tools;

pub use compression::Compression;
pub use error::{QueueError, StorageError};
pub use format::RecordBatch;
pub use memory::{Closed, MemoryQueue};
pub use persisted::{Held, PersistedQueue, QueueConfig, QueueStats, RawBatch, Written};
pub use storage::{lock_dir, FsStorage, QueueFile, Storage};
