//! Output lanes: an output that fails or slows down stalls neither the pipeline's other
//! outputs nor its inputs, and loses nothing.
//!
//! An output given `lane => { type => persisted max_bytes => "4gb" }` is no longer written by
//! the workers. Each worker hands its share of a batch to the lane and goes on; the lane's
//! sender thread writes it to the output, with the output's retries:
//!
//! ```text
//! worker: filters ─▶ other outputs (written here) ─▶ lane.offer(share of the batch)
//!           hand-off has room and nothing is stored? ─ yes ─▶ hand-off (memory, a few batches)
//!                                                    └─ no ──▶ store.push (a queue of its own)
//! sender: hand-off first, then the store ─▶ output.write (retry/back-off) ─▶ store.ack
//! main queue ack: once every output has written the batch, or its lane's store holds it
//! ```
//!
//! While the output keeps up, batches go through the hand-off and are never written to disk.
//! Once the hand-off is full (the output is slower than the workers, or down), new batches go
//! to the store, which is the queue crate again: a persisted queue under
//! `<path.queue>/<pipeline>/lanes/<output id>/` (same pages, checksums, tools), synced before
//! the batch counts as held, or a memory queue bounded in events. While the store holds
//! anything, every new batch goes there too, so the output gets its events in order; once the
//! sender has emptied it, the hand-off takes over again.
//!
//! The main queue acks a batch only when every share is done: written by its output, or held
//! by a store. A batch in the hand-off is not acked until its output has it, so a crash
//! replays it (a persisted main queue) and a store replays what it holds at the next start,
//! before anything new: after a SIGKILL every event reaches every output at least once.
//!
//! A full store blocks the workers (`overflow => block`, the default: back-pressure as without
//! lanes) or drops its oldest events, counted and logged (`overflow => drop_oldest`). At a
//! stop the sender gives up its batch when the output fails, moves what the hand-off holds to
//! the store where it fits, and closes the store: what it holds waits for the next start.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use sluice_config::Value as Ast;
use sluice_event::Event;

use crate::metrics::PluginCounters;
use crate::queue::{EventQueue, MemoryEventQueue, PersistedEventQueue};

/// How long a worker waits for room in a full hand-off before the output counts as not
/// keeping up and new shares go to the store.
const SPILL_AFTER: Duration = Duration::from_millis(250);

/// What `lane => { ... }` asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct LaneSpec {
    pub kind: LaneKind,
    pub overflow: Overflow,
}

#[derive(Debug, Clone, PartialEq)]
pub enum LaneKind {
    /// A persisted queue of `max_bytes`, in pages of `page_capacity`.
    Persisted { max_bytes: u64, page_capacity: u64 },
    /// A memory queue of `max_events` (lost at a stop, said in the log).
    Memory { max_events: usize },
}

/// What a full store does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    /// The workers wait: back-pressure, as without a lane.
    Block,
    /// The store's oldest events are dropped, counted and logged.
    DropOldest,
}

impl LaneSpec {
    /// A persisted lane with the default bounds (1gb in 64mb pages), blocking when full.
    pub fn persisted() -> LaneSpec {
        LaneSpec {
            kind: LaneKind::Persisted {
                max_bytes: 1024 << 20,
                page_capacity: 64 << 20,
            },
            overflow: Overflow::Block,
        }
    }

    /// A memory lane of 10,000 events, blocking when full.
    pub fn memory() -> LaneSpec {
        LaneSpec {
            kind: LaneKind::Memory { max_events: 10_000 },
            overflow: Overflow::Block,
        }
    }

