//! The pipeline's view of its queue: push batches of events, read batches, ack them.
//! The memory queue keeps `Event`s as they are; the persisted queue (later) serialises them.

use std::time::Duration;

use sluice_event::Event;
use sluice_queue::MemoryQueue;

use crate::plugin::Stopped;

/// A batch read from the queue, to be acked with its token once the outputs are done.
pub struct ReadBatch {
    pub events: Vec<Event>,
    pub token: u64,
}

pub trait EventQueue: Send + Sync {
    /// Queues a batch, blocking while the queue is full.
    fn push(&self, events: Vec<Event>) -> Result<(), Stopped>;
    /// Takes up to `max` events, waiting at most `delay` for the batch to fill once one event
    /// is there. `None` when the queue is closed and empty.
    fn read_batch(&self, max: usize, delay: Duration) -> Option<ReadBatch>;
    /// The batch's events are done with (every output has them).
    fn ack(&self, token: u64);
    /// No more pushes; readers drain the rest.
    fn close(&self);
    /// Events currently queued (not yet read).
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

pub struct MemoryEventQueue {
    queue: MemoryQueue<Event>,
}

impl MemoryEventQueue {
    pub fn new(capacity: usize) -> Self {
        MemoryEventQueue {
            queue: MemoryQueue::new(capacity),
        }
    }
}

impl EventQueue for MemoryEventQueue {
    fn push(&self, events: Vec<Event>) -> Result<(), Stopped> {
        self.queue.push(events).map_err(|_| Stopped)
    }

    fn read_batch(&self, max: usize, delay: Duration) -> Option<ReadBatch> {
        self.queue
            .read_batch(max, delay)
            .map(|events| ReadBatch { events, token: 0 })
    }

    fn ack(&self, _token: u64) {}

    fn close(&self) {
        self.queue.close();
    }

    fn len(&self) -> usize {
        self.queue.len()
    }
}
