//! The pipeline's view of its queue: push batches of events, read batches, ack them.
//! The memory queue keeps `Event`s as they are; the persisted queue serialises each event
//! with `sluice_event::binary` in the pushing input's thread (compressing it there under
//! `queue.compression`) and decodes in the reading worker's thread, so neither happens under
//! a queue lock. A reader that keeps up skips the decoding: the queue holds the events it
//! has just written, a memory queue's worth, and hands them over by sequence (see `Held`).
//!
//! Events are freed where they were made when that is cheap to arrange: a queue marks each
//! pushed event with its thread's number, a worker of a pipeline without filters hands the
//! queue its finished events ([`EventQueue::recycle`]), and the thread that pushed them frees
//! them at its next push (a persisted queue's decoded events are the worker's own). A network
//! input parses on its runtime's threads but pushes from tokio's blocking pool: it pushes
//! with [`push_for`] the parsing thread's number, and that thread frees its events
//! ([`EventQueue::free_spent`]) before it parses more. An
//! allocator frees memory from another thread through a slow path, and the memory then has to
//! move back to the allocating core; for an input that makes events as fast as it can, that
//! was a third of its time
//! (`crates/plugins/examples/decode_bench.rs`). With filters, most of an event's memory is
//! allocated by the worker (grok's fields, geoip's...), so the worker frees it.

use std::time::Duration;

use sluice_event::{Event, FieldRef, Value};
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use sluice_queue::{MemoryQueue, PersistedQueue, QueueError, RecordBatch};

use crate::plugin::Stopped;

/// A batch read from the queue, to be acked with its token once the outputs are done.
pub struct ReadBatch {
    pub events: Vec<Event>,
    pub token: u64,
    /// The batch is one event that was being processed when the process died, twice: to be
    /// set aside (dead letter queue, or a logged skip) and acked, not processed. Its sequence.
    pub poison: Option<u64>,
}

/// What the monitoring API shows about a queue.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueFigures {
    /// `memory` or `persisted`.
    pub kind: &'static str,
    /// Events queued and not yet taken by a worker.
    pub unread_events: u64,
    /// Events not yet acked (taken by a worker or not); persisted queues only.
    pub unacked_events: u64,
    /// Bytes of the queue's page files (persisted queues).
    pub size_in_bytes: u64,
    /// `queue.max_bytes` (persisted queues).
    pub max_size_in_bytes: u64,
    /// `queue.max_events` (0 = unlimited).
    pub max_unread_events: u64,
    /// `queue.page_capacity` (persisted queues).
    pub page_capacity_in_bytes: u64,
    /// The queue's directory (persisted queues).
    pub path: Option<std::path::PathBuf>,
    /// Events lost to damaged or missing queue files since start (persisted queues).
    pub lost_events: u64,
}

pub trait EventQueue: Send + Sync {
    /// Queues a batch, blocking while the queue is full.
    fn push(&self, events: Vec<Event>) -> Result<(), Stopped>;
    /// Queues copies of events another owner keeps (an output lane's store): a persisted
    /// queue encodes them without copying.
    fn push_refs(&self, events: &[&Event]) -> Result<(), Stopped> {
        self.push(events.iter().map(|e| (*e).clone()).collect())
    }
    /// Takes up to `max` events, waiting at most `delay` for the batch to fill once one event
    /// is there. `None` when the queue is closed and empty.
    fn read_batch(&self, max: usize, delay: Duration) -> Option<ReadBatch>;
    /// The batch's events are done with (every output has them).
    fn ack(&self, token: u64);
    /// A worker is done with these events (after [`EventQueue::ack`]); they are freed here
    /// or, by the memory queue, in the next input thread that pushes.
    fn recycle(&self, events: Vec<Event>) {
        drop(events);
    }
    /// Frees the finished events made by the thread numbered `origin` ([`thread_origin`]):
    /// called on that thread by an input that pushes from another ([`push_for`]).
    fn free_spent(&self, origin: u16) {
        let _ = origin;
    }
    /// No more pushes; readers drain the rest.
    fn close(&self);
    /// Readers waiting on an empty queue return an empty batch now (nothing to ack): the
    /// tick of the periodic flush, so that idle workers flush their filters too.
    fn wake_readers(&self) {}
    /// No more pushes, and readers stop without draining (a persisted queue keeps what is
    /// left, even with `queue.drain`): the pipeline stopped delivering.
    fn close_without_drain(&self) {
        self.close();
    }
    /// Called once the workers are done: a persisted queue syncs and writes its final
    /// checkpoint here.
    fn shutdown(&self) {}
    /// Events currently queued (not yet read).
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Figures for the monitoring API (cheap: a short lock, no I/O).
    fn figures(&self) -> QueueFigures {
        let n = self.len() as u64;
        QueueFigures {
            kind: "memory",
            unread_events: n,
            unacked_events: n,
            ..QueueFigures::default()
        }
    }
}