    /// Reads the `lane` option's hash.
    pub fn parse(entries: &[(String, Ast)]) -> Result<LaneSpec, String> {
        let text = crate::options::scalar_text;
        let mut kind = "persisted".to_owned();
        let mut max_bytes = 1024 << 20;
        let mut page_capacity = 64 << 20;
        let mut max_events = 10_000usize;
        let mut overflow = Overflow::Block;
        for (k, v) in entries {
            let t = text(v).ok_or_else(|| format!("{k}: expected a value, not a list or hash"))?;
            match k.as_str() {
                "type" => match t.as_str() {
                    "persisted" | "memory" => kind = t,
                    _ => return Err(format!("type {t:?} is not one of persisted, memory")),
                },
                "max_bytes" => {
                    max_bytes = sluice_config::settings::parse_size(&t)
                        .map_err(|e| format!("max_bytes: {e}"))?
                }
                "page_capacity" => {
                    page_capacity = sluice_config::settings::parse_size(&t)
                        .map_err(|e| format!("page_capacity: {e}"))?
                }
                "max_events" => {
                    max_events = t
                        .parse()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| format!("max_events {t:?} is not a positive number"))?
                }
                "overflow" => {
                    overflow = match t.as_str() {
                        "block" => Overflow::Block,
                        "drop_oldest" => Overflow::DropOldest,
                        _ => {
                            return Err(format!(
                                "overflow {t:?} is not one of block, drop_oldest"
                            ))
                        }
                    }
                }
                _ => return Err(format!("unknown lane setting {k:?} (type, max_bytes, page_capacity, max_events, overflow)")),
            }
        }
        let kind = if kind == "memory" {
            if entries
                .iter()
                .any(|(k, _)| k == "max_bytes" || k == "page_capacity")
            {
                return Err("a memory lane is bounded by max_events, not bytes".to_owned());
            }
            LaneKind::Memory { max_events }
        } else {
            if entries.iter().any(|(k, _)| k == "max_events") {
                return Err("a persisted lane is bounded by max_bytes, not events".to_owned());
            }
            if page_capacity > max_bytes {
                return Err(format!(
                    "page_capacity ({page_capacity} bytes) is larger than max_bytes ({max_bytes} bytes)"
                ));
            }
            LaneKind::Persisted {
                max_bytes,
                page_capacity,
            }
        };
        Ok(LaneSpec { kind, overflow })
    }
}

/// A batch read from the main queue whose shares went to several places: acked there once
/// every share is done.
pub struct PendingAck {
    remaining: AtomicUsize,
    /// The main queue's token; `None` for events that came from no queue (a filter's flush).
    token: Option<u64>,
    queue: Arc<dyn EventQueue>,
    events: u64,
    /// A share was neither written nor held: the batch must not be acked.
    failed: AtomicBool,
    /// Events of batches that were not acked (the pipeline's count).
    given_up: Arc<AtomicU64>,
}

impl PendingAck {
    /// A batch of `events` with one share: the caller's own. [`PendingAck::share`] adds more.
    pub fn new(
        token: Option<u64>,
        queue: Arc<dyn EventQueue>,
        events: u64,
        given_up: Arc<AtomicU64>,
    ) -> PendingAck {
        PendingAck {
            remaining: AtomicUsize::new(1),
            token,
            queue,
            events,
            failed: AtomicBool::new(false),
            given_up,
        }
    }

    fn share(&self) {
        self.remaining.fetch_add(1, Ordering::AcqRel);
    }

    /// One share is written or held.
    pub fn done(&self) {
        if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            if self.failed.load(Ordering::Acquire) {
                self.given_up.fetch_add(self.events, Ordering::Relaxed);
            } else if let Some(token) = self.token {
                self.queue.ack(token);
            }
        }
    }

    /// One share is lost: the batch stays unacked (a persisted main queue replays it).
    pub fn fail(&self) {
        self.failed.store(true, Ordering::Release);
        self.done();
    }
}

/// A batch's events, shared by the outputs' lanes that hold shares of it.
type SharedEvents = Arc<Vec<Event>>;

/// A share of a batch waiting in the hand-off.
struct Handoff {
    /// The worker that offered it: the events go back to it to be freed.
    worker: usize,
    events: Arc<Vec<Event>>,
    picks: Vec<u32>,
    ack: Arc<PendingAck>,
}

#[derive(Default)]
struct State {
    handoff: VecDeque<Handoff>,
    /// Since when the store has held events, or a worker has been putting some there: while
    /// set, new shares go there too.
    spilling: Option<Instant>,
    /// Workers putting shares in the store right now.
    pending: usize,
    /// No more shares will come (the workers are done): the sender empties the lane, then
    /// ends.
    closing: bool,
}

/// Figures of a lane for the monitoring API.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaneFigures {
    pub output_id: String,
    pub kind: &'static str,
    /// Events in the store (not yet written to the output).
    pub queued_events: u64,
    pub queued_bytes: u64,
    pub max_bytes: u64,
    /// Seconds since the oldest stored share was stored (0 when the store is empty).
    pub oldest_age_seconds: u64,
    /// Events the sender wrote to the output.
    pub delivered: u64,
    /// Events that went through the store (the output was not keeping up).
    pub stored: u64,
    /// Events `drop_oldest` dropped.
    pub dropped: u64,
    /// Shares waiting in the hand-off.
    pub handoff_batches: u64,
}

