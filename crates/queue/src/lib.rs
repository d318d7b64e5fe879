//! The queues between a pipeline's inputs and its workers.
//!
//! Inputs push whole batches; workers take batches of up to `pipeline.batch.size` items,
//! waiting at most `pipeline.batch.delay` for a batch to fill. A full queue blocks its
//! writers (back-pressure, never a drop). Closing the queue lets readers drain what is left
//! and then tells them to stop. This crate stores opaque items: it knows nothing of events.
//!
//! - [`memory::MemoryQueue`]: items stay in RAM, bounded by a count. Every lock is taken
//!   once per batch, never per item.

pub mod memory;

pub use memory::{Closed, MemoryQueue};