/// Where a queue puts each event's replay-safe identity (see [`ReplayIds`]).
pub const REPLAY_SAFE_ID_FIELD: &str = "[@metadata][replay_safe_id]";

/// Replay-safe ids: `<queue id>-<sequence>` in `[@metadata][replay_safe_id]` of every event
/// read that has none yet (one that came from another pipeline keeps the id it got there).
/// A persisted queue's id is random, made once and kept in `<queue dir>/queue_id`, and an
/// event's sequence is its place in the queue, so an event replayed after a crash gets the id
/// it had before: `document_id => "%{[@metadata][replay_safe_id]}"` then overwrites instead
/// of duplicating. (The random part keeps a queue started afresh from reusing the ids of an
/// earlier one.) A memory queue, which replays nothing, numbers events from a random id made
/// at start. Filters that create events derive theirs from their parent's (see
/// [`crate::graph::FilterChain`]). Only done when the config refers to the field: it costs a
/// string per event.
pub struct ReplayIds {
    prefix: String,
    field: FieldRef,
    /// The next number, for a memory queue.
    next: AtomicU64,
}

impl ReplayIds {
    fn new(prefix: String) -> ReplayIds {
        ReplayIds {
            prefix,
            field: FieldRef::parse(REPLAY_SAFE_ID_FIELD).expect("a valid field reference"),
            next: AtomicU64::new(0),
        }
    }

    /// With a random id, for a memory queue.
    pub fn random() -> ReplayIds {
        ReplayIds::new(format!("{:016x}", crate::random_u64()))
    }

    /// With the id kept in `<dir>/queue_id` (made when missing), for a persisted queue.
    pub fn for_dir(dir: &std::path::Path) -> std::io::Result<ReplayIds> {
        let path = dir.join("queue_id");
        let id = match std::fs::read_to_string(&path) {
            Ok(t) if t.trim().len() == 16 && t.trim().bytes().all(|b| b.is_ascii_hexdigit()) => {
                t.trim().to_owned()
            }
            Ok(_) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!(
                        "{} does not hold a queue id (16 hex digits); it names the ids of \
                         replay_safe_id: restore it, or remove it to start new ids",
                        path.display()
                    ),
                ))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let id = format!("{:016x}", crate::random_u64());
                crate::replace_file(&path, format!("{id}\n").as_bytes())?;
                id
            }
            Err(e) => return Err(e),
        };
        Ok(ReplayIds::new(id))
    }

    /// Gives `event` the id of sequence `seq`, unless it has one.
    fn stamp(&self, event: &mut Event, seq: u64) {
        if event.get(&self.field).is_none() {
            let id = format!("{}-{seq}", self.prefix);
            event.set(&self.field, Value::String(id.into()));
        }
    }

    /// Numbers a batch read from a memory queue.
    fn stamp_all(&self, events: &mut [Event]) {
        let first = self.next.fetch_add(events.len() as u64, Ordering::Relaxed);
        for (i, e) in events.iter_mut().enumerate() {
            self.stamp(e, first + i as u64);
        }
    }
}