/// One output's lane. Workers call [`Lane::offer`]; one thread runs [`Lane::run_sender`].
pub struct Lane {
    pub output: usize,
    pub output_id: String,
    spec: LaneSpec,
    store: Arc<dyn EventQueue>,
    state: Mutex<State>,
    wake: Condvar,
    /// Shares the hand-off holds before new ones go to the store.
    handoff_capacity: usize,
    batch_size: usize,
    /// Events the sender reads from the store at once (a hand-off's worth).
    read_size: usize,
    /// The output's counters as each sender records them (one writer each).
    pub counters: Box<[PluginCounters]>,
    stored: AtomicU64,
    dropped: AtomicU64,
    drops_logged: Mutex<Option<Instant>>,
    /// Held around "anything unread? then read": the sender and `drop_oldest` both read the
    /// store, and a read of an empty store would wait.
    reading: Mutex<()>,
    /// Set at a stop: the sender hands its batch back and ends.
    stopping: AtomicBool,
    /// Senders still running.
    running: AtomicUsize,
    /// Per worker: written batches' events, for that worker to free.
    spent: Box<[Mutex<Vec<SharedEvents>>]>,
}

impl std::fmt::Debug for Lane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lane")
            .field("output_id", &self.output_id)
            .field("spec", &self.spec)
            .finish_non_exhaustive()
    }
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What the sender's write of a share came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    /// Written (or rejected for good, which the writer logged).
    Done,
    /// Given up at a stop (or the output closed for good): not written.
    GaveUp,
}

impl Lane {
    /// Opens output `output`'s lane: a persisted store under `dir` (required for persisted
    /// lanes), replaying what an earlier run left there first. `durable`: the main queue is
    /// persisted, so a share counts as held only once the store has synced it (else the
    /// store syncs as Logstash's queue does by default: when a page fills, each second, and
    /// at a stop; a memory main queue loses its own events at a crash anyway).
    pub fn open(
        output: usize,
        output_id: &str,
        spec: LaneSpec,
        dir: Option<&std::path::Path>,
        workers: usize,
        batch_size: usize,
        durable: bool,
    ) -> Result<Lane, String> {
        let store: Arc<dyn EventQueue> = match spec.kind {
            LaneKind::Persisted {
                max_bytes,
                page_capacity,
            } => {
                let dir = dir.ok_or_else(|| {
                    format!("output {output_id}: a persisted lane needs the pipeline's queue path")
                })?;
                let cfg = sluice_queue::QueueConfig {
                    page_capacity,
                    max_bytes,
                    checkpoint_writes: if durable { 1 } else { 0 },
                    ..sluice_queue::QueueConfig::default()
                };
                let q = PersistedEventQueue::open(dir, cfg).map_err(|e| {
                    format!(
                        "output {output_id}: opening its lane at {}: {e}",
                        dir.display()
                    )
                })?;
                Arc::new(q)
            }
            LaneKind::Memory { max_events } => Arc::new(MemoryEventQueue::new(max_events)),
        };
        let left = store.figures().unacked_events;
        if left > 0 {
            tracing::info!(output = %output_id, events = left, "the output's lane holds {left} event(s) from an earlier run: they go to the output first");
        }
        Ok(Lane {
            output,
            output_id: output_id.to_owned(),
            spec,
            store,
            state: Mutex::new(State {
                spilling: (left > 0).then(Instant::now),
                ..State::default()
            }),
            wake: Condvar::new(),
            handoff_capacity: workers.max(1) * 2,
            batch_size: batch_size.max(1),
            read_size: batch_size.max(1) * workers.max(1) * 2,
            counters: (0..workers.max(1))
                .map(|_| PluginCounters::default())
                .collect(),
            stored: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            drops_logged: Mutex::new(None),
            reading: Mutex::new(()),
            stopping: AtomicBool::new(false),
            spent: (0..workers.max(1))
                .map(|_| Mutex::new(Vec::new()))
                .collect(),
            running: AtomicUsize::new(workers.max(1)),
        })
    }

