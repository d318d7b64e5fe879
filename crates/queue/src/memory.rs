//! A bounded in-memory queue of batches.
//!
//! One mutex guards a `VecDeque`; writers append a whole batch under it (or as much as fits,
//! then wait for room), readers take up to a batch under it. Two condition variables wake
//! readers when items arrive and writers when room appears; each side counts its sleepers so
//! that a push or a read with nobody waiting makes no wake-up system call. [`MemoryQueue::wake_readers`]
//! makes readers waiting on an empty queue return an empty batch (a periodic flush's tick).

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The queue was closed; the items that were not queued are handed back.
#[derive(Debug, PartialEq, Eq)]
pub struct Closed<T>(pub Vec<T>);

struct State<T> {
    items: VecDeque<T>,
    closed: bool,
    /// Readers asleep on `readable`.
    readers_waiting: usize,
    /// Writers asleep on `writable`.
    writers_waiting: usize,
    /// Counts [`MemoryQueue::wake_readers`] calls.
    wakes: u64,
}

pub struct MemoryQueue<T> {
    state: Mutex<State<T>>,
    capacity: usize,
    readable: Condvar,
    writable: Condvar,
}

impl<T> MemoryQueue<T> {
    /// A queue holding at most `capacity` items (at least one).
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        MemoryQueue {
            state: Mutex::new(State {
                items: VecDeque::with_capacity(capacity),
                closed: false,
                readers_waiting: 0,
                writers_waiting: 0,
                wakes: 0,
            }),
            capacity,
            readable: Condvar::new(),
            writable: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // A panic while holding this lock cannot leave the deque half-updated (every
        // mutation is a single std call), so a poisoned lock is still consistent.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Number of items waiting to be read.
    pub fn len(&self) -> usize {
        self.lock().items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends a batch, blocking while the queue is full. Returns the items that could not be
    /// queued if the queue is closed meanwhile.
    pub fn push(&self, batch: Vec<T>) -> Result<(), Closed<T>> {
        let mut rest = batch.into_iter().peekable();
        let mut st = self.lock();
        loop {
            if st.closed {
                return Err(Closed(rest.collect()));
            }
            let room = self.capacity - st.items.len();
            if room > 0 {
                st.items.extend(rest.by_ref().take(room));
                // One reader; it wakes the next if it leaves items behind.
                if st.readers_waiting > 0 {
                    self.readable.notify_one();
                }
                if rest.peek().is_none() {
                    return Ok(());
                }
            }
            st.writers_waiting += 1;
            st = self.writable.wait(st).unwrap_or_else(|p| p.into_inner());
            st.writers_waiting -= 1;
        }
    }

    /// Takes up to `max` items. Blocks until at least one item is there, then waits at most
    /// `delay` for the batch to fill. Returns `None` once the queue is closed and empty.
    pub fn read_batch(&self, max: usize, delay: Duration) -> Option<Vec<T>> {
        let max = max.max(1);
        let mut st = self.lock();
        let wakes = st.wakes;
        while st.items.is_empty() {
            if st.closed {
                return None;
            }
            if st.wakes != wakes {
                return Some(Vec::new());
            }
            st.readers_waiting += 1;
            st = self.readable.wait(st).unwrap_or_else(|p| p.into_inner());
            st.readers_waiting -= 1;
        }
        if st.items.len() < max && !st.closed && !delay.is_zero() {
            let deadline = Instant::now() + delay;
            while st.items.len() < max && !st.closed {
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                st.readers_waiting += 1;
                st = self
                    .readable
                    .wait_timeout(st, deadline - now)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
                st.readers_waiting -= 1;
            }
        }
        let n = st.items.len().min(max);
        let batch: Vec<T> = st.items.drain(..n).collect();
        let wake_writers = st.writers_waiting > 0;
        // Another reader may be waiting for the rest.
        let wake_reader = !st.items.is_empty() && st.readers_waiting > 0;
        drop(st);
        if wake_writers {
            self.writable.notify_all();
        }
        if wake_reader {
            self.readable.notify_one();
        }
        Some(batch)
    }

    /// Readers waiting for items on an empty queue return an empty batch now.
    pub fn wake_readers(&self) {
        let mut st = self.lock();
        st.wakes += 1;
        if st.readers_waiting > 0 {
            self.readable.notify_all();
        }
    }

    /// Stops accepting items. Readers drain what is queued, then get `None`.
    pub fn close(&self) {
        self.lock().closed = true;
        self.readable.notify_all();
        self.writable.notify_all();
    }

    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::thread;

    #[test]
    fn woken_readers_return_an_empty_batch() {
        let q = Arc::new(MemoryQueue::<u32>::new(10));
        let r = {
            let q = q.clone();
            thread::spawn(move || q.read_batch(5, Duration::ZERO))
        };
        while q.lock().readers_waiting == 0 {
            thread::sleep(Duration::from_millis(1));
        }
        q.wake_readers();
        assert_eq!(r.join().unwrap(), Some(vec![]));
        q.push(vec![1]).unwrap();
        assert_eq!(q.read_batch(5, Duration::ZERO), Some(vec![1]));
    }

    #[test]
    fn batches_are_bounded_and_drained_after_close() {
        let q = MemoryQueue::new(10);
        q.push((0..7).collect()).unwrap();
        assert_eq!(
            q.read_batch(5, Duration::ZERO).unwrap(),
            vec![0, 1, 2, 3, 4]
        );
        q.close();
        assert_eq!(q.push(vec![9]), Err(Closed(vec![9])));
        assert_eq!(q.read_batch(5, Duration::from_secs(5)).unwrap(), vec![5, 6]);
        assert_eq!(q.read_batch(5, Duration::ZERO), None);
    }

    #[test]
    fn full_queue_blocks_writer_until_read() {
        let q = Arc::new(MemoryQueue::new(4));
        let w = {
            let q = q.clone();
            thread::spawn(move || q.push((0..10).collect()))
        };
        let mut got = Vec::new();
        while got.len() < 10 {
            got.extend(q.read_batch(3, Duration::from_millis(1)).unwrap());
            assert!(q.len() <= 4);
        }
        w.join().unwrap().unwrap();
        assert_eq!(got, (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn reader_waits_for_delay_to_fill_batch() {
        let q = Arc::new(MemoryQueue::new(100));
        q.push(vec![1]).unwrap();
        let w = {
            let q = q.clone();
            thread::spawn(move || {
                thread::sleep(Duration::from_millis(20));
                q.push(vec![2, 3]).unwrap();
            })
        };
        let b = q.read_batch(3, Duration::from_secs(10)).unwrap();
        assert_eq!(b, vec![1, 2, 3]);
        w.join().unwrap();
    }

    #[test]
    fn close_wakes_blocked_writer_with_its_items() {
        let q = Arc::new(MemoryQueue::new(1));
        q.push(vec![0]).unwrap();
        let w = {
            let q = q.clone();
            thread::spawn(move || q.push(vec![1, 2]))
        };
        thread::sleep(Duration::from_millis(20));
        q.close();
        assert_eq!(w.join().unwrap(), Err(Closed(vec![1, 2])));
    }
}