/// This thread's number, which the events it pushes carry (so that they come back to it to
/// be freed). Threads that push into several memory queues get one number for all of them.
pub fn thread_origin() -> u16 {
    static NEXT: AtomicU16 = AtomicU16::new(0);
    thread_local! {
        static ORIGIN: u16 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    ORIGIN.with(|o| *o)
}

thread_local! {
    /// Set while [`push_for`] pushes on behalf of another thread.
    static PUSHING_FOR: std::cell::Cell<Option<u16>> = const { std::cell::Cell::new(None) };
}

/// Runs `push` (a push into a queue) with its events marked as made by the thread numbered
/// `origin` rather than this one: a network input parses events on its runtime's threads and
/// pushes them from tokio's blocking pool, and the events should go back to where they were
/// made. That thread frees them with [`EventQueue::free_spent`]; the push does not.
pub fn push_for<R>(origin: u16, push: impl FnOnce() -> R) -> R {
    /// Puts back what was there, even if `push` panics: a blocking-pool thread outlives a
    /// panicking task, and its later pushes must be its own again.
    struct Restore(Option<u16>);
    impl Drop for Restore {
        fn drop(&mut self) {
            PUSHING_FOR.with(|p| p.set(self.0));
        }
    }
    let _restore = Restore(PUSHING_FOR.with(|p| p.replace(Some(origin))));
    push()
}

/// The number a push marks its events with, and whether this thread frees its own finished
/// events at the push (not when pushing for another thread).
fn push_origin() -> (u16, bool) {
    match PUSHING_FOR.with(|p| p.get()) {
        Some(origin) => (origin, false),
        None => (thread_origin(), true),
    }
}

/// Finished events waiting for their pushing threads; threads share a bin when more than
/// this many push into one queue.
const BINS: usize = 16;

/// The fewest finished events a memory queue keeps for their pushing threads, whatever its
/// own capacity: an input that pushes windows larger than the queue (a beats client's 2,048
/// events; 4,096 leaves room for two) gets them all back. Kept to the queue's capacity, most
/// of each window was freed by the workers instead (beats: 1.79 → 2.24 µs of CPU per event).
const SPENT_AT_LEAST: usize = 4096;

pub struct MemoryEventQueue {
    queue: MemoryQueue<Event>,
    spent: Spent,
    ids: Option<ReplayIds>,
}

/// Finished events waiting to be freed by the threads that made them (see the module docs).
struct Spent {
    /// Finished events by the number of the thread that pushed them (modulo [`BINS`]).
    bins: [Bin; BINS],
    /// Events in all bins: at most `capacity` (beyond that a worker frees its own), so idle
    /// inputs hold back at most what a queue itself could hold.
    events: AtomicUsize,
    capacity: usize,
}

#[derive(Default)]
struct Bin {
    batches: Mutex<Vec<Vec<Event>>>,
    /// Whether `batches` has anything: lets a push skip the lock.
    full: AtomicBool,
}

impl MemoryEventQueue {
    pub fn new(capacity: usize) -> Self {
        MemoryEventQueue {
            queue: MemoryQueue::new(capacity),
            spent: Spent::new(capacity.max(SPENT_AT_LEAST)),
            ids: None,
        }
    }

    /// Gives events replay-safe ids as they are read (see [`ReplayIds`]).
    pub fn with_replay_safe_ids(mut self) -> Self {
        self.ids = Some(ReplayIds::random());
        self
    }
}

/// The origin of events a worker made itself (decoded from a persisted queue's records): it
/// frees them.
const WORKER_MADE: u16 = u16::MAX;

impl Spent {
    fn new(capacity: usize) -> Self {
        Spent {
            bins: Default::default(),
            events: AtomicUsize::new(0),
            capacity,
        }
    }

    /// Takes the finished events of the threads sharing `origin`'s bin.
    fn take(&self, origin: u16) -> Vec<Vec<Event>> {
        let bin = &self.bins[origin as usize % BINS];
        if !bin.full.load(Ordering::Relaxed) {
            return Vec::new();
        }
        let taken = {
            let mut batches = bin.batches.lock().unwrap_or_else(|p| p.into_inner());
            bin.full.store(false, Ordering::Relaxed);
            std::mem::take(&mut *batches)
        };
        let n: usize = taken.iter().map(Vec::len).sum();
        self.events.fetch_sub(n, Ordering::Relaxed);
        taken
    }

    fn keep(&self, origin: u16, events: Vec<Event>) {
        if origin == WORKER_MADE {
            return; // dropped here, by the worker that made them
        }
        let n = events.len();
        let reserved = self
            .events
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
                (held + n <= self.capacity).then_some(held + n)
            });
        if reserved.is_err() {
            return; // dropped here, by the worker
        }
        let bin = &self.bins[origin as usize % BINS];
        bin.batches
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(events);
        bin.full.store(true, Ordering::Relaxed);
    }

    /// Sorts finished events into the bins of the threads that pushed them.
    fn recycle(&self, mut events: Vec<Event>) {
        while let Some(origin) = events.first().map(Event::origin) {
            // Usually the whole batch came from one push.
            let same = events.iter().take_while(|e| e.origin() == origin).count();
            if same == events.len() {
                self.keep(origin, events);
                return;
            }
            let rest = events.split_off(same);
            self.keep(origin, std::mem::replace(&mut events, rest));
        }
    }
}

impl EventQueue for MemoryEventQueue {
    fn push(&self, mut events: Vec<Event>) -> Result<(), Stopped> {
        let (origin, frees) = push_origin();
        for e in &mut events {
            e.set_origin(origin);
        }
        let result = self.queue.push(events).map_err(|_| Stopped);
        // This thread's finished events are freed here, outside any lock.
        if frees {
            self.free_spent(origin);
        }
        result
    }

    fn free_spent(&self, origin: u16) {
        drop(self.spent.take(origin));
    }

    fn recycle(&self, events: Vec<Event>) {
        self.spent.recycle(events);
    }

    fn read_batch(&self, max: usize, delay: Duration) -> Option<ReadBatch> {
        let mut events = self.queue.read_batch(max, delay)?;
        if let Some(ids) = &self.ids {
            ids.stamp_all(&mut events);
        }
        Some(ReadBatch {
            events,
            token: 0,
            poison: None,
        })
    }

    fn ack(&self, _token: u64) {}

    fn close(&self) {
        self.queue.close();
    }

    fn wake_readers(&self) {
        self.queue.wake_readers();
    }

    fn len(&self) -> usize {
        self.queue.len()
    }
}