    /// A worker's share of a batch (`picks`: indexes into `events`). Returns once the share
    /// is in the hand-off (`ack` then waits for the sender) or held by the store; false when
    /// it could be neither (a stop closed the store): the batch must not be acked.
    pub fn offer(
        &self,
        worker: usize,
        events: &Arc<Vec<Event>>,
        picks: Vec<u32>,
        ack: &Arc<PendingAck>,
    ) -> bool {
        {
            let mut st = lock(&self.state);
            // A full hand-off is waited on for a while: an output that is merely busy takes
            // it soon (back-pressure, as without a lane); one that does not is not keeping up.
            let deadline = Instant::now() + SPILL_AFTER;
            loop {
                if st.spilling.is_none() && st.handoff.len() < self.handoff_capacity {
                    ack.share();
                    st.handoff.push_back(Handoff {
                        worker,
                        events: Arc::clone(events),
                        picks,
                        ack: Arc::clone(ack),
                    });
                    drop(st);
                    self.wake.notify_all();
                    return true;
                }
                let now = Instant::now();
                if st.spilling.is_some() || now >= deadline || self.stopping.load(Ordering::SeqCst)
                {
                    break;
                }
                st = self
                    .wake
                    .wait_timeout(st, deadline - now)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
            st.spilling.get_or_insert_with(Instant::now);
            st.pending += 1;
        }
        let refs: Vec<&Event> = picks.iter().map(|&i| &events[i as usize]).collect();
        let held = self.store_events(&refs);
        lock(&self.state).pending -= 1;
        self.wake.notify_all();
        held
    }

    /// Puts events in the store: blocks while it is full, or drops its oldest events first
    /// (`drop_oldest`). False when the store is closed.
    fn store_events(&self, events: &[&Event]) -> bool {
        let n = events.len() as u64;
        if self.spec.overflow == Overflow::DropOldest {
            self.make_room(n);
        }
        let ok = self.store.push_refs(events).is_ok();
        if ok {
            self.stored.fetch_add(n, Ordering::Relaxed);
        }
        ok
    }

    /// Whether `n` more events (of about the size of the stored ones) fit.
    fn has_room(&self, n: u64) -> bool {
        let f = self.store.figures();
        match self.spec.kind {
            LaneKind::Memory { max_events } => f.unread_events + n <= max_events as u64,
            LaneKind::Persisted { max_bytes, .. } => {
                let per_event = f
                    .size_in_bytes
                    .checked_div(f.unacked_events)
                    .unwrap_or(1024);
                f.size_in_bytes + per_event.max(64) * n < max_bytes
            }
        }
    }

    /// `drop_oldest`: takes the store's oldest unread events and drops them until `n` more
    /// fit.
    fn make_room(&self, n: u64) {
        let mut dropped = 0u64;
        while !self.has_room(n) {
            let _reading = self.reading.lock().unwrap_or_else(|p| p.into_inner());
            if self.store.figures().unread_events == 0 {
                break;
            }
            let Some(batch) = self.store.read_batch(self.batch_size, Duration::ZERO) else {
                break;
            };
            dropped += batch.events.len() as u64;
            self.store.ack(batch.token);
        }
        if dropped > 0 {
            let total = self.dropped.fetch_add(dropped, Ordering::Relaxed) + dropped;
            let mut last = self.drops_logged.lock().unwrap_or_else(|p| p.into_inner());
            if last.is_none_or(|t| t.elapsed() >= Duration::from_secs(10)) {
                *last = Some(Instant::now());
                tracing::warn!(output = %self.output_id, dropped, total, "the output's lane is full: its oldest events were dropped (overflow => drop_oldest)");
            }
        }
    }

    /// No more shares come: the sender empties the lane and ends.
    pub fn close(&self) {
        lock(&self.state).closing = true;
        self.wake.notify_all();
    }

    /// A stop: the sender gives up what it is writing, keeps what fits in the store, and ends.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.wake.notify_all();
    }

