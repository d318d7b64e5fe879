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
//!   processing, replayed after a crash. The formats are specified in [`format`]; how a
//!   directory is reopened after a crash in [`recovery`]; the concurrency and durability
//!   argument in [`persisted`]. All I/O goes through [`storage::Storage`], so that
//!   [`sim::SimStorage`] can simulate torn writes, failed syncs, full disks and power loss.

pub mod ackset;
pub mod format;
pub mod memory;
pub mod persisted;
pub mod recovery;
pub mod sim;
pub mod storage;
pub mod tools;

pub use format::RecordBatch;
pub use memory::{Closed, MemoryQueue};
pub use persisted::{PersistedQueue, QueueConfig, QueueError, QueueStats, RawBatch};
pub use storage::{lock_dir, FsStorage, Storage};