/// Events a persisted queue has written and no reader has taken yet, kept as they were pushed
/// so that a reader that keeps up takes them instead of reading and decoding their records.
/// Bounded, as a memory queue is: once `limit` events are held, pushes keep none until readers
/// catch up, and readers read and decode what was not kept. Only ever a shortcut: every event
/// is in the page file (written, synced and acked as any) whether it is held or not, and a
/// restart reads the file.
struct Held {
    /// By sequence, ascending.
    events: std::collections::VecDeque<HeldEvent>,
    limit: usize,
}

struct HeldEvent {
    seq: u64,
    /// The page its record is in, and where the record ends: where the reader goes on.
    page: u64,
    end: u64,
    event: Event,
}

impl Held {
    /// Answers the queue's reader at `(page, seq)` (see [`PersistedQueue::read_batch_with`]):
    /// moves up to `max` held events from `seq` on, in sequence and on that page, to `out`.
    /// Events before `seq` are of records already read (or lost to damage): dropped.
    fn take(
        &mut self,
        page: u64,
        seq: u64,
        max: u64,
        out: &mut Vec<(u64, Event)>,
    ) -> sluice_queue::Held {
        let stale = self.events.partition_point(|h| h.seq < seq);
        self.events.drain(..stale);
        let mut answer = sluice_queue::Held::default();
        while let Some(h) = self.events.front() {
            if h.page != page || h.seq != seq + answer.taken || answer.taken == max {
                break;
            }
            let h = self.events.pop_front().expect("front exists");
            answer.taken += 1;
            answer.end = h.end;
            out.push((h.seq, h.event));
        }
        if answer.taken == 0 {
            answer.next = self
                .events
                .front()
                .filter(|h| h.page == page)
                .map(|h| h.seq);
        }
        answer
    }
}

/// Events on disk through [`PersistedQueue`].
pub struct PersistedEventQueue {
    queue: Arc<PersistedQueue>,
    /// Held until shutdown: no other process (or reloaded pipeline) opens the directory.
    lock: std::sync::Mutex<Option<std::fs::File>>,
    /// Largest record the queue holds (4 GiB; a record larger than a page gets a page of its
    /// own).
    max_record: usize,
    rejected: AtomicU64,
    dir: std::path::PathBuf,
    ids: Option<ReplayIds>,
    /// zstd level of `queue.compression`, when records are compressed.
    level: Option<i32>,
    held: Mutex<Held>,
    /// Held events handed to readers go back to their pushing thread to be freed.
    spent: Spent,
    /// The mean record size of the last push, headers included: the room the next push's
    /// records get up front ([`record_room`]).
    record_len: AtomicUsize,
}

/// Room for `events` records of `mean` bytes and an eighth more (at least 256 bytes each, as
/// a first push gets; at most 8 MiB up front): a batch that outgrows its vector copies all
/// it holds, a 125-event batch of Apache lines about 32 KB at each push.
fn record_room(events: usize, mean: usize) -> usize {
    events.saturating_mul(mean.max(256) + mean / 8).min(8 << 20)
}

impl PersistedEventQueue {
    /// Opens (recovering) the queue in `dir`, taking its lock file.
    pub fn open(dir: &std::path::Path, cfg: sluice_queue::QueueConfig) -> Result<Self, QueueError> {
        let io = |action: &str| {
            let (location, action) = (dir.display().to_string(), action.to_owned());
            move |e| QueueError::Storage {
                location,
                source: sluice_queue::StorageError::new(action, e),
            }
        };
        let lock = sluice_queue::lock_dir(dir).map_err(io("locking the queue directory"))?;
        let storage = Arc::new(
            sluice_queue::FsStorage::new(dir).map_err(io("creating the queue directory"))?,
        );
        let max_record = sluice_queue::persisted::writer::MAX_RECORD;
        let level = cfg.compression.level();
        let queue = PersistedQueue::open(storage, cfg)?;
        Ok(PersistedEventQueue {
            queue,
            lock: std::sync::Mutex::new(Some(lock)),
            max_record,
            rejected: AtomicU64::new(0),
            dir: dir.to_path_buf(),
            ids: None,
            level,
            held: Mutex::new(Held {
                events: Default::default(),
                limit: 0,
            }),
            spent: Spent::new(0),
            record_len: AtomicUsize::new(0),
        })
    }

    /// Keeps up to `events` written events in memory for readers that keep up (see
    /// [`Held`]); none by default.
    pub fn hold_events(mut self, events: usize) -> Self {
        self.held.get_mut().unwrap_or_else(|p| p.into_inner()).limit = events;
        self.spent = Spent::new(events);
        self
    }

    /// Gives events replay-safe ids as they are read (see [`ReplayIds`]); the queue's id is
    /// kept in its directory.
    pub fn with_replay_safe_ids(mut self) -> std::io::Result<Self> {
        self.ids = Some(ReplayIds::for_dir(&self.dir)?);
        Ok(self)
    }

    pub fn queue(&self) -> &Arc<PersistedQueue> {
        &self.queue
    }