    /// The sender thread: writes shares to the output with `write` (which retries as the
    /// workers' writes do), oldest first, until the lane is closed and empty or stopped.
    pub fn run_sender(&self, sender: usize, write: &dyn Fn(&[&Event]) -> Sent) {
        self.sending(sender, write);
        // The last sender to end closes the store: workers blocked on a full store give up
        // their shares (their batches stay unacked), and nothing is read from it any more.
        if self.running.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.store.close_without_drain();
        }
    }

    fn sending(&self, sender: usize, write: &dyn Fn(&[&Event]) -> Sent) {
        loop {
            if self.stopping.load(Ordering::SeqCst) {
                return self.keep_at_stop(Vec::new());
            }
            enum Job {
                /// Everything the hand-off held: written as one batch, so that a sender
                /// whose output costs per call keeps up with several workers.
                Handoff(Vec<Handoff>),
                Store,
            }
            let job = {
                let mut st = lock(&self.state);
                loop {
                    if !st.handoff.is_empty() {
                        // Shares up to a batch's worth of events go out together.
                        let mut shares = Vec::new();
                        let mut events = 0;
                        while let Some(h) = st.handoff.front() {
                            if !shares.is_empty() && events + h.picks.len() > self.batch_size {
                                break;
                            }
                            events += h.picks.len();
                            shares.extend(st.handoff.pop_front());
                        }
                        drop(st);
                        // Workers waiting for room in the hand-off.
                        self.wake.notify_all();
                        break Job::Handoff(shares);
                    }
                    if st.spilling.is_some() {
                        break Job::Store;
                    }
                    if st.closing || self.stopping.load(Ordering::SeqCst) {
                        drop(st);
                        if self.stopping.load(Ordering::SeqCst) {
                            return self.keep_at_stop(Vec::new());
                        }
                        return;
                    }
                    st = self
                        .wake
                        .wait_timeout(st, Duration::from_millis(200))
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
            };
            match job {
                Job::Handoff(shares) => {
                    let refs: Vec<&Event> = shares
                        .iter()
                        .flat_map(|h| h.picks.iter().map(|&i| &h.events[i as usize]))
                        .collect();
                    let sent = self.send(sender, &refs, write);
                    drop(refs);
                    if sent == Sent::Done {
                        for h in shares {
                            h.ack.done();
                            self.give_back(h.worker, h.events);
                        }
                    } else {
                        return self.keep_at_stop(shares);
                    }
                }
                Job::Store => {
                    if self.store.figures().unread_events == 0 {
                        let mut st = lock(&self.state);
                        if st.pending == 0 && self.store.figures().unread_events == 0 {
                            st.spilling = None;
                        } else {
                            // A worker is storing a share: wait for it.
                            let _ = self
                                .wake
                                .wait_timeout(st, Duration::from_millis(20))
                                .unwrap_or_else(|p| p.into_inner());
                        }
                        continue;
                    }
                    let batch = {
                        let _reading = self.reading.lock().unwrap_or_else(|p| p.into_inner());
                        if self.store.figures().unread_events == 0 {
                            continue;
                        }
                        match self.store.read_batch(self.read_size, Duration::ZERO) {
                            Some(b) => b,
                            None => return,
                        }
                    };
                    if batch.events.is_empty() {
                        continue;
                    }
                    let refs: Vec<&Event> = batch.events.iter().collect();
                    if self.send(sender, &refs, write) == Sent::Done {
                        self.store.ack(batch.token);
                    } else {
                        // Not acked: the store replays it at the next start.
                        return self.keep_at_stop(Vec::new());
                    }
                }
            }
        }
    }

    /// Hands a written batch's events back to the worker that offered them: memory is
    /// cheapest to free in the thread that allocated it (see `crate::queue`), and the sender
    /// allocated none of it.
    fn give_back(&self, worker: usize, events: Arc<Vec<Event>>) {
        if let Some(slot) = self.spent.get(worker) {
            slot.lock().unwrap_or_else(|p| p.into_inner()).push(events);
        }
    }

    /// Called by worker `worker` now and then: frees the events the sender handed back.
    pub fn free_spent(&self, worker: usize) {
        if let Some(slot) = self.spent.get(worker) {
            let spent = std::mem::take(&mut *slot.lock().unwrap_or_else(|p| p.into_inner()));
            drop(spent);
        }
    }

    /// How many sender threads the lane has: as many as the pipeline has workers, so that an
    /// output is written with the concurrency it had without a lane.
    pub fn senders(&self) -> usize {
        self.counters.len()
    }

    fn send(&self, sender: usize, events: &[&Event], write: &dyn Fn(&[&Event]) -> Sent) -> Sent {
        let started = Instant::now();
        let sent = write(events);
        let n = events.len() as u64;
        let out = if sent == Sent::Done { n } else { 0 };
        self.counters[sender].record(n, out, started.elapsed());
        sent
    }

    /// At a stop: the share being written (if any) and the hand-off's go to the store where
    /// they fit (else their batches stay unacked), and the store closes.
    fn keep_at_stop(&self, mut shares: Vec<Handoff>) {
        shares.extend(lock(&self.state).handoff.drain(..));
        let mut kept = 0u64;
        let mut lost = 0u64;
        for h in shares {
            let n = h.picks.len() as u64;
            if self.has_room(n) {
                let refs: Vec<&Event> = h.picks.iter().map(|&i| &h.events[i as usize]).collect();
                if self.store.push_refs(&refs).is_ok() {
                    kept += n;
                    h.ack.done();
                    continue;
                }
            }
            lost += n;
            h.ack.fail();
        }
        if kept > 0 {
            self.stored.fetch_add(kept, Ordering::Relaxed);
        }
        if lost > 0 {
            tracing::warn!(output = %self.output_id, events = lost, "stopping: the output's lane has no room for what it was writing; these events stay unacknowledged in the pipeline's queue (a memory queue loses them)");
        }
    }

    /// Called once the sender has ended: a persisted store writes its checkpoint and says
    /// what it keeps for the next start; a memory store says what is lost.
    /// Returns the events a memory lane loses (a persisted one keeps them).
    pub fn shutdown(&self) -> u64 {
        self.store.close_without_drain();
        self.store.shutdown();
        if let LaneKind::Memory { .. } = self.spec.kind {
            let left = self.store.figures().unread_events;
            if left > 0 {
                tracing::error!(output = %self.output_id, events = left, "{left} event(s) in the output's memory lane are lost at this stop (a persisted lane keeps them)");
            }
            return left;
        }
        0
    }

    pub fn figures(&self) -> LaneFigures {
        let f = self.store.figures();
        let (since, handoff) = {
            let st = lock(&self.state);
            (st.spilling, st.handoff.len())
        };
        LaneFigures {
            output_id: self.output_id.clone(),
            kind: match self.spec.kind {
                LaneKind::Persisted { .. } => "persisted",
                LaneKind::Memory { .. } => "memory",
            },
            queued_events: f.unacked_events,
            queued_bytes: f.size_in_bytes,
            max_bytes: match self.spec.kind {
                LaneKind::Persisted { max_bytes, .. } => max_bytes,
                LaneKind::Memory { .. } => 0,
            },
            oldest_age_seconds: match since {
                Some(t) if f.unacked_events > 0 => t.elapsed().as_secs(),
                _ => 0,
            },
            delivered: self.counters.iter().map(|c| c.events_out.get()).sum(),
            stored: self.stored.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
            handoff_batches: handoff as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_config::Number;

    /// `{ k => v ... }` with bareword values (numbers where they parse).
    fn parse(src: &str) -> Result<LaneSpec, String> {
        let words: Vec<&str> = src.split_whitespace().collect();
        let entries: Vec<(String, Ast)> = words
            .chunks(3)
            .map(|kv| {
                assert_eq!(kv[1], "=>");
                let v = match kv[2].parse::<i64>() {
                    Ok(i) => Ast::Number(Number::Int(i)),
                    Err(_) => Ast::String(kv[2].trim_matches('"').to_owned()),
                };
                (kv[0].to_owned(), v)
            })
            .collect();
        LaneSpec::parse(&entries)
    }

    #[test]
    fn lane_options() {
        assert_eq!(
            parse("type => persisted max_bytes => 4gb").unwrap(),
            LaneSpec {
                kind: LaneKind::Persisted {
                    max_bytes: 4 << 30,
                    page_capacity: 64 << 20
                },
                overflow: Overflow::Block
            }
        );
        assert_eq!(
            parse("type => memory max_events => 500 overflow => drop_oldest").unwrap(),
            LaneSpec {
                kind: LaneKind::Memory { max_events: 500 },
                overflow: Overflow::DropOldest
            }
        );
        for (bad, says) in [
            ("type => disk", "not one of persisted, memory"),
            ("overflow => drop_newest", "not one of block, drop_oldest"),
            ("type => memory max_bytes => 1mb", "bounded by max_events"),
            ("max_events => 5", "bounded by max_bytes"),
            (
                "max_bytes => 1mb page_capacity => 2mb",
                "larger than max_bytes",
            ),
            ("size => 1", "unknown lane setting"),
            ("type => memory max_events => 0", "not a positive number"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