    /// An empty batch with room for `events` records of the last push's mean size.
    fn new_batch(&self, events: usize) -> RecordBatch {
        let room = record_room(events, self.record_len.load(Ordering::Relaxed));
        RecordBatch::with_capacity(room, events)
    }

    /// Keeps `batch`'s mean record size for the next push's room.
    fn note_sizes(&self, batch: &RecordBatch) {
        if !batch.is_empty() {
            self.record_len
                .store(batch.bytes() / batch.len(), Ordering::Relaxed);
        }
    }

    /// Events refused because they were larger than a page.
    pub fn rejected(&self) -> u64 {
        self.rejected.load(Ordering::Relaxed)
    }
}

impl EventQueue for PersistedEventQueue {
    fn push(&self, events: Vec<Event>) -> Result<(), Stopped> {
        let mut batch = self.new_batch(events.len());
        // The events written, in the batch's order, for `held`.
        let mut kept = Vec::with_capacity(events.len());
        let (origin, frees) = push_origin();
        for mut e in events {
            e.set_origin(origin);
            batch.push_with(|buf| {
                let start = buf.len();
                sluice_event::binary::encode(&e, buf);
                if let Some(level) = self.level {
                    sluice_queue::compression::compress_tail(buf, start, level);
                }
            });
            let i = batch.len() - 1;
            if batch.record_size(i) > self.max_record {
                let size = batch.record_size(i);
                batch.truncate(i);
                self.rejected.fetch_add(1, Ordering::Relaxed);
                tracing::error!(
                    size,
                    page_capacity = self.queue.config().page_capacity,
                    "event dropped: it is larger than the 4 GiB a queue record can hold"
                );
            } else {
                kept.push(e);
            }
        }
        self.note_sizes(&batch);
        let mut kept = kept.into_iter();
        // Not kept for readers: dropped after the push, outside the queue's locks.
        let mut unheld: Vec<Event> = Vec::new();
        let pushed =
            self.queue.push_with(&mut batch, &mut |run| {
                let n = run.records.len();
                let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
                let room = held.limit.saturating_sub(held.events.len()).min(n);
                let kept_now = run.ends[..room].iter().zip(kept.by_ref());
                let page = run.page;
                held.events
                    .extend((run.first_seq..).zip(kept_now).map(|(seq, (&end, event))| {
                        HeldEvent {
                            seq,
                            page,
                            end,
                            event,
                        }
                    }));
                drop(held);
                unheld.extend(kept.by_ref().take(n - room));
            });
        drop(unheld);
        // This thread's finished events are freed here, outside any lock.
        if frees {
            self.free_spent(origin);
        }
        match pushed {
            Ok(()) => Ok(()),
            Err(QueueError::Closed) => Err(Stopped),
            Err(e) => {
                tracing::error!(error = %e, "persisted queue refused a batch; stopping the input");
                Err(Stopped)
            }
        }
    }

    fn push_refs(&self, events: &[&Event]) -> Result<(), Stopped> {
        let mut batch = self.new_batch(events.len());
        for e in events {
            batch.push_with(|buf| {
                let start = buf.len();
                sluice_event::binary::encode(e, buf);
                if let Some(level) = self.level {
                    sluice_queue::compression::compress_tail(buf, start, level);
                }
            });
            let i = batch.len() - 1;
            if batch.record_size(i) > self.max_record {
                batch.truncate(i);
                self.rejected.fetch_add(1, Ordering::Relaxed);
                tracing::error!(
                    "event dropped: it is larger than the 4 GiB a queue record can hold"
                );
            }
        }
        self.note_sizes(&batch);
        match self.queue.push_with(&mut batch, &mut |_| {}) {
            Ok(()) => Ok(()),
            Err(QueueError::Closed) => Err(Stopped),
            Err(e) => {
                tracing::error!(error = %e, "persisted queue refused a batch");
                Err(Stopped)
            }
        }
    }

    fn read_batch(&self, max: usize, delay: Duration) -> Option<ReadBatch> {
        let mut taken: Vec<(u64, Event)> = Vec::new();
        let raw = self
            .queue
            .read_batch_with(max, delay, &mut |page, seq, max| {
                taken.clear();
                let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
                held.take(page, seq, max, &mut taken)
            })?;
        let mut events = Vec::with_capacity(raw.held as usize + raw.records.len());
        if raw.held > 0 {
            // Held events: no record was read for them.
            debug_assert_eq!(taken.len() as u64, raw.held);
            for (seq, mut e) in taken {
                if let Some(ids) = &self.ids {
                    ids.stamp(&mut e, seq);
                }
                events.push(e);
            }
        } else {
            // Events taken for a batch the queue then read from its page instead (only if
            // their word did not fit the page): the records are decoded below.
            drop(taken);
        }
        // The batch's records mostly share their keys: one decoder reuses them.
        let mut decoder = sluice_event::binary::Decoder::new();
        for (i, r) in raw.records.iter().enumerate() {
            let seq = raw.first_seq + raw.held + i as u64;
            // Decoded onto the end of `events`, where it stays (see `Decoder::decode_into`).
            let decoded =
                sluice_queue::compression::with_plain(&raw.data[r.clone()], |p| match p {
                    Ok(plain) => decoder
                        .decode_into(plain, &mut events)
                        .map_err(|e| e.to_string()),
                    Err(e) => Err(e.to_string()),
                });
            match decoded {
                Ok(()) => {
                    let e = events.last_mut().expect("decoded onto the end");
                    e.set_origin(WORKER_MADE);
                    if let Some(ids) = &self.ids {
                        ids.stamp(e, seq);
                    }
                }
                Err(err) => tracing::error!(
                    sequence = seq,
                    error = %err,
                    "queued event cannot be decoded; skipping it"
                ),
            }
        }
        Some(ReadBatch {
            events,
            token: raw.token,
            poison: raw.poison.then_some(raw.first_seq),
        })
    }

    fn ack(&self, token: u64) {
        self.queue.ack(token);
    }

    fn recycle(&self, events: Vec<Event>) {
        self.spent.recycle(events);
    }

    fn free_spent(&self, origin: u16) {
        drop(self.spent.take(origin));
    }

    fn close(&self) {
        self.queue.close();
    }

    fn wake_readers(&self) {
        self.queue.wake_readers();
    }

    fn close_without_drain(&self) {
        self.queue.close_without_drain();
    }

    fn shutdown(&self) {
        self.queue.shutdown();
        let left = self.queue.stats().unacked_events;
        if left > 0 {
            tracing::warn!(
                queue = %self.dir.display(),
                events = left,
                "{left} event(s) stay in the persisted queue at {}; the next start processes them (or set queue.drain: true to process everything before stopping)",
                self.dir.display()
            );
        }
        // The directory is free for the next owner (a reloaded pipeline) from here on.
        self.lock.lock().unwrap_or_else(|p| p.into_inner()).take();
    }

    fn len(&self) -> usize {
        self.queue.stats().unacked_events as usize
    }

    fn figures(&self) -> QueueFigures {
        let st = self.queue.stats();
        let cfg = self.queue.config();
        QueueFigures {
            kind: "persisted",
            unread_events: st.unread_events,
            unacked_events: st.unacked_events,
            size_in_bytes: st.used_bytes,
            max_size_in_bytes: cfg.max_bytes,
            max_unread_events: cfg.max_events,
            page_capacity_in_bytes: cfg.page_capacity,
            path: Some(self.dir.clone()),
            lost_events: st.lost_events,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_ids_keep_the_queue_id_and_an_event_keeps_its_own() {
        let dir = std::env::temp_dir().join(format!("sluice-replay-ids-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let a = ReplayIds::for_dir(&dir).unwrap();
        let b = ReplayIds::for_dir(&dir).unwrap();
        assert_eq!(a.prefix, b.prefix);
        assert_eq!(a.prefix.len(), 16);
        assert_ne!(a.prefix, ReplayIds::random().prefix);
        let mut e = Event::new();
        a.stamp(&mut e, 42);
        let id = format!("{}-42", a.prefix);
        assert_eq!(e.get(&a.field).and_then(Value::as_str), Some(id.as_str()));
        // From another pipeline: the id it has stays.
        let other = ReplayIds::random();
        other.stamp(&mut e, 7);
        assert_eq!(e.get(&a.field).and_then(Value::as_str), Some(id.as_str()));
        std::fs::write(dir.join("queue_id"), "not an id\n").unwrap();
        let err = ReplayIds::for_dir(&dir).err().unwrap().to_string();
        assert!(err.contains("does not hold a queue id"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A push's records get room for the last push's mean size and an eighth more, 256 bytes
    /// a record before any push, and never more than 8 MiB up front.
    #[test]
    fn record_room_follows_the_last_mean_within_bounds() {
        assert_eq!(record_room(125, 0), 125 * 256);
        assert_eq!(record_room(125, 300), 125 * (300 + 37));
        assert!(record_room(125, 300) >= 125 * 300);
        assert_eq!(record_room(1000, 1 << 20), 8 << 20);
        assert_eq!(record_room(0, 300), 0);
    }

    /// A push made for another thread ([`push_for`], as a network input's blocking-pool push)
    /// marks the events as that thread's, leaves that thread's finished events alone, and
    /// they go back to it: its [`EventQueue::free_spent`] frees them.
    #[test]
    fn events_pushed_for_another_thread_go_back_to_it() {
        let q = Arc::new(MemoryEventQueue::new(2));
        let maker = thread_origin();
        let push_elsewhere = |n: usize| {
            let q = q.clone();
            std::thread::spawn(move || {
                push_for(maker, || q.push((0..n).map(|_| Event::new()).collect()))
            })
            .join()
            .unwrap()
            .unwrap();
        };
        // Larger than the queue's capacity: a window comes back whole.
        let window = 300;
        let reader = {
            let q = q.clone();
            std::thread::spawn(move || {
                let mut got = 0;
                while got < window {
                    let batch = q.read_batch(window, Duration::from_millis(10)).unwrap();
                    assert!(batch.events.iter().all(|e| e.origin() == maker));
                    got += batch.events.len();
                    q.ack(batch.token);
                    q.recycle(batch.events);
                }
            })
        };
        push_elsewhere(window);
        reader.join().unwrap();
        assert_eq!(held(&q), window);
        // Another push for the maker frees nothing of its.
        push_elsewhere(1);
        assert_eq!(held(&q), window);
        // The maker frees them.
        q.free_spent(maker);
        assert_eq!(held(&q), 0);
        // A push that panics still leaves the thread pushing for itself afterwards.
        let caught =
            std::panic::catch_unwind(|| push_for(maker.wrapping_add(1), || panic!("in a push")));
        assert!(caught.is_err());
        assert_eq!(push_origin(), (thread_origin(), true));
        // Outside `push_for`, a push marks its events with the pushing thread.
        q.push(vec![Event::new()]).unwrap();
        let batch = q.read_batch(2, Duration::ZERO).unwrap();
        assert_eq!(batch.events.len(), 2);
        assert!(batch.events.iter().all(|e| e.origin() == maker));
    }

    fn held_seqs(q: &PersistedEventQueue) -> Vec<u64> {
        q.held
            .lock()
            .unwrap()
            .events
            .iter()
            .map(|h| h.seq)
            .collect()
    }

    #[test]
    fn a_persisted_queue_hands_readers_the_events_it_holds_and_decodes_the_rest() {
        let dir = std::env::temp_dir().join(format!("sluice-held-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cfg = sluice_queue::QueueConfig {
            // A few events per page, so that a push spans pages.
            page_capacity: 400,
            ..Default::default()
        };
        let q = PersistedEventQueue::open(&dir, cfg)
            .unwrap()
            .hold_events(4)
            .with_replay_safe_ids()
            .unwrap();
        let made = |range: std::ops::Range<usize>| -> Vec<Event> {
            range
                .map(|i| {
                    let mut e = Event::with_message(format!("event {i}"));
                    e.set(
                        &FieldRef::parse("[nested][n]").unwrap(),
                        Value::Int(i as i64),
                    );
                    e
                })
                .collect()
        };
        let mut expected = made(0..10);
        q.push(expected.clone()).unwrap();
        // The first four are held; the other six are only in the page files.
        assert_eq!(held_seqs(&q), vec![0, 1, 2, 3]);
        let mut read = Vec::new();
        while read.len() < 10 {
            let batch = q.read_batch(3, Duration::ZERO).unwrap();
            q.ack(batch.token);
            read.extend(batch.events);
        }
        assert!(held_seqs(&q).is_empty());
        let id = |e: &Event| {
            e.get(&FieldRef::parse(REPLAY_SAFE_ID_FIELD).unwrap())
                .and_then(Value::as_str)
                .map(|s| s.rsplit('-').next().unwrap().to_owned())
        };
        for (i, (got, want)) in read.iter().zip(&mut expected).enumerate() {
            assert_eq!(
                id(got),
                Some(i.to_string()),
                "held or decoded, ids follow sequences"
            );
            want.set(
                &FieldRef::parse(REPLAY_SAFE_ID_FIELD).unwrap(),
                got.get(&FieldRef::parse(REPLAY_SAFE_ID_FIELD).unwrap())
                    .unwrap()
                    .clone(),
            );
        }
        assert_eq!(read, expected);
        // Held events go back to this thread to be freed at its next push; decoded ones are
        // freed by the worker that made them.
        q.recycle(read);
        assert_eq!(q.spent.events.load(Ordering::Relaxed), 4);
        // Readers caught up: the next push is held again.
        let mut expected = made(10..12);
        q.push(expected.clone()).unwrap();
        assert_eq!(held_seqs(&q), vec![10, 11]);
        assert_eq!(q.spent.events.load(Ordering::Relaxed), 0);
        let batch = q.read_batch(10, Duration::ZERO).unwrap();
        for (i, e) in expected.iter_mut().enumerate() {
            q.ids.as_ref().unwrap().stamp(e, 10 + i as u64);
        }
        assert_eq!(batch.events, expected);
        q.ack(batch.token);
        q.close();
        q.shutdown();
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A held event's record is not read back: with the page's bytes overwritten after the
    /// push, the held events still come out whole, while the records that were not held are
    /// found damaged (skipped and counted), which proves the reader reads those.
    #[test]
    fn records_of_held_events_are_skipped_not_read() {
        let dir = std::env::temp_dir().join(format!("sluice-held-skip-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let q = PersistedEventQueue::open(&dir, sluice_queue::QueueConfig::default())
            .unwrap()
            .hold_events(3);
        let pushed: Vec<Event> = (0..5)
            .map(|i| Event::with_message(format!("event {i}")))
            .collect();
        q.push(pushed.clone()).unwrap();
        assert_eq!(held_seqs(&q), vec![0, 1, 2]);
        // Every record's bytes after the page header become garbage.
        let storage = sluice_queue::FsStorage::new(&dir).unwrap();
        let first = sluice_queue::page::list_pages(&storage).unwrap()[0];
        let page = dir.join(sluice_queue::page::page_name(first));
        let len = std::fs::metadata(&page).unwrap().len() as usize;
        let header = sluice_queue::format::PAGE_HEADER_LEN;
        let f = std::fs::OpenOptions::new().write(true).open(&page).unwrap();
        std::os::unix::fs::FileExt::write_all_at(&f, &vec![0xa5; len - header], header as u64)
            .unwrap();
        let held = q.read_batch(10, Duration::ZERO).unwrap();
        assert_eq!(held.events, pushed[..3]);
        q.ack(held.token);
        // Two more, held: the reader reads (and loses) the two damaged records before them.
        let more: Vec<Event> = (5..7)
            .map(|i| Event::with_message(format!("event {i}")))
            .collect();
        q.push(more.clone()).unwrap();
        assert_eq!(held_seqs(&q), vec![5, 6]);
        let rest = q.read_batch(10, Duration::ZERO).unwrap();
        assert_eq!(rest.events, more);
        assert_eq!(
            q.figures().lost_events,
            2,
            "the overwritten records are lost"
        );
        q.ack(rest.token);
        q.close();
        q.shutdown();
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Events as this thread would have pushed them.
    fn mine(n: usize) -> Vec<Event> {
        (0..n)
            .map(|i| {
                let mut e = Event::with_message(i.to_string());
                e.set_origin(thread_origin());
                e
            })
            .collect()
    }

    /// Events held for freeing, checked against the bins' contents.
    fn held(q: &MemoryEventQueue) -> usize {
        let held = q.spent.events.load(Ordering::Relaxed);
        let binned: usize = q
            .spent
            .bins
            .iter()
            .map(|b| {
                b.batches
                    .lock()
                    .unwrap()
                    .iter()
                    .map(Vec::len)
                    .sum::<usize>()
            })
            .sum();
        assert_eq!(held, binned);
        held
    }

    /// Pushes `n` events from a new thread whose bin is not this thread's; returns its origin.
    fn push_from_another_thread(q: &MemoryEventQueue, n: usize) -> u16 {
        let me = thread_origin() as usize % BINS;
        loop {
            let pushed = std::thread::scope(|s| {
                s.spawn(|| {
                    let o = thread_origin();
                    (o as usize % BINS != me).then(|| {
                        q.push(mine(n)).unwrap();
                        o
                    })
                })
                .join()
                .unwrap()
            });
            if let Some(o) = pushed {
                return o;
            }
        }
    }

    #[test]
    fn finished_events_are_freed_by_their_thread_and_bounded_by_capacity() {
        let q = MemoryEventQueue::new(10);
        q.push(mine(4)).unwrap();
        let batch = q.read_batch(10, Duration::ZERO).unwrap();
        assert_eq!(batch.events.len(), 4);
        assert!(batch.events.iter().all(|e| e.origin() == thread_origin()));
        q.ack(batch.token);
        q.recycle(batch.events);
        assert_eq!(held(&q), 4);
        // Beyond the queue's capacity, or SPENT_AT_LEAST if more, a worker frees its own.
        let room = SPENT_AT_LEAST - 4;
        q.recycle(mine(room + 1));
        assert_eq!(held(&q), 4);
        q.recycle(mine(room));
        assert_eq!(held(&q), SPENT_AT_LEAST);
        // Another thread's push leaves them; this thread's next push takes them all.
        push_from_another_thread(&q, 1);
        assert_eq!(held(&q), SPENT_AT_LEAST);
        q.push(mine(1)).unwrap();
        assert_eq!(held(&q), 0);
        assert_eq!(q.len(), 2);
    }

    #[test]
    fn a_mixed_batch_goes_back_to_each_pushing_thread() {
        let q = MemoryEventQueue::new(100);
        let other = push_from_another_thread(&q, 3);
        q.push(mine(2)).unwrap();
        let batch = q.read_batch(100, Duration::ZERO).unwrap();
        let origins: Vec<u16> = batch.events.iter().map(Event::origin).collect();
        let me = thread_origin();
        assert_eq!(origins, vec![other, other, other, me, me]);
        q.recycle(batch.events);
        assert_eq!(held(&q), 5);
        q.push(mine(1)).unwrap();
        assert_eq!(
            held(&q),
            3,
            "this thread frees its own two, not the other thread's three"
        );
    }
}
